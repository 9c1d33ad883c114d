"""Flatten a pipeline result into the run-log summary objects (DRIVER §15.2, §15.3)."""

from __future__ import annotations

from typing import Any

from lakelogic.driver.dag import ContractDag
from lakelogic.driver.gates import Outcome
from lakelogic.driver.nodes import Node
from lakelogic.driver.runner import PipelineResult
from lakelogic.driver.windows import Window
from lakelogic.runlog.summary import PipelineSummary


def contract_row(node: Node, outcome: Outcome, window: Window | None) -> dict[str, Any]:
    """The flat record of one finished node (summary file, metrics, live exporters)."""
    report = outcome.report
    counts = report.counts if report is not None else None
    return {
        "node_id": node.id,
        "contract": node.name,
        "layer": node.layer,
        "entity": node.entity,
        "status": outcome.status,
        "ran": outcome.status != "skipped",
        "gated": outcome.gated,
        "gate_reason": outcome.gate_reason,
        "skip_reason": outcome.skip_reason,
        "upstream_cause": outcome.upstream_cause,
        "root_cause": outcome.root_cause,
        "error": outcome.error if outcome.status == "failed" else None,
        "attempts": outcome.attempts,
        "duration_seconds": outcome.duration_seconds,
        "started_at": outcome.started_at.isoformat() if outcome.started_at else None,
        "finished_at": outcome.finished_at.isoformat() if outcome.finished_at else None,
        "rows_source": counts.source if counts else 0,
        "rows_good": counts.good if counts else 0,
        "rows_quarantined": counts.quarantined if counts else 0,
        "rows_filtered": counts.filtered if counts else 0,
        "quarantine_ratio": counts.quarantine_ratio if counts else 0.0,
        "window_label": window.label if window else None,
        "window_reason": window.reason if window else None,
        "run_id": report.run_id if report is not None else None,
        "warnings": outcome.warnings,
    }


def contract_rows(result: PipelineResult, dag: ContractDag) -> list[dict[str, Any]]:
    """One dict per node that was scheduled, in layer then node order."""
    ordered = sorted(result.outcomes.items(), key=lambda kv: (dag.nodes[kv[0]].layer_index, kv[0]))
    return [contract_row(dag.nodes[n], o, result.windows.get(n)) for n, o in ordered]


def build_summary(
    result: PipelineResult,
    dag: ContractDag,
    *,
    engine: str,
    environment: str | None,
    window_label: str | None,
    backfill_id: str | None = None,
) -> PipelineSummary:
    windows = list(result.windows.values())
    return PipelineSummary(
        pipeline_run_id=result.pipeline_run_id,
        started_at=result.started_at,
        finished_at=result.finished_at,
        status=result.status,
        exit_code=result.exit_code,
        engine=engine,
        environment=environment,
        backfill_id=backfill_id,
        layers=list(result.layer_seconds),
        window_label=window_label,
        window_start=min((w.start for w in windows if w.start), default=None),
        window_end=max((w.end for w in windows if w.end), default=None),
        contracts=contract_rows(result, dag),
        layer_seconds=result.layer_seconds,
    )
