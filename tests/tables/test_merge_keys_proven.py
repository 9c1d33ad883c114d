"""A contract run hands its merge the key uniqueness its implied `unique` rule proved (WriteSpec.keys_unique):
the write skips its own duplicate-key aggregation, and a batch the rule did not prove is still checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.tables import spark_write

pytestmark = pytest.mark.spark


def _contract(tmp_path: Path) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Customers"},
        "model": {
            "fields": [
                {"name": "id", "type": "int", "required": True},
                {"name": "name", "type": "string"},
            ]
        },
        "primary_key": ["id"],
        "materialization": {"strategy": "merge", "target_path": str(tmp_path / "silver" / "customers")},
    }


def _spy_specs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    specs: list[Any] = []
    original = spark_write.write_frame

    def spy(*args: Any, **kwargs: Any) -> Any:
        if args[4].role == "target":
            specs.append(args[3])
        return original(*args, **kwargs)

    monkeypatch.setattr(spark_write, "write_frame", spy)
    return specs


def test_a_proven_unique_batch_merges_without_a_second_check(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    specs = _spy_specs(monkeypatch)
    processor = DataProcessor(_contract(tmp_path), spark=spark)
    processor.run(spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string"), materialize=True)
    result = processor.run(
        spark.createDataFrame([(2, "B"), (3, "c")], "id int, name string"), materialize=True
    )
    assert result.report.status == "succeeded"
    assert [s.keys_unique for s in specs] == [True, True]
    info = result.report.materialization
    assert info is not None and (info.rows_inserted, info.rows_updated) == (1, 1)
    rows = DeltaTable(str(tmp_path / "silver" / "customers")).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["name"]) for r in rows) == [(1, "a"), (2, "B"), (3, "c")]


def test_duplicate_keys_fail_the_implied_rule_and_the_merge_still_refuses_them(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    specs = _spy_specs(monkeypatch)
    processor = DataProcessor(_contract(tmp_path), spark=spark)
    frame = spark.createDataFrame([(1, "a"), (1, "b"), (2, "c")], "id int, name string")
    result = processor.run(frame, materialize=True)
    unique = {r.name: r.passed for r in result.report.dataset_rules}
    assert unique == {"id_unique": False}
    assert [s.keys_unique for s in specs] == [False]
    assert result.report.status == "failed" and result.report.error is not None
    assert "duplicate keys" in result.report.error.message
    assert not DeltaTable.is_deltatable(str(tmp_path / "silver" / "customers"))


def test_only_a_unique_rule_over_key_columns_proves_the_key(spark: Any) -> None:
    """A passing `unique` over a subset of the key proves it; over other columns, or failed, it does not."""
    from lakelogic.plan.steps import CheckDataset, DatasetRule, FieldSpec, Mask
    from lakelogic.report import DatasetRuleResult, RunReport
    from lakelogic.tables.materialize import _keys_proven_unique
    from lakelogic.types import Severity, parse_type

    def rule(name: str, columns: tuple[str, ...]) -> DatasetRule:
        return DatasetRule(
            name=name,
            generated_name=name,
            category="uniqueness",
            severity=Severity.ERROR,
            yaml_path="quality.dataset_rules[0]",
            unique_columns=columns,
        )

    class Plan:
        steps = (
            CheckDataset(yaml_path="quality", rules=(rule("a_unique", ("a",)), rule("c_unique", ("c",)))),
        )

    def report(**passed: bool | None) -> RunReport:
        results = [
            DatasetRuleResult(name=n, generated_name=n, category="uniqueness", severity="error", passed=p)
            for n, p in passed.items()
        ]
        return RunReport(run_id="r", contract="c", dataset_rules=results)

    assert _keys_proven_unique(Plan(), report(a_unique=True), ("a", "b"))
    assert not _keys_proven_unique(Plan(), report(a_unique=False), ("a", "b"))
    assert not _keys_proven_unique(Plan(), report(a_unique=None), ("a",))
    assert not _keys_proven_unique(Plan(), report(c_unique=True), ("a", "b"))
    assert not _keys_proven_unique(Plan(), report(a_unique=True), ())

    class MaskedKeyPlan:
        masked_a = FieldSpec(name="a", type=parse_type("string"), masking="redact")
        steps = (*Plan.steps, Mask(yaml_path="model", fields=(masked_a,)))

    # the rule saw the real key values; the write gets the masked ones
    assert not _keys_proven_unique(MaskedKeyPlan(), report(a_unique=True), ("a", "b"))
