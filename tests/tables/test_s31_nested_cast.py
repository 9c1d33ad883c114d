"""Write-side schema evolution (SEMANTICS §7.1): a nested value the cast to the target's type cannot keep
fails the write, as a top-level one does (`["x"]` into `array<int>` was written as `[NULL]`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _doc(target: Path, element: str) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Nested"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "r", "type": f"array<{element}>"}]},
        "schema_policy": {"evolution": "merge"},
        "materialization": {"strategy": "append", "format": "delta", "target_path": str(target)},
    }


def test_an_array_element_the_cast_cannot_keep_fails_the_write(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    target = tmp_path / "t"
    seed = spark.createDataFrame([(1, [1])], "id int, r array<int>")
    assert (
        DataProcessor(_doc(target, "integer"), spark=spark).run(seed, materialize=True).report.error is None
    )
    fits = spark.createDataFrame([(2, ["2", None])], "id int, r array<string>")
    assert DataProcessor(_doc(target, "string"), spark=spark).run(fits, materialize=True).report.error is None
    breaks = spark.createDataFrame([(3, ["x"])], "id int, r array<string>")
    report = DataProcessor(_doc(target, "string"), spark=spark).run(breaks, materialize=True).report
    assert report.status == "failed" and report.error is not None
    assert "cannot be cast to the target type array<int>" in report.error.message
    stored = sorted((r["id"], r["r"]) for r in DeltaTable(str(target)).to_pyarrow_table().to_pylist())
    assert stored == [(1, [1]), (2, [2, None])]


def test_a_widening_the_table_cannot_make_is_refused_before_the_commit_with_its_drift(
    spark: Any, tmp_path: Path
) -> None:
    """Iceberg does not promote date to timestamp (the commit failed with a raw Java message); a Delta
    path table widens nothing. Both refusals carry the drift (§7.1)."""
    import uuid

    from lakelogic.api import DataProcessor

    def doc(kind: str, fmt: str, target: str) -> dict[str, Any]:
        return {
            "version": "1.0.0",
            "info": {"title": "Widen"},
            "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "d", "type": kind}]},
            "schema_policy": {"evolution": "compatible"},
            "materialization": {"strategy": "append", "format": fmt, "target_path": target},
        }

    table = f"lakelogic.tests.widen_{uuid.uuid4().hex[:8]}"
    seed = spark.createDataFrame([(1, "2024-01-01")], "id int, d string")
    assert (
        DataProcessor(doc("date", "iceberg", table), spark=spark).run(seed, materialize=True).report.error
        is None
    )
    later = spark.createDataFrame([(2, "2024-01-02T10:00:00Z")], "id int, d string")
    report = (
        DataProcessor(doc("timestamp", "iceberg", table), spark=spark).run(later, materialize=True).report
    )
    assert report.error is not None and report.error.type == "schema_evolution"
    assert "cannot widen date -> timestamp" in report.error.message
    assert report.schema_drift is not None and [
        c.get("column") for c in report.schema_drift.type_changes
    ] == ["d"]
    assert spark.table(table).count() == 1

    path = str(tmp_path / "delta")
    ints = spark.createDataFrame([(1, "5")], "id int, d string")
    assert (
        DataProcessor(doc("integer", "delta", path), spark=spark).run(ints, materialize=True).report.error
        is None
    )
    report = DataProcessor(doc("bigint", "delta", path), spark=spark).run(ints, materialize=True).report
    assert report.error is not None and report.error.type == "schema_evolution"
    assert report.schema_drift is not None and [
        c.get("column") for c in report.schema_drift.type_changes
    ] == ["d"]
