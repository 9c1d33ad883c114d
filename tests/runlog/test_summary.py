"""Pipeline summary table, summary/metrics files (DRIVER §15.2, §15.3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from lakelogic.runlog.summary import (
    PipelineSummary,
    atomic_write_json,
    metrics_payload,
    prometheus_text,
    write_summary,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def summary() -> PipelineSummary:
    contracts = [
        {"node_id": "bronze.a", "contract": "a", "layer": "bronze", "status": "succeeded", "ran": True,
         "rows_source": 10, "rows_good": 8, "rows_quarantined": 2, "quarantine_ratio": 0.2,
         "window_label": "full", "window_reason": "no_previous_success", "gated": False},
        {"node_id": "silver.b", "contract": "b", "layer": "silver", "status": "partial", "ran": True,
         "rows_source": 8, "rows_good": 8, "rows_quarantined": 0, "gated": True,
         "window_label": "incremental"},
        {"node_id": "gold.c", "contract": "c", "layer": "gold", "status": "skipped", "ran": False},
    ]  # fmt: skip
    return PipelineSummary(
        pipeline_run_id="p1", started_at=T0, finished_at=T0 + timedelta(seconds=30), status="succeeded",
        exit_code=0, layers=["bronze", "silver", "gold"], contracts=contracts,
    )  # fmt: skip


def test_counters() -> None:
    c = summary().counters()
    assert (c["total_contracts"], c["succeeded"], c["partial"], c["skipped"], c["gated"]) == (3, 1, 1, 1, 1)
    assert (c["full_loads"], c["full_loads_due_to_missing_logs"]) == (1, 1)
    assert (c["rows_source"], c["rows_good"], c["rows_quarantined"]) == (18, 16, 2)


def test_summary_table_upserts_and_creates_schema(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    write_summary(summary(), table="lakelogic.pipeline_runs", database=db)
    write_summary(summary(), table="lakelogic.pipeline_runs", database=db)
    con = duckdb.connect(str(db))
    rows = con.execute(
        "SELECT pipeline_run_id, total_contracts, duration_seconds FROM lakelogic.pipeline_runs"
    )
    assert rows.fetchall() == [("p1", 3, 30.0)]
    con.close()


def test_metrics_file_and_prometheus_text(tmp_path: Path) -> None:
    path = tmp_path / "m" / "metrics.json"
    atomic_write_json(path, metrics_payload(summary(), {"team": "x"}))
    data = json.loads(path.read_text())
    assert data["pipeline"]["succeeded"] == 1 and data["pipeline"]["duration_seconds"] == 30.0
    assert data["tags"] == {"team": "x"} and [c["contract"] for c in data["contracts"]] == ["a", "b", "c"]
    text = prometheus_text(summary())
    assert 'lakelogic_contract_rows_good_total{contract="bronze.a",layer="bronze"} 8.0' in text
    assert 'lakelogic_pipeline_contracts{status="skipped"} 1.0' in text
    assert 'lakelogic_pipeline_contracts{status="awaiting_approval"} 0.0' in text  # every status, 0 too


def test_delta_summary_defaults_to_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--summary-backend delta without --summary-database: the Delta folder under LAKELOGIC_HOME."""
    from deltalake import DeltaTable

    from lakelogic.runlog.summary import PipelineSummary, write_summary

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LAKELOGIC_RUNLOG", raising=False)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    summary = PipelineSummary(
        pipeline_run_id="p1", started_at=now, finished_at=now, status="succeeded", exit_code=0
    )
    write_summary(summary, table="ops.pipeline_runs", backend="delta")
    rows = (
        DeltaTable(str(tmp_path / "home" / "delta" / "ops" / "pipeline_runs")).to_pyarrow_table().to_pylist()
    )
    assert [r["pipeline_run_id"] for r in rows] == ["p1"]
