"""Pipeline summary row and metrics file (DRIVER §15.2, §15.3).

Built from plain per-contract dicts (the driver's outcomes flattened), so this module does not depend
on the driver; the DuckDB summary table shares the store's locking and retry.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lakelogic.runlog.record import to_utc_naive
from lakelogic.runlog.store import DuckDBRunLogStore, RunLogError, SQLiteRunLogStore

SUMMARY_COLUMNS: dict[str, str] = {
    "pipeline_run_id": "VARCHAR PRIMARY KEY",
    "backfill_id": "VARCHAR",
    "started_at": "TIMESTAMP",
    "finished_at": "TIMESTAMP",
    "duration_seconds": "DOUBLE",
    "status": "VARCHAR",
    "exit_code": "INTEGER",
    "engine": "VARCHAR",
    "environment": "VARCHAR",
    "layers": "VARCHAR",
    "window_label": "VARCHAR",
    "window_start": "TIMESTAMP",
    "window_end": "TIMESTAMP",
    "total_contracts": "INTEGER",
    "succeeded": "INTEGER",
    "partial": "INTEGER",
    "failed": "INTEGER",
    "skipped": "INTEGER",
    "gated": "INTEGER",
    "no_new_data": "INTEGER",
    "awaiting_approval": "INTEGER",
    "full_loads": "INTEGER",
    "full_loads_due_to_missing_logs": "INTEGER",
    "rows_source": "BIGINT",
    "rows_good": "BIGINT",
    "rows_quarantined": "BIGINT",
    "summary_json": "VARCHAR",
}


@dataclass
class PipelineSummary:
    """Counters of one pipeline run plus the per-contract list."""

    pipeline_run_id: str
    started_at: datetime
    finished_at: datetime
    status: str
    exit_code: int
    engine: str = "spark"
    environment: str | None = None
    backfill_id: str | None = None
    layers: list[str] = field(default_factory=list)
    window_label: str | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    contracts: list[dict[str, Any]] = field(default_factory=list)
    layer_seconds: dict[str, float] = field(default_factory=dict)

    def counters(self) -> dict[str, Any]:
        statuses = [c.get("status") for c in self.contracts]
        labels = [(c.get("window_label"), c.get("window_reason")) for c in self.contracts if c.get("ran")]
        return {
            "total_contracts": len(self.contracts),
            "succeeded": statuses.count("succeeded"),
            "partial": statuses.count("partial"),
            "failed": statuses.count("failed"),
            "skipped": statuses.count("skipped"),
            "gated": sum(1 for c in self.contracts if c.get("gated")),
            "no_new_data": statuses.count("no_new_data"),
            "awaiting_approval": statuses.count("awaiting_approval"),
            "full_loads": sum(1 for label, _ in labels if label == "full"),
            "full_loads_due_to_missing_logs": sum(
                1
                for label, reason in labels
                if label == "full" and reason in ("no_run_log", "no_previous_success")
            ),
            "rows_source": sum(int(c.get("rows_source") or 0) for c in self.contracts),
            "rows_good": sum(int(c.get("rows_good") or 0) for c in self.contracts),
            "rows_quarantined": sum(int(c.get("rows_quarantined") or 0) for c in self.contracts),
        }

    @property
    def duration_seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline_run_id": self.pipeline_run_id,
            "backfill_id": self.backfill_id,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "duration_seconds": self.duration_seconds,
            "status": self.status,
            "exit_code": self.exit_code,
            "engine": self.engine,
            "environment": self.environment,
            "layers": self.layers,
            "window_label": self.window_label,
            "window_start": self.window_start.isoformat() if self.window_start else None,
            "window_end": self.window_end.isoformat() if self.window_end else None,
            "layer_seconds": self.layer_seconds,
            **self.counters(),
            "contracts": self.contracts,
        }

    def row(self) -> dict[str, Any]:
        data = {
            "pipeline_run_id": self.pipeline_run_id,
            "backfill_id": self.backfill_id,
            "started_at": to_utc_naive(self.started_at),
            "finished_at": to_utc_naive(self.finished_at),
            "duration_seconds": self.duration_seconds,
            "status": self.status,
            "exit_code": self.exit_code,
            "engine": self.engine,
            "environment": self.environment,
            "layers": ",".join(self.layers),
            "window_label": self.window_label,
            "window_start": to_utc_naive(self.window_start),
            "window_end": to_utc_naive(self.window_end),
            **self.counters(),
            "summary_json": json.dumps(self.to_dict(), default=str, sort_keys=True),
        }
        return data


def write_summary(
    summary: PipelineSummary, *, table: str, database: str | Path | None = None, backend: str = "duckdb"
) -> None:
    """Upsert the summary row by ``pipeline_run_id`` into ``table`` (``schema.table`` creates the schema)."""
    store: DuckDBRunLogStore
    if backend == "sqlite":
        store = SQLiteRunLogStore(database)
    elif backend == "delta":
        from lakelogic.runlog.delta_store import DeltaRunLogStore

        store = DeltaRunLogStore(database)
    elif backend == "duckdb":
        store = DuckDBRunLogStore(database)
    elif backend == "iceberg":
        from lakelogic.runlog import open_store

        store = open_store(database, backend="iceberg")
    else:
        raise RunLogError(
            f"--summary-backend {backend!r} is not available", hint="use duckdb, sqlite, delta or iceberg"
        )
    store.upsert(table, SUMMARY_COLUMNS, summary.row())


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temp file and rename, so readers (a textfile collector) never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, payload: Mapping[str, Any] | Sequence[Any]) -> None:
    """:func:`atomic_write_text` of ``payload`` as JSON."""
    atomic_write_text(path, json.dumps(payload, indent=2, default=str, sort_keys=True))


def metrics_payload(summary: PipelineSummary, tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``--metrics-path`` document (DRIVER §15.3)."""
    keys = ("contract", "layer", "entity", "status", "duration_seconds", "rows_source", "rows_good",
            "rows_quarantined", "rows_filtered", "quarantine_ratio")  # fmt: skip
    return {
        "pipeline_run_id": summary.pipeline_run_id,
        "timestamp": summary.finished_at.isoformat(),
        "tags": dict(tags or {}),
        "pipeline": {**summary.counters(), "duration_seconds": summary.duration_seconds},
        "contracts": [{k: c.get(k) for k in keys} for c in summary.contracts],
    }


