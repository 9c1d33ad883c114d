"""The exported JSON Schema describes the models (editor autocompletion)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakelogic.contract.models import OP_NAMES
from lakelogic.contract.schema import contract_json_schema


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["$defs"][ref.split("/")[-1]] if ref else node


def test_schema_shape() -> None:
    schema = contract_json_schema()
    json.dumps(schema)  # serialisable
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"version", "info", "model"}
    assert "pattern" in schema["properties"]["version"]
    assert schema["properties"]["extensions"]["additionalProperties"] is False


def test_schema_closed_sets_and_ops() -> None:
    schema = contract_json_schema()
    defs = schema["$defs"]
    assert defs["Materialization"]["properties"]["strategy"]["enum"] == [
        "append",
        "overwrite",
        "merge",
        "scd2",
    ]
    assert defs["Transformation"]["additionalProperties"] is False
    assert set(OP_NAMES) | {"phase"} == set(defs["Transformation"]["properties"])
    assert sorted(r["required"][0] for r in defs["Transformation"]["oneOf"]) == sorted(OP_NAMES)
    rename = defs["TransformationRename"]["properties"]
    assert "from" in rename and "from_" not in rename
    events = defs["Notification"]["properties"]["on_events"]["items"]["enum"]
    assert "quarantine" in events and "sla_breach" in events


def test_schema_top_level_keys_match_the_olc_schema(shared_dir: Path) -> None:
    olc = json.loads((shared_dir / "olc" / "schema" / "open-lakehouse-contract.schema.json").read_text())
    ours = contract_json_schema()
    assert set(olc["properties"]) == set(ours["properties"])


# OLC $defs whose model has another name here.
_RENAMED = {
    "FieldDefinition": "ModelField",
    "SourceConfig": "Source",
    "StrictServer": "Server",
    "ServiceLevel": "ServiceLevels",
    "RetryConfig": "Retry",
    "ConfidenceConfig": "Confidence",
    "ExtractionConfig": "Extraction",
    "LineageConfig": "Lineage",
    "PreprocessingConfig": "Preprocessing",
    "PostIngestionConfig": "PostIngestion",
    "DltSourceConfig": "DltSource",
    "DltEndpointConfig": "DltEndpoint",
    "FactConfig": "Fact",
    "ForeignKeyRef": "ForeignKey",
    "TransformationBucketBin": "BucketBin",
}
_ROW_OPTIONS = {"name", "description", "category", "severity", "phase"}
_DATASET_OPTIONS = {"description", "category", "severity"}


def _expected_difference(name: str) -> tuple[set[str], set[str]]:
    """(OLC-only keys, our-only keys) we intend: aliases are accepted but not advertised; §1.5 options."""
    if name.startswith("RowRule"):
        return set(), _ROW_OPTIONS
    if name.startswith("DatasetRule"):
        return set(), _DATASET_OPTIONS
    aliases = {"TransformationDeduplicate": {"by"}, "TransformationPivot": {"pivot_values"}}
    aliases["TransformationUnpivot"] = {"value_cols"}
    return aliases.get(name, set()), set()


def test_every_olc_block_has_every_key(shared_dir: Path) -> None:
    olc = json.loads((shared_dir / "olc" / "schema" / "open-lakehouse-contract.schema.json").read_text())
    ours = contract_json_schema()["$defs"]
    for name, spec in olc["$defs"].items():
        model = _RENAMED.get(name, name)
        assert model in ours, f"no model for OLC block {name}"
        theirs, mine = set(spec.get("properties", {})), set(ours[model].get("properties", {}))
        assert (theirs - mine, mine - theirs) == _expected_difference(name), name


def test_schema_accepts_shorthand_options_inside_and_single_column_strings() -> None:
    defs = contract_json_schema()["$defs"]
    assert {"name", "severity", "phase"} <= set(defs["RegexMatchSpec"]["properties"])
    assert {"description", "category", "severity"} <= set(defs["NullRatioSpec"]["properties"])
    unique_forms = defs["DatasetRuleUnique"]["properties"]["unique"]["anyOf"]
    assert [f["type"] for f in unique_forms] == ["string", "array", "object"]
    select_columns = defs["TransformationSelect"]["properties"]["columns"]["anyOf"]
    assert [f["type"] for f in select_columns] == ["string", "array"]
