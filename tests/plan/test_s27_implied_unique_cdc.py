"""The uniqueness rule `primary_key` implies on a CDC source (SEMANTICS §3.5, §10.5).

A CDC batch may hold several events for one key (applied in `cdc_timestamp_field` order), so the implied
rule is over key + `cdc_timestamp_field`: two events of one key at one time are still a duplicate.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.builders import compile_doc, contract_doc, dataset_rules

FIELDS = [
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "op", "type": "string"},
    {"name": "ts", "type": "timestamp"},
]


def _cdc_doc(strategy: str = "merge", **source: Any) -> dict[str, Any]:
    return contract_doc(
        model={"fields": FIELDS},
        primary_key=["id"],
        source={
            "type": "landing",
            "path": "unused",
            "load_mode": "cdc",
            "cdc_op_field": "op",
            "cdc_delete_values": ["D"],
            "cdc_timestamp_field": "ts",
            **source,
        },
        materialization={"strategy": strategy},
    )


def _unique_columns(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    rules = dataset_rules(compile_doc(doc))
    return [r.columns for r in rules.values() if r.yaml_path == "primary_key"]


@pytest.mark.parametrize("strategy", ["merge", "append", "scd2"])
def test_a_cdc_source_makes_the_implied_rule_key_plus_the_cdc_time(strategy: str) -> None:
    rules = dataset_rules(compile_doc(_cdc_doc(strategy)))
    rule = rules["id_ts_unique"]
    assert rule.columns == ("id", "ts") and rule.unique_columns == ("id", "ts")
    assert rule.generated_name == "id_ts_unique" and rule.yaml_path == "primary_key"
    assert "id_unique" not in rules


def test_the_scd2_timestamp_field_still_wins_over_the_cdc_time() -> None:
    doc = _cdc_doc("scd2")
    doc["model"]["fields"].append({"name": "changed_at", "type": "timestamp"})
    doc["materialization"]["scd2"] = {"timestamp_field": "changed_at"}
    assert _unique_columns(doc) == [("id", "changed_at")]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"load_mode": "incremental"}, ("id",)),  # not a CDC source: one row per key
        ({"cdc_timestamp_field": None}, ("id",)),  # no event order: several events are an error (§3.5)
        ({"cdc_timestamp_field": "not_a_column"}, ("id",)),  # never reaches the good frame
        ({"cdc_timestamp_field": "id"}, ("id",)),  # already part of the key
    ],
)
def test_the_key_alone_without_a_usable_cdc_time(change: dict[str, Any], expected: tuple[str, ...]) -> None:
    doc = _cdc_doc()
    doc["source"].update(change)
    assert _unique_columns(doc) == [expected]


def test_a_cdc_time_created_by_an_op_counts() -> None:
    doc = _cdc_doc(cdc_timestamp_field="event_ts")
    doc["transformations"] = [{"derive": {"field": "event_ts", "sql": "ts"}, "phase": "pre"}]
    assert _unique_columns(doc) == [("id", "event_ts")]


def test_an_explicit_rule_over_key_and_cdc_time_replaces_the_implied_one() -> None:
    doc = _cdc_doc()
    doc["quality"] = {"dataset_rules": [{"unique": ["ts", "id"], "name": "mine", "severity": "warning"}]}
    assert list(dataset_rules(compile_doc(doc))) == ["mine"]


@pytest.mark.spark
def test_several_cdc_events_of_one_key_merge_and_the_run_succeeds(spark: Any, tmp_path: Any) -> None:
    """The audit's reproduction: two events of one key, merged to the latest, and the run is not `partial`
    (which would gate downstream contracts); two events of one key at one time are still a duplicate."""
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    doc = _cdc_doc()
    target = tmp_path / "silver" / "cust"
    doc["materialization"]["target_path"] = str(target)
    schema = "id int, name string, op string, ts string"
    batch = spark.createDataFrame(
        [(1, "a", "I", "2024-01-01 00:00:00"), (1, "a2", "U", "2024-01-02 00:00:00")], schema
    )
    result = DataProcessor(doc, spark=spark).run(batch, materialize=True)
    report = result.report
    assert report.status == "succeeded", (report.error, [d.model_dump() for d in report.dataset_rules])
    [rule] = report.dataset_rules
    assert (rule.name, rule.passed, rule.observed) == ("id_ts_unique", True, 0)
    rows = DeltaTable(str(target)).to_pyarrow_table().to_pylist()
    assert [(r["id"], r["name"]) for r in rows] == [(1, "a2")]

    same_time = spark.createDataFrame(
        [(2, "b", "I", "2024-01-03 00:00:00"), (2, "b", "I", "2024-01-03 00:00:00")], schema
    )
    dup = DataProcessor(doc, spark=spark).run(same_time)
    [rule] = dup.report.dataset_rules
    assert (rule.name, rule.passed, rule.observed) == ("id_ts_unique", False, 1)
    assert dup.report.status == "partial"