def _label_value(value: object) -> str:
    """Exposition-format escaping of a label value (backslash, double quote, line feed)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(
    summary: PipelineSummary, prefix: str = "lakelogic", tags: Mapping[str, str] | None = None
) -> str:
    """Prometheus exposition text of the metrics (for a textfile collector); ``tags`` are constant labels
    on every sample (§15.3 ``--metrics-tags``)."""
    lines: list[str] = []
    constant = dict(tags or {})

    def metric(name: str, kind: str, samples: list[tuple[dict[str, str], float]]) -> None:
        lines.append(f"# TYPE {prefix}_{name} {kind}")
        for own, value in samples:
            # a sample's own label wins over a constant tag of the same name
            labels = own | {k: v for k, v in constant.items() if k not in own}
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items())
            lines.append(f"{prefix}_{name}{{{text}}} {value}" if text else f"{prefix}_{name} {value}")

    per = summary.contracts

    def labels(c: Mapping[str, Any]) -> dict[str, str]:
        return {"contract": str(c["node_id"]), "layer": str(c["layer"])}

    for field_name, metric_name in (
        ("rows_source", "contract_rows_read_total"),
        ("rows_good", "contract_rows_good_total"),
        ("rows_quarantined", "contract_rows_quarantined_total"),
        ("rows_filtered", "contract_rows_filtered_total"),
    ):
        metric(
            metric_name,
            "counter",
            [({"contract": c["node_id"], "layer": c["layer"]}, float(c.get(field_name) or 0)) for c in per],
        )
    metric("contract_runs_total", "counter", [({**labels(c), "status": str(c["status"])}, 1.0) for c in per])
    ratios = [(labels(c), float(c.get("quarantine_ratio") or 0)) for c in per]
    metric("contract_quarantine_ratio", "gauge", ratios)
    counters = summary.counters()
    statuses = ("succeeded", "partial", "failed", "skipped", "no_new_data", "awaiting_approval")
    metric("pipeline_contracts", "gauge", [({"status": s}, float(counters[s])) for s in statuses])
    metric("pipeline_duration_seconds", "gauge", [({}, summary.duration_seconds)])
    info = {"pipeline_run_id": summary.pipeline_run_id, "engine": summary.engine,
            "environment": summary.environment or ""}  # fmt: skip
    metric("pipeline_info", "gauge", [(info, 1.0)])
    return "\n".join(lines) + "\n"
