"""Runs that stopped between their target commit and their run-log row (SEMANTICS §13.4, DRIVER §14).

A materialized run writes a ``committing`` run-log row just before its target commit and replaces it with
its final row afterwards. A row still ``committing`` when the contract runs next means the process stopped
in between. Whether the commit landed is read from the target itself (the run id in its commit markers):

* it landed: the row becomes the run's final row, with the status the run had decided before it wrote,
  so the next ``last_success`` window, ``pipeline_log`` bound or ``delta_version`` cursor starts after the
  committed rows instead of reading them again (an append target would hold them twice);
* it did not: the row is left as it is. It is no success, so no window starts from it, exactly as when a
  run fails before its commit (a run still in progress elsewhere is not touched either).

Only rows that end after the contract's last success are looked at, so a stale intent costs one check
until a later run succeeds. ``--resume`` of a driver run keeps its own path (the same run id, whose
markers make the commit a no-op); this covers the new run started instead of a resume, and standalone runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from loguru import logger
from pyspark.sql import SparkSession

from lakelogic.runlog import COMMITTING, SUCCESS_STATUSES, RunLogStore
from lakelogic.tables.materialize import already_committed, resolve_target


def settle_pending_commits(
    spark: SparkSession, contract: Any, store: RunLogStore, *, name: str | None = None
) -> list[str]:
    """Record the runs of ``contract`` whose target commit landed after their ``committing`` row; returns
    their run ids. ``name``: the contract's name in ``store`` (default: its ``contract_name``)."""
    if not store.exists():
        return []
    contract_name = name or str(getattr(contract, "contract_name", "") or "")
    settled: list[str] = []
    for row in store.pending_commits(contract_name):
        resolved = resolve_target(contract, target=row.get("target") or None, env=row.get("environment"))
        run_id = str(row["run_id"])
        if not already_committed(spark, resolved, run_id, contract=contract_name):
            continue
        quarantine_missing = bool(
            (row.get("counts_quarantined") or 0) > 0
            and resolved.quarantine is not None
            and not already_committed(
                spark, resolved.quarantine, run_id, contract=contract_name, role="quarantine"
            )
        )
        current = store.get(run_id)  # the run itself may have finished meanwhile: its own row stands
        if current is None or current.get("status") != COMMITTING:
            continue
        store.write(_recovered(row, quarantine_missing))
        settled.append(run_id)
        logger.warning(
            "{}: run {} committed its target but stopped before its run-log row; recorded it now",
            contract_name,
            run_id,
        )
    return settled


def _recovered(row: dict[str, Any], quarantine_missing: bool) -> dict[str, Any]:
    """The final row of a run known only from its ``committing`` row and its commit marker."""
    report = _report_json(row)
    status = str(report.get("status") or "")
    note = (
        f"recovered on {datetime.now(UTC).isoformat(timespec='seconds')}: the run committed its target and "
        "stopped before its run-log row; the rows it wrote and its snapshot are in the target's history"
    )
    if quarantine_missing:
        note += "; its quarantine commit is missing (the quarantined rows of this run were not written)"
    warnings = [*list(report.get("warnings") or []), note]
    report.update(warnings=warnings)
    materialization = report.get("materialization")
    if isinstance(materialization, dict):
        materialization["committed"] = True
    final = dict(row)
    final.update(
        status=status if status in SUCCESS_STATUSES else "succeeded",
        committed=True,
        # when it finished is unknown; its start is the earliest it can have been, so freshness checks
        # never take the recovered run for newer than it is
        finished_at=row.get("started_at"),
        report_json=json.dumps(report, default=str, sort_keys=True),
    )
    return final


def _report_json(row: dict[str, Any]) -> dict[str, Any]:
    text = row.get("report_json")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
