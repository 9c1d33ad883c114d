"""JSON Schema of the contract models, for editor autocompletion and external validation."""

from __future__ import annotations

from typing import Any

from lakelogic.contract.models import DATASET_SHORTHANDS, OP_NAMES, ROW_SHORTHANDS, Contract

SCHEMA_ID = "https://lakelogic.org/open-lakehouse-contract/v1/lakelogic.schema.json"


def contract_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :class:`~lakelogic.contract.models.Contract` as YAML is written.

    Keys appear under their YAML names (``from`` for rename); aliases the loader accepts are not
    listed, so editors suggest the canonical spelling.
    """
    schema = Contract.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "Open Lakehouse Contract v1 (LakeLogic)"
    # Vendor keys must be namespaced (SEMANTICS §1.2): reject others, not just describe them.
    schema["properties"]["extensions"]["additionalProperties"] = False
    _allow_options_inside_shorthands(schema)
    # Exactly one op key per transformation item (besides `phase`), as the loader enforces.
    schema["$defs"]["Transformation"]["oneOf"] = [{"required": [op]} for op in OP_NAMES]
    return schema


def _allow_options_inside_shorthands(schema: dict[str, Any]) -> None:
    """Shorthand options may also be written inside the shorthand object (SEMANTICS §1.5.1).

    The models move them out before validation, so the parameter models do not list them; the
    exported schema adds them so editors accept both placements.
    """
    defs = schema["$defs"]
    for kind, shorthands in (("RowRule", ROW_SHORTHANDS), ("DatasetRule", DATASET_SHORTHANDS)):
        for key, model in shorthands.items():
            outer = defs.get(model.__name__)
            if outer is None:
                continue
            options = {k: outer["properties"][k] for k in model.OPTIONS if k in outer["properties"]}
            body = outer["properties"].get(key, {})
            ref = body.get("$ref")
            if ref:  # parameters are one model: list the options there too
                inner = defs[ref.rsplit("/", 1)[-1]]
                inner["properties"] = {**inner["properties"], **options}
            elif kind == "RowRule" and key == "not_null":
                continue  # NotNullItem already carries its own options
