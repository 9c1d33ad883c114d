"""One run-log row (DRIVER §15.1): the columns, and how a run report becomes a row.

Pure Python: the row is a plain mapping of column name to value so every store (DuckDB today, a lakehouse
table later) shares one definition of what is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from lakelogic.errors import LakeLogicError
from lakelogic.report import RunReport

# Column name -> SQL type (DuckDB dialect). Order is the table's column order.
RUN_LOG_COLUMNS: dict[str, str] = {
    "run_id": "VARCHAR PRIMARY KEY",
    "pipeline_run_id": "VARCHAR",
    "backfill_id": "VARCHAR",
    "contract": "VARCHAR",
    "contract_file": "VARCHAR",
    "contract_version": "VARCHAR",
    "layer": "VARCHAR",
    "entity": "VARCHAR",
    "domain": "VARCHAR",
    "system": "VARCHAR",
    "environment": "VARCHAR",
    "engine": "VARCHAR",
    "run_mode": "VARCHAR",
    "window_label": "VARCHAR",
    "window_start": "TIMESTAMP",
    "window_end": "TIMESTAMP",
    "window_reason": "VARCHAR",
    "status": "VARCHAR",
    "gated": "BOOLEAN",
    "gate_reason": "VARCHAR",
    "skip_reason": "VARCHAR",
    "upstream_cause": "VARCHAR",
    "root_cause": "VARCHAR",
    "upstream_warnings": "VARCHAR",
    "error_type": "VARCHAR",
    "error_message": "VARCHAR",
    "attempts": "INTEGER",
    "started_at": "TIMESTAMP",
    "finished_at": "TIMESTAMP",
    "duration_seconds": "DOUBLE",
    "counts_source": "BIGINT",
    "counts_good": "BIGINT",
    "counts_quarantined": "BIGINT",
    "counts_filtered": "BIGINT",
    "counts_deduplicated": "BIGINT",
    "counts_expanded": "BIGINT",
    "quarantine_ratio": "DOUBLE",
    "dataset_rules_failed": "INTEGER",
    "watermark_field": "VARCHAR",
    "watermark_previous": "VARCHAR",
    "watermark_value": "VARCHAR",
    "max_source_mtime": "TIMESTAMP",
    "source_files_count": "INTEGER",
    "target": "VARCHAR",
    "strategy": "VARCHAR",
    "snapshot": "VARCHAR",
    "committed": "BOOLEAN",
    "rows_inserted": "BIGINT",
    "rows_updated": "BIGINT",
    "rows_deleted": "BIGINT",
    "policy_packs": "VARCHAR",
    "overrides": "VARCHAR",
    "approved_by": "VARCHAR",
    "report_json": "VARCHAR",
}

TIMESTAMP_COLUMNS = frozenset(name for name, kind in RUN_LOG_COLUMNS.items() if kind == "TIMESTAMP")
BOOLEAN_COLUMNS = frozenset(name for name, kind in RUN_LOG_COLUMNS.items() if kind == "BOOLEAN")

# Columns a caller may set beside the report (driver context the report does not carry).
EXTRA_COLUMNS = frozenset(
    {
        "backfill_id",
        "contract_file",
        "entity",
        "run_mode",
        "gated",
        "gate_reason",
        "skip_reason",
        "upstream_cause",
        "root_cause",
        "upstream_warnings",
        "attempts",
        "policy_packs",
        "overrides",
        "approved_by",
        "window_reason",
    }
)


def to_utc_naive(value: datetime | None) -> datetime | None:
    """Store instants as naive UTC: DuckDB TIMESTAMP has no zone, and every LakeLogic instant is UTC."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def _text(value: Any) -> str | None:
    """Watermarks can be any JSON value; the column keeps their text form."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return json.dumps(value, default=str)


def _json_list(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, sort_keys=True)


def row_from_report(report: RunReport, **extra: Any) -> dict[str, Any]:
    """The run-log row for ``report``; ``extra`` fills driver-only columns (see ``EXTRA_COLUMNS``)."""
    unknown = sorted(set(extra) - EXTRA_COLUMNS)
    if unknown:
        raise LakeLogicError(
            f"unknown run-log column(s): {', '.join(unknown)}",
            hint=f"allowed: {', '.join(sorted(EXTRA_COLUMNS))}",
        )
    mat = report.materialization
    counts = report.counts
    failed_rules = report.failed_dataset_rules("error")
    row: dict[str, Any] = {
        "run_id": report.run_id,
        "pipeline_run_id": report.pipeline_run_id,
        "backfill_id": None,
        "contract": report.contract,
        "contract_file": None,
        "contract_version": report.contract_version,
        "layer": report.layer,
        "entity": None,
        "domain": report.domain,
        "system": report.system,
        "environment": report.environment,
        "engine": report.engine,
        "run_mode": None,
        "window_label": report.window.label,
        "window_start": to_utc_naive(report.window.start),
        "window_end": to_utc_naive(report.window.end),
        "window_reason": report.window.reason,
        "status": str(report.status),
        "gated": False,
        "gate_reason": None,
        "skip_reason": None,
        "upstream_cause": None,
        "root_cause": None,
        "upstream_warnings": None,
        "error_type": report.error.type if report.error else None,
        "error_message": report.error.message if report.error else None,
        "attempts": 1,
        "started_at": to_utc_naive(report.started_at),
        "finished_at": to_utc_naive(report.finished_at),
        "duration_seconds": report.duration_seconds,
        "counts_source": counts.source,
        "counts_good": counts.good,
        "counts_quarantined": counts.quarantined,
        "counts_filtered": counts.filtered,
        "counts_deduplicated": counts.deduplicated,
        "counts_expanded": counts.expanded,
        "quarantine_ratio": counts.quarantine_ratio,
        "dataset_rules_failed": len(failed_rules),
        "watermark_field": report.watermark.field,
        "watermark_previous": _text(report.watermark.previous),
        "watermark_value": _text(report.watermark.current),
        "max_source_mtime": to_utc_naive(report.source.max_source_mtime),
        "source_files_count": report.source.files_count,
        "target": mat.target if mat else None,
        "strategy": mat.strategy if mat else None,
        "snapshot": mat.snapshot if mat else None,
        "committed": bool(mat.committed or mat.already_committed) if mat else False,
        "rows_inserted": mat.rows_inserted if mat else 0,
        "rows_updated": mat.rows_updated if mat else 0,
        "rows_deleted": mat.rows_deleted if mat else 0,
        "policy_packs": None,
        "overrides": None,
        "approved_by": report.approval.approved_by if report.approval else None,
        "report_json": json.dumps(report.to_json_dict(), default=str, sort_keys=True),
    }
    for key, value in extra.items():
        if value is None:
            continue
        if key in ("upstream_warnings", "policy_packs", "overrides"):
            value = _json_list(value)
        row[key] = value
    return row


def normalise_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Fill absent columns with NULL and make timestamps naive UTC, so any mapping can be stored."""
    out: dict[str, Any] = {}
    for name in RUN_LOG_COLUMNS:
        value = row.get(name)
        if name in TIMESTAMP_COLUMNS and isinstance(value, datetime):
            value = to_utc_naive(value)
        out[name] = value
    if not out["run_id"]:
        raise LakeLogicError("a run-log row needs a run_id")
    return out
