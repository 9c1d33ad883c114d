"""JSON Schema of the contract models, for editor autocompletion and external validation."""

from __future__ import annotations

from typing import Any

from lakelogic.contract.models import Contract

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
    return schema
