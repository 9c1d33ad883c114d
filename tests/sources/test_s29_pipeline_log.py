"""`watermark_strategy: pipeline_log` on a standalone run (SEMANTICS §3.4): the lower bound is where the
contract's last successful run in its run log ended; none yet is a full read with the reason recorded."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest


def _land(landing: Path, name: str, rows: str, mtime: datetime) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    path = landing / name
    path.write_text("id\n" + rows)
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))


def _contract(landing: Path, target: Path, **source: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Log windowed", "table_name": "pipeline_log_orders"},
        "model": {"fields": [{"name": "id", "type": "integer", "required": True}]},
        "source": {
            "type": "landing",
            "path": str(landing),
            "format": "csv",
            "load_mode": "incremental",
            "watermark_strategy": "pipeline_log",
            **source,
        },
        "materialization": {"strategy": "append", "format": "parquet", "target_path": str(target)},
    }


@pytest.mark.spark
def test_a_standalone_run_starts_where_the_last_success_ended(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.api import DataProcessor

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    landing, target = tmp_path / "landing", tmp_path / "target"
    _land(landing, "a.csv", "1\n2\n", datetime.now(UTC) - timedelta(days=2))
    doc = _contract(landing, target)

    first = DataProcessor(doc, spark=spark).run(materialize=True)
    assert first.report.counts.source == 2 and first.report.window.reason == "no_previous_success"

    time.sleep(0.05)  # the new file lands after the first run's window ended
    _land(landing, "b.csv", "3\n", datetime.now(UTC))
    second = DataProcessor(doc, spark=spark).run(materialize=True)
    assert second.report.window.reason == "pipeline_log"
    assert second.report.window.start == first.report.window.end
    assert second.report.counts.source == 1
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2, 3]


@pytest.mark.spark
def test_pipeline_name_chooses_whose_runs_bound_the_window(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs are looked up under ``pipeline_name``: a name with no successful run reads everything."""
    from lakelogic.api import DataProcessor

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    landing, target = tmp_path / "landing", tmp_path / "target"
    _land(landing, "a.csv", "1\n", datetime.now(UTC) - timedelta(days=2))
    DataProcessor(_contract(landing, target), spark=spark).run(materialize=True)
    other = DataProcessor(_contract(landing, target, pipeline_name="someone_else"), spark=spark).run()
    assert other.report.counts.source == 1 and other.report.window.reason == "no_previous_success"
    same = DataProcessor(_contract(landing, target, pipeline_name="pipeline_log_orders"), spark=spark).run()
    assert same.report.counts.source == 0 and same.report.window.reason == "pipeline_log"
