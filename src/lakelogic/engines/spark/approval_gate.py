"""The approval gate of one run, and the later publish or reject of a staged batch (DRIVER §11).

``hold_for_approval`` runs after the run's gates and before its publish. When approval is required and
the batch triggers it (quarantine ratio above the threshold, schema drift against the target) without an
approval covering it, the batch is staged (:mod:`lakelogic.engines.spark.approval`) and the run ends
``awaiting_approval``: neither the target nor the quarantine table is touched.

``publish_staged`` writes a staged batch exactly as the run would have (same run id, pipeline run id and
window in the commit stamps, so publishing twice writes once) and turns its run-log row into the run's
real status. ``reject_staged`` drops it and records ``rejected``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakelogic.engines.spark.approval import (
    StagedBatch,
    drop_staged,
    publish_contract,
    stage_batch,
)
from lakelogic.errors import ApprovalError
from lakelogic.plan.approval import ApprovalGate
from lakelogic.report import ApprovalInfo, MaterializationInfo, RunReport
from lakelogic.tables.target import ResolvedTarget
from lakelogic.types import RunStatus

# driver columns of a run-log row that the report does not carry; a publish keeps them
_KEPT_COLUMNS = (
    "entity",
    "contract_file",
    "backfill_id",
    "run_mode",
    "window_reason",
    "attempts",
    "overrides",
    "policy_packs",
    "upstream_warnings",
)


def _target_dict(target: ResolvedTarget) -> dict[str, Any]:
    data = asdict(target)
    data["quarantine"] = asdict(target.quarantine) if target.quarantine is not None else None
    return data


def _target_from(data: dict[str, Any]) -> ResolvedTarget:
    sink = data.get("quarantine")
    return ResolvedTarget(
        kind=data["kind"],
        name=data["name"],
        format=data["format"],
        quarantine=_target_from(sink) if isinstance(sink, dict) else None,
        write_mode=data.get("write_mode", "append"),
    )


def hold_for_approval(
    spark: SparkSession,
    *,
    gate: ApprovalGate | None,
    contract: Any,
    plan: Any,
    good: DataFrame,
    bad: DataFrame,
    report: RunReport,
    run_id: str,
    pipeline_run_id: str | None,
    window: tuple[datetime | None, datetime | None] | None,
    target: str | None,
    env: str | None,
) -> bool:
    """Decide the gate; True when the batch was staged and must not be published now."""
    if gate is None or not gate.policy.required:
        return False
    from lakelogic.tables.materialize import code_writes_output, materialize_strategy, target_drift
    from lakelogic.tables.target import resolve_target

    drift = (
        target_drift(spark, contract=contract, plan=plan, good=good, target=target, env=env)
        if gate.policy.on_schema_drift
        else []
    )
    info = ApprovalInfo(required=True, reasons=gate.policy.reasons(report.counts.quarantine_ratio, drift))
    report.approval = info
    if not info.reasons:
        return False
    if code_writes_output(plan):
        report.warnings.append(
            "approval gate not applied: external_logic.handles_output wrote the output itself"
        )
        return False
    if gate.approved:
        info.decision = "approved"
        info.approved_by, info.approval_file = gate.approved_by, gate.approval_file
        return False
    resolved = resolve_target(contract, target=target, env=env)
    # where it will land, nothing committed yet (the run log's target/strategy columns)
    report.materialization = MaterializationInfo(
        target=resolved.name,
        format=resolved.format,
        strategy=materialize_strategy(plan),
        quarantine_target=resolved.quarantine.name if resolved.quarantine is not None else None,
    )
    info.decision = "staged"
    info.staged_status = str(report.status)
    source_file = getattr(contract, "source_file", None)
    start, end = window if window is not None else (None, None)
    manifest = {
        "pipeline_run_id": pipeline_run_id,
        "contract": report.contract,
        "names": list(dict.fromkeys([*gate.names, report.contract])),
        "contract_file": str(source_file) if source_file is not None else None,
        "publish_contract": publish_contract(contract),
        "target": _target_dict(resolved),
        "window": {
            "start": start.isoformat() if start else None,
            "end": end.isoformat() if end else None,
        },
        "reasons": info.reasons,
    }
    report.finish(RunStatus.AWAITING_APPROVAL)  # the staged report carries when the run ended
    manifest["report"] = report.to_json_dict()
    quarantined = bad if report.counts.quarantined > 0 else None
    info.staged_at = stage_batch(spark, run_id=run_id, good=good, bad=quarantined, manifest=manifest)
    report.warnings.append(
        f"awaiting approval ({'; '.join(info.reasons)}): nothing was published; the batch is staged at "
        f"{info.staged_at}. Publish it with `lakelogic approve --run-id {run_id}` or reject it with "
        f"`lakelogic reject --run-id {run_id}`"
    )
    return True


def _window(batch: StagedBatch) -> tuple[datetime | None, datetime | None] | None:
    window = batch.manifest.get("window") or {}
    start, end = window.get("start"), window.get("end")
    if start is None and end is None:
        return None
    return (
        datetime.fromisoformat(start) if start else None,
        datetime.fromisoformat(end) if end else None,
    )


def staged_report(batch: StagedBatch) -> RunReport:
    """The run report as it was when the batch was staged (status ``awaiting_approval``)."""
    try:
        return RunReport.model_validate(batch.manifest["report"])
    except (KeyError, ValueError) as exc:
        raise ApprovalError(f"staged batch {batch.path}: its run report cannot be read: {exc}") from exc


def _store(batch: StagedBatch, contract: Any) -> Any:
    """The run log the staged run's contract records to (its file's project root for relative paths)."""
    from lakelogic.runlog import store_for_contract

    return store_for_contract(contract, batch.manifest.get("contract_file"))


def _record(report: RunReport, store: Any) -> None:
    """Upsert the run's row, keeping the driver columns, the environment and the run time the awaiting
    row had (the time an approver took is no part of the run's duration)."""
    from lakelogic.runlog import record_run

    previous = store.get(report.run_id) if store.exists() else None
    kept = {k: previous[k] for k in _KEPT_COLUMNS if previous is not None and previous.get(k) is not None}
    for key in ("overrides", "policy_packs", "upstream_warnings"):
        if isinstance(kept.get(key), str):
            kept[key] = json.loads(kept[key])
    if previous is not None:
        if previous.get("duration_seconds") is not None:
            report.duration_seconds = float(previous["duration_seconds"])
        # the driver sets the hierarchy's environment on the report after the run staged it
        report.environment = previous.get("environment") or report.environment
    record_run(report, store=store, **kept)


def _overlaps(report: RunReport, row: dict[str, Any]) -> bool:
    """Whether a run-log row's window overlaps the staged run's (an open or missing bound overlaps)."""

    def aware(value: Any) -> datetime | None:
        if not isinstance(value, datetime):
            return None
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    start, end = aware(report.window.start), aware(report.window.end)
    other_start, other_end = aware(row.get("window_start")), aware(row.get("window_end"))
    return (start is None or other_end is None or start < other_end) and (
        other_start is None or end is None or other_start < end
    )


def superseding_run(store: Any, report: RunReport) -> dict[str, Any] | None:
    """A later run of the same contract that committed an overlapping window: it read the staged
    run's data again (an awaiting run does not advance ``last_success``), so publishing the staged batch
    too would write that data twice."""
    if not store.exists():
        return None
    started = report.started_at if report.started_at.tzinfo else report.started_at.replace(tzinfo=UTC)
    for row in store.query(contract=report.contract):
        began = row.get("started_at")
        if (
            row.get("run_id") != report.run_id
            and row.get("committed")
            and str(row.get("status")) in ("succeeded", "partial")
            and isinstance(began, datetime)
            and (began if began.tzinfo else began.replace(tzinfo=UTC)) > started
            and _overlaps(report, row)
        ):
            return row
    return None


def was_published(spark: SparkSession, batch: StagedBatch) -> bool:
    """True when the target already holds this run's commit (a publish that stopped before its cleanup)."""
    from lakelogic.tables.materialize import already_committed

    report = staged_report(batch)
    return already_committed(
        spark, _target_from(batch.manifest["target"]), report.run_id, contract=report.contract
    )


def _contract(batch: StagedBatch) -> Any:
    from lakelogic.contract.loader import load_contract

    data = batch.manifest.get("publish_contract")
    if not isinstance(data, dict):
        raise ApprovalError(f"staged batch {batch.path}: its manifest holds no contract")
    return load_contract(data)


def publish_staged(
    spark: SparkSession,
    batch: StagedBatch,
    *,
    approved_by: str,
    approval_file: str | None = None,
    record: bool = True,
    force: bool = False,
) -> RunReport:
    """Publish a staged batch with its original run identity; returns the run's final report.

    ``record``: upsert its run-log row, then drop the staging (the driver records the outcome itself and
    then calls :func:`drop_staged`): the row is written before the staging goes, so a crash in between
    leaves a batch that publishes again as a no-op, never a published run the run log calls awaiting.
    ``force``: publish although a later run committed an overlapping window (see
    :func:`superseding_run`)."""
    from lakelogic.engines.spark.pinned import pinned_semantics
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.tables.materialize import materialize_run

    report = staged_report(batch)
    contract = _contract(batch)
    store = _store(batch, contract)
    later = None if force or was_published(spark, batch) else superseding_run(store, report)
    if later is not None:
        raise ApprovalError(
            f"run {report.run_id} of {report.contract} is superseded: run {later['run_id']} (started "
            f"{later['started_at']}) committed an overlapping window, so it already read this batch's "
            "data; publishing it too would write that data again",
            hint="reject it, or force the publish when the two batches hold different rows",
        )
    plan = compile_contract(contract, engine="spark")
    info = report.approval or ApprovalInfo(required=True)
    report.approval = info
    quarantine = batch.quarantine(spark)
    bad = quarantine if quarantine is not None else batch.good(spark).limit(0)
    with pinned_semantics(spark):  # written as the run itself would have written it (§5.3 is in UTC)
        materialize_run(
            spark,
            contract=contract,
            plan=plan,
            good=batch.good(spark),
            bad=bad,
            report=report,
            run_id=report.run_id,
            pipeline_run_id=report.pipeline_run_id,
            window=_window(batch),
            resolved=_target_from(batch.manifest["target"]),
        )
    info.decision = "approved"
    info.approved_by, info.approval_file = approved_by, approval_file
    report.status = RunStatus(info.staged_status or RunStatus.SUCCEEDED)
    report.warnings = [w for w in report.warnings if not w.startswith("awaiting approval (")]
    report.finished_at = datetime.now(UTC)
    if record:
        _record(report, store)
        drop_staged(spark, batch)
    return report


def reject_staged(spark: SparkSession, batch: StagedBatch, *, rejected_by: str) -> RunReport:
    """Drop a staged batch and record the run ``rejected``; the target was never touched."""
    report = staged_report(batch)
    contract = _contract(batch)
    info = report.approval or ApprovalInfo(required=True)
    report.approval = info
    info.decision = "rejected"
    info.approved_by = None
    report.status = RunStatus.REJECTED
    report.warnings = [w for w in report.warnings if not w.startswith("awaiting approval (")]
    report.warnings.append(f"rejected by {rejected_by}: the staged batch was dropped, nothing published")
    report.finished_at = datetime.now(UTC)
    _record(report, _store(batch, contract))
    drop_staged(spark, batch)
    return report
