"""A reprocess window through the public API (SEMANTICS §13.4, DRIVER §8): the window's target rows are
replaced by the batch; other windows append."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _write(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_reprocess_window_replaces_the_rows_of_its_dates(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from lakelogic import DataProcessor

    landing = tmp_path / "landing"
    landing.mkdir()
    _write(landing, "d_2024-01-01.json", [{"id": 1, "day": "2024-01-01"}])
    _write(landing, "d_2024-01-02.json", [{"id": 2, "day": "2024-01-02"}, {"id": 3, "day": "2024-01-02"}])
    _write(landing, "d_2024-01-03.json", [{"id": 4, "day": "2024-01-03"}])
    doc = {
        "version": "1.0.0",
        "info": {"title": "Days"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "day", "type": "date"}]},
        "source": {"type": "landing", "path": str(landing), "format": "json", "load_mode": "incremental"},
        "materialization": {"strategy": "append", "partition_by": ["day"], "format": "delta"},
    }
    target = str(tmp_path / "target")
    processor = DataProcessor(doc, spark=spark)
    full = {"start": None, "end": dt.datetime(2030, 1, 1), "label": "full"}
    assert processor.run(materialize=True, target=target, window=full).report.error is None
    _write(landing, "d_2024-01-02.json", [{"id": 5, "day": "2024-01-02"}])  # the day's corrected file
    window = {"start": dt.datetime(2024, 1, 2), "end": dt.datetime(2024, 1, 3), "label": "reprocess"}
    result = processor.run(materialize=True, target=target, window=window)
    assert result.report.error is None and result.report.window.label == "reprocess"
    rows = sorted((r["id"], str(r["day"])) for r in DeltaTable(target).to_pyarrow_table().to_pylist())
    assert rows == [(1, "2024-01-01"), (4, "2024-01-03"), (5, "2024-01-02")]
