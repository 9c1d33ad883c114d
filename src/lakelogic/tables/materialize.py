"""Step 13 of a run: write the good rows to the target, then the quarantined rows to the quarantine sink.

The engine calls :func:`materialize_run` with its final frames and report. Each of the two writes is one
commit stamped with the run identity; a write whose stamp is already present is a no-op reported as
``already_committed`` (SEMANTICS §13.4), so a run that crashed between the two commits resumes cleanly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakelogic.errors import SchemaEvolutionError
from lakelogic.plan.access import opt
from lakelogic.plan.steps import CheckDataset, ExternalLogic, Materialize, masked_columns
from lakelogic.report import MaterializationInfo
from lakelogic.tables.spec import WriteSpec, write_spec_from_contract
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget, contract_name_of, resolve_target

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakelogic.report import RunReport
    from lakelogic.tables.spark_write import WriteOutcome

__all__ = ["ResolvedTarget", "already_committed", "materialize_run", "resolve_target"]


def already_committed(
    spark: SparkSession, resolved: ResolvedTarget, run_id: str, *, contract: str = "", role: str = "target"
) -> bool:
    """True when ``resolved`` already holds a commit of ``run_id`` (for ``role`` target or quarantine)."""
    from lakelogic.tables.spark_write import adapter_for

    return adapter_for(spark, resolved).already_committed(
        CommitStamp(run_id=run_id, contract=contract, role=role)
    )


def _materialize_step(plan: Any) -> Materialize | None:
    steps = getattr(plan, "steps", ()) or ()
    return next((s for s in steps if isinstance(s, Materialize)), None)


def materialize_strategy(plan: Any) -> str | None:
    """The write strategy the plan's materialize step names (None: the contract's default)."""
    step = _materialize_step(plan)
    return step.strategy if step is not None else None


def _quarantine_enabled(contract: Any, plan: Any) -> bool:
    settings = getattr(plan, "quarantine", None) or {}
    if "enabled" in settings:
        return bool(settings["enabled"])
    return bool(opt(opt(contract, "quarantine"), "enabled", True))


def _as_of(report: RunReport, window: tuple[datetime | None, datetime | None] | None) -> datetime:
    if window is not None and window[1] is not None:
        return window[1]
    return report.started_at


def materialize_run(
    spark: SparkSession,
    *,
    contract: Any,
    plan: Any,
    good: DataFrame,
    bad: DataFrame,
    report: RunReport,
    target: str | None = None,
    run_id: str,
    pipeline_run_id: str | None = None,
    window: tuple[datetime | None, datetime | None] | None = None,
    env: str | None = None,
    reprocess: bool | None = None,
    as_of: datetime | None = None,
    resolved: ResolvedTarget | None = None,
    before_commit: Callable[[RunReport], None] | None = None,
) -> MaterializationInfo:
    """Write ``good`` to the contract's target and ``bad`` to its quarantine sink (SEMANTICS §13).

    Returns the report's materialization block (also stored on ``report``). ``reprocess`` defaults to
    ``report.window.label == 'reprocess'``. ``resolved``: the target as resolved earlier (publishing a
    batch staged for approval writes where the run would have written). ``before_commit``: called with
    the report just before the target write (the run log's ``committing`` row, so a crash after the commit
    is recovered from it instead of reading the run's window again).
    """
    from lakelogic.tables.spark_evolution import WriteDrift
    from lakelogic.tables.spark_write import write_frame

    step = _materialize_step(plan)
    resolved = resolved or resolve_target(contract, target=target, env=env)
    spec = write_spec_from_contract(
        contract, strategy=step.strategy if step is not None else None, as_of=as_of or _as_of(report, window)
    )
    # what the run already knows about the good frame: its row count (observed) and key uniqueness
    spec = replace(
        spec, batch_rows=report.counts.good, keys_unique=_keys_proven_unique(plan, report, spec.primary_key)
    )
    name = str(getattr(plan, "contract_name", None) or contract_name_of(contract))
    start, end = window if window is not None else (None, None)
    # DRIVER §8: a backfill window already committed (by any pipeline run) is a no-op
    backfill = (report.window.label or "").startswith("backfill_")
    stamp = CommitStamp(
        run_id=run_id,
        contract=name,
        pipeline_run_id=pipeline_run_id,
        window_start=start,
        window_end=end,
        any_pipeline_run=backfill,
    )
    is_reprocess = reprocess if reprocess is not None else report.window.label == "reprocess"
    reprocess_window = window if is_reprocess and spec.strategy in ("append", "overwrite") else None

    info = MaterializationInfo(target=resolved.name, format=resolved.format, strategy=spec.strategy)
    report.materialization = info
    if code_writes_output(plan):
        report.warnings.append(
            "external_logic.handles_output: the code writes the output; the target was not written"
        )
    else:
        if before_commit is not None:
            before_commit(report)
        began = time.perf_counter()
        try:
            outcome = write_frame(spark, good, resolved, spec, stamp, reprocess_window=reprocess_window)
        except SchemaEvolutionError as exc:
            if isinstance(exc.drift, WriteDrift):
                _add_drift(report, exc.drift.added, exc.drift.missing, exc.drift.type_changes)
            raise
        report.add_seconds("write_target", time.perf_counter() - began)
        report.warnings.extend(outcome.warnings)
        _report_write_drift(report, outcome)
        info.committed = outcome.committed or outcome.already_committed
        info.already_committed = outcome.already_committed
        info.snapshot = outcome.snapshot
        info.rows_inserted = outcome.rows_inserted
        info.rows_updated = outcome.rows_updated
        info.rows_deleted = outcome.rows_deleted
        info.versions_closed = outcome.versions_closed

    sink = resolved.quarantine
    if sink is not None and _quarantine_enabled(contract, plan):
        info.quarantine_target = sink.name
        # `write_mode: overwrite` makes the table this run's bad rows, so a clean run empties it; appending
        # nothing would only add an empty commit
        if report.counts.quarantined > 0 or sink.write_mode == "overwrite":
            began = time.perf_counter()
            q_spec = WriteSpec(strategy=sink.write_mode, evolution="allow", as_of=spec.as_of)
            q_stamp = replace(stamp, role="quarantine")
            q_outcome = write_frame(spark, bad, sink, q_spec, q_stamp)
            report.add_seconds("write_quarantine", time.perf_counter() - began)
            if not q_outcome.already_committed:
                info.quarantine_rows_written = q_outcome.rows_inserted
    report.materialization = info
    return info


def target_drift(
    spark: SparkSession,
    *,
    contract: Any,
    plan: Any,
    good: DataFrame,
    target: str | None = None,
    env: str | None = None,
) -> list[str]:
    """The columns where ``good`` and the existing target differ (added, missing or retyped), leaving
    out the columns the strategy writes itself (SCD2 versions, soft deletes). A new target: none."""
    from lakelogic.tables.spark_evolution import schema_drift
    from lakelogic.tables.spark_write import adapter_for, written_by_strategy

    adapter = adapter_for(spark, resolve_target(contract, target=target, env=env))
    stored = adapter.schema() if adapter.exists() else None
    if stored is None:
        return []
    step = _materialize_step(plan)
    spec = write_spec_from_contract(contract, strategy=step.strategy if step is not None else None)
    own = set(written_by_strategy(spec))
    drift = schema_drift(stored, good.schema)
    changed = [*drift.added, *drift.missing, *(c["column"] for c in drift.type_changes)]
    return sorted({c for c in changed if c not in own})


def code_writes_output(plan: Any) -> bool:
    """``external_logic.handles_output: true``: the code wrote the output itself; the run validates,
    reports and writes the quarantine, but not the target (SEMANTICS §19)."""
    steps = getattr(plan, "steps", ()) or ()
    return any(isinstance(step, ExternalLogic) and step.handles_output for step in steps)


def _report_write_drift(report: RunReport, outcome: WriteOutcome) -> None:
    _add_drift(report, outcome.added_columns, outcome.missing_columns, outcome.type_changes)


def _add_drift(
    report: RunReport, added: list[str], missing: list[str], type_changes: list[dict[str, str]]
) -> None:
    """Write-side drift joins the read side's in ``report.schema_drift`` (SEMANTICS §7.1: drift is always
    in the report): columns new to the target count as unknown, target columns the batch lacks as missing."""
    drift = report.schema_drift
    drift.unknown_fields = [*drift.unknown_fields, *(c for c in added if c not in drift.unknown_fields)]
    drift.missing_fields = [*drift.missing_fields, *(c for c in missing if c not in drift.missing_fields)]
    drift.type_changes = [*drift.type_changes, *type_changes]


def _keys_proven_unique(plan: Any, report: RunReport, keys: tuple[str, ...]) -> bool:
    """True when a `unique` dataset rule over a subset of ``keys`` passed: the dataset rules ran on the
    same good frame the write gets, and keys that hold a unique subset are unique themselves. A masked
    key column does not count: the rules saw its real values, the write gets the masked ones."""
    if not keys:
        return False
    passed = {r.name for r in report.dataset_rules if r.passed is True}
    steps = getattr(plan, "steps", ()) or ()
    rules = [rule for step in steps if isinstance(step, CheckDataset) for rule in step.rules]
    key_set = set(keys) - masked_columns(steps)
    return any(
        rule.name in passed and rule.unique_columns and set(rule.unique_columns) <= key_set for rule in rules
    )
