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
