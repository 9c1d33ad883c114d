"""One contract run on Spark end to end: evaluate, act, count, gate, publish, report (SEMANTICS §8, §12, §22).

Actions: when the run writes rows somewhere (``output_good``, or a materialization with a scratch space,
see ``outputs.scratch_root``), every row is evaluated once by the one-job split (``fanout``) into staged
files that then serve the good output, the quarantine, the dataset rules and the table writes; otherwise
the good and the quarantine frame are each consumed by exactly one action (a staged Parquet write or a
no-op sink). Every count comes from the observations those actions fill. Only when the run passes its
gates (reconciliation, empty source, quarantine/dataset halts) is the target materialized and are staged
outputs moved into place, so a failed run writes nothing.

Persisting the evaluated frame (``LAKELOGIC_PERSIST``) trades a cache write for re-evaluating the
contract in each action; ``auto`` (default) persists (DISK_ONLY) only when a third consumer (dataset
rules, unless they can re-read the staged good Parquet output) or a split post phase would otherwise
re-run the pre phase; ``none``, ``disk`` and
``memory_and_disk`` force a choice. The cache is released at the end of the run.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.dataset_rules import evaluate_dataset_rules, failed_error_rules
from lakelogic.engines.spark.errors_text import without_jvm_frames
from lakelogic.engines.spark.executor import Evaluation, PlanExecutor
from lakelogic.engines.spark.fanout import FanoutOutputs
from lakelogic.engines.spark.ops import resolve_pending_warnings
from lakelogic.engines.spark.outputs import ScratchSpace, StagedOutput, noop_action, scratch_root
from lakelogic.engines.spark.reporting import fill_counts, fill_identity, fill_identity_from_contract
from lakelogic.engines.step_clock import StepClock
from lakelogic.errors import (
    CleanupFailedError,
    DatasetRuleHalt,
    EmptySourceError,
    EngineError,
    ExternalLogicError,
    LakeLogicError,
    QuarantineHalt,
    ReconciliationError,
    UnsupportedError,
)
from lakelogic.plan.clock import pin_clock
from lakelogic.plan.compliance import residency_warning
from lakelogic.plan.sqlutil import first_line
from lakelogic.plan.steps import CleanupSource, DatasetRule, EvaluateSlos
from lakelogic.report import DatasetRuleResult, ErrorBlock, RunReport, note_landed_commit
from lakelogic.sources.unreadable import TEXT_FILE_PROBLEMS, unreadable_source
from lakelogic.sources.windows import ReadWindow
from lakelogic.types import RunStatus

_PERSIST_LEVELS: dict[str, StorageLevel | None] = {
    "none": None,
    "memory_and_disk": StorageLevel.MEMORY_AND_DISK,
    "disk": StorageLevel.DISK_ONLY,
}


@dataclass
class RunRequest:
    source: DataFrame | str | Path | None = None
    materialize: bool = False
    target: str | None = None
    output_good: str | None = None
    output_bad: str | None = None
    run_id: str = ""
    pipeline_run_id: str | None = None
    window: Any = None
    env: str | None = None
    # The window with its label (lakelogic.sources.windows.ReadWindow) for the source reader.
    source_window: Any = None
    # The pipeline run's reference cache (DRIVER §12; lakelogic.engines.spark.link_cache.LinkCache).
    link_cache: Any = None
    # The approval gate (DRIVER §11; lakelogic.plan.approval.ApprovalGate); None: no approval.
    approval: Any = None
    # Called with the report just before the target commit: the caller's run-log ``committing`` row.
    before_commit: Callable[[RunReport], None] | None = None


@dataclass
class RunOutcome:
    good: DataFrame | None
    bad: DataFrame | None
    report: RunReport
    evaluation: Evaluation | None = None
    # the rows read at step 1, kept so a run that fails before its counts are observed still reports them
    read_frame: DataFrame | None = None


def persist_level() -> StorageLevel | str | None:
    """``LAKELOGIC_PERSIST``: ``auto`` (the executor decides), ``none``, ``disk``, ``memory_and_disk``."""
    name = os.environ.get("LAKELOGIC_PERSIST", "auto").strip().lower()
    if name == "auto":
        return "auto"
    if name not in _PERSIST_LEVELS:
        raise EngineError(f"LAKELOGIC_PERSIST={name!r}; allowed: auto, {', '.join(_PERSIST_LEVELS)}")
    return _PERSIST_LEVELS[name]


def _user_error(exc: BaseException) -> LakeLogicError | None:
    """Errors caused by the contract or the data (returned as failed runs), else None (re-raised)."""
    if isinstance(exc, LakeLogicError):
        return exc
    try:
        from pyspark.errors import AnalysisException, ParseException
    except ImportError:  # pragma: no cover
        return None
    if isinstance(exc, AnalysisException | ParseException):
        first = first_line(exc)
        return EngineError(f"Spark rejected the contract's SQL: {_without_hidden_columns(first)}")
    cause = _sql_runtime_error(str(exc))
    if cause is not None:
        return EngineError(f"the contract's SQL failed while running: {cause}")
    python = _python_task_error(f"{type(exc).__name__}: {exc}")
    if python is not None:
        # LakeLogic evaluates contracts as SQL, never in Python workers: a Python function that failed in a
        # task is the user's (external_logic, or one inside a frame handed to run())
        return ExternalLogicError(
            f"Python code failed in a Spark task (a function of external_logic or of the source frame): "
            f"{python}"
        )
    # a run's jobs also read its target: only text-file failures surely come from the source
    return unreadable_source(exc, problems=TEXT_FILE_PROBLEMS)


_PYTHON_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*")


def _python_task_error(text: str) -> str | None:
    """The Python exception line (``ValueError: udf boom``) of a Python worker's failure, or None."""
    if "PythonException" not in text or "Traceback (most recent call last)" not in text:
        return None
    tail = text.split("Traceback (most recent call last)", 1)[1]
    lines: list[str] = []
    for line in (raw.strip() for raw in tail.splitlines()):
        if line.startswith("at "):  # the JVM frames after the Python traceback
            break
        lines.append(line)
    found = [line for line in lines if _PYTHON_ERROR_LINE.match(line)]
    return found[-1] if found else "see the traceback"


_HIDDEN_SUGGESTION = re.compile(r",?\s*`(?:__ll_|_ll_)[^`]*`")


def _without_hidden_columns(text: str) -> str:
    """Spark's "Did you mean one of the following? [...]" lists every column of the plan, LakeLogic's
    hidden working columns (`__ll_raw_*`, `_ll_*`) included; the user never wrote those, so they go."""
    return _HIDDEN_SUGGESTION.sub("", text).replace("[, ", "[")


# Spark error classes a contract's own SQL raises on some row (raise_error/assert_true, ANSI arithmetic
# and casts): the contract and its data, not LakeLogic, so a failed run rather than a crash.
_SQL_RUNTIME_ERRORS = (
    "USER_RAISED_EXCEPTION",
    "DIVIDE_BY_ZERO",
    "ARITHMETIC_OVERFLOW",
    "CAST_INVALID_INPUT",
    "CAST_OVERFLOW",
    "INVALID_ARRAY_INDEX",
    "NUMERIC_VALUE_OUT_OF_RANGE",
)


_BAD_PATTERN = "java.util.regex.PatternSyntaxException: "


def _sql_runtime_error(text: str) -> str | None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _BAD_PATTERN in line:
            # a pattern computed by the contract's SQL (literal ones are refused before the run reads);
            # Java's description spans the message line and the two lines that quote and point into it
            described = [line.split(_BAD_PATTERN, 1)[1].strip(), *lines[i + 1 : i + 3]]
            return ("invalid regular expression: " + "\n".join(described))[:500]
        if any(f"[{name}" in line for name in _SQL_RUNTIME_ERRORS):
            return line.split("Exception: ", 1)[-1].strip()[:500]
        # Spark 3.5's raise_error/assert_true: a bare RuntimeException thrown by generated code
        raised = "java.lang.RuntimeException: " in line
        if raised and i + 1 < len(lines) and "GeneratedClass" in lines[i + 1]:
            return line.split("java.lang.RuntimeException: ", 1)[1].strip()[:500]
    return None


def run_contract(
    spark: SparkSession, contract: Any, plan_factory: Callable[[], Any], request: RunRequest
) -> RunOutcome:
    report = RunReport(
        run_id=request.run_id,
        pipeline_run_id=request.pipeline_run_id,
        contract=str(getattr(contract, "contract_name", "contract")),
        engine="spark",
        lakelogic_version=_version(),
        environment=request.env or os.environ.get("LAKELOGIC_ENV") or None,
    )
    progress = StepClock()
    outcome = RunOutcome(None, None, report)
    staged: list[StagedOutput | FanoutOutputs | ScratchSpace] = []
    try:
        _run(spark, contract, plan_factory, request, report, progress, outcome, staged)
    except BaseException as exc:
        for out in staged:
            out.discard()
        user = _user_error(exc)
        if report.title is None:  # failed before the plan gave the report its identity
            fill_identity_from_contract(report, contract)
        report.error = ErrorBlock(
            type=user.error_type if user is not None else "internal",
            message=without_jvm_frames(str(user) if user is not None else f"{type(exc).__name__}: {exc}"),
            step=progress.step,
            traceback="".join(traceback.format_exception(exc)),
        )
        if user is not None:
            _count_source_of_failed_run(report, outcome)
        note_landed_commit(report)
        _add_timings(report, progress)
        report.finish(RunStatus.FAILED)
        if outcome.evaluation is not None:
            outcome.evaluation.release()
        if user is None:
            if isinstance(exc, Exception):  # the failed report rides along, so the API can still notify
                exc.__dict__.setdefault("lakelogic_report", report)
            raise
        return outcome
    _add_timings(report, progress)
    report.finish()
    return outcome


def _count_source_of_failed_run(report: RunReport, outcome: RunOutcome) -> None:
    """§12 ``source`` is the rows read at step 1, on a failed run too: a run that stopped before any action
    observed them (a missing required column, a plan error in an op) counts them with one job. A count that
    fails itself leaves 0 and says so."""
    if report.counts.source or outcome.read_frame is None:
        return
    try:
        report.counts.source = int(outcome.read_frame.count())
    except Exception as exc:  # noqa: BLE001 - the run's own error is what the report is about
        first = first_line(exc)
        report.warnings.append(f"the source rows of this failed run could not be counted: {first[:300]}")


def _add_timings(report: RunReport, clock: StepClock) -> None:
    for step, seconds in clock.timings.items():
        report.add_seconds(step, seconds)


_REBASE_SETTINGS = (
    "spark.sql.parquet.datetimeRebaseModeInWrite",
    "spark.sql.parquet.datetimeRebaseModeInRead",
    "spark.sql.parquet.int96RebaseModeInWrite",
    "spark.sql.parquet.int96RebaseModeInRead",
    "spark.sql.avro.datetimeRebaseModeInWrite",
    "spark.sql.avro.datetimeRebaseModeInRead",
)


_AQE_EMPTY_RELATION_RULE = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"


def _keep_observations_on_empty_relations(spark: SparkSession) -> None:
    """Adaptive execution replaces a stage that turned out empty (every row quarantined or filtered
    before a deduplicate, join or aggregation) with an empty relation, and the count observations in it
    go with it: the run could not account for its rows. Excluding that one rule keeps them."""
    key = "spark.sql.adaptive.optimizer.excludedRules"
    current = spark.conf.get(key, "") or ""
    rules = [r.strip() for r in current.split(",") if r.strip()]
    if _AQE_EMPTY_RELATION_RULE not in rules:
        spark.conf.set(key, ",".join([*rules, _AQE_EMPTY_RELATION_RULE]))


def _run(
    spark: SparkSession,
    contract: Any,
    plan_factory: Callable[[], Any],
    request: RunRequest,
    report: RunReport,
    progress: StepClock,
    outcome: RunOutcome,
    staged: list[StagedOutput | FanoutOutputs | ScratchSpace],
) -> None:
    # One 'now' for the whole run: every job of the run evaluates the same clock (plan/clock.py).
    as_of = datetime.now(UTC)
    plan = pin_clock(plan_factory(), as_of)
    fill_identity(report, plan, contract)
    if request.materialize:  # a target Spark cannot write fails now, not after every row was checked
        from lakelogic.tables.target import require_spark_writable, resolve_target

        require_spark_writable(resolve_target(contract, target=request.target, env=request.env))
    residency = residency_warning(contract)
    if residency is not None:
        report.warnings.append(residency)
    if isinstance(request.window, tuple) and len(request.window) == 2:
        report.window.start, report.window.end = request.window
        # the caller's label (reprocess, backfill_*, ...) decides how the write treats the window
        report.window.label = getattr(request.source_window, "label", None) or "window"
    report.warnings.extend(plan.warnings)
    # Strict, predictable datetime parsing: invalid text gives NULL (a cast failure), never an exception.
    spark.conf.set("spark.sql.legacy.timeParserPolicy", "CORRECTED")
    # Dates before 1582-10-15 and timestamps before 1900 are written and read as they are (proleptic
    # Gregorian, what every current writer uses); Spark 3.5's default refuses them with an exception.
    for key in _REBASE_SETTINGS:
        spark.conf.set(key, "CORRECTED")
    _keep_observations_on_empty_relations(spark)
    ctx = SparkRunContext(
        spark=spark,
        run_id=request.run_id,
        as_of=as_of,
        contract_dir=getattr(contract, "contract_dir", None),
        pipeline_run_id=request.pipeline_run_id,
    )
    ctx.link_cache = request.link_cache
    ctx.source_window = request.source_window or ReadWindow.of(request.window)
    if ctx.source_window is None:  # standalone: the contract's watermark_strategy bounds the read (§3.4)
        ctx.source_window = _standalone_window(spark, contract, plan, as_of, request, report)
    else:
        ctx.source_window = _caller_window(spark, plan, ctx.source_window)
    ctx.manifest = _file_manifest(spark, plan, ctx, request)
    contract_dict = contract.model_dump(mode="json") if hasattr(contract, "model_dump") else None
    # A materialized run without output_good stages its good rows in a scratch space, so the one-job
    # split serves the table writes and the dataset rules as it serves file outputs.
    scratch = _scratch_space(spark, request)
    if scratch is not None:
        staged.append(scratch)
    good_path = request.output_good or (scratch.good_path() if scratch is not None else None)
    executor = PlanExecutor(
        plan,
        ctx,
        persist=persist_level(),
        contract_dict=contract_dict,
        good_reread=good_path is not None,
        clock=progress,
    )
    try:
        with progress.stage("read"):
            ev = executor.evaluate(request.source)
    finally:  # a run that fails after its read still reports what it read (§22 source block)
        if executor.source_info is not None:
            report.source = executor.source_info
        outcome.read_frame = executor.read_frame
    outcome.evaluation = ev
    if ctx.source_window_state is not None:
        ctx.source_window_state.fill_report(report)
    report.schema_drift = ev.drift
    if ev.good is None or ev.bad is None:
        _empty(report, ev, ctx)
        _service_levels(spark, contract, plan, report, request, None, as_of, progress)
        return
    outcome.good, outcome.bad = ev.good, ev.bad
    if ev.fanout is not None and good_path is not None:
        frames = _one_job(spark, executor, ev, request, progress, staged, good_path)
    else:
        frames = _two_actions(spark, ev, request, progress, staged, good_path)
    progress.step = "counts"
    fill_counts(report, ev, plan)
    if ctx.source_window_state is not None and report.counts.source > 0:
        ctx.source_window_state.fill_current(report)
    resolve_pending_warnings(ctx)  # op warnings observed during the actions (lookup_duplicate_keys)
    report.warnings.extend(w for w in ctx.warnings if w not in report.warnings)
    if report.counts.source == 0:
        for pending in staged:
            pending.discard()
        _empty(report, ev, ctx)
        _service_levels(spark, contract, plan, report, request, None, as_of, progress)
        return
    if not report.counts.reconciles():
        c = report.counts
        raise ReconciliationError(
            f"counts do not reconcile: source {c.source} + expanded {c.expanded} != good {c.good} + "
            f"quarantined {c.quarantined} + filtered {c.filtered}"
        )
    if ev.dataset is not None and ev.dataset.rules:
        with progress.stage("dataset_rules"):
            report.dataset_rules = _dataset_rules(spark, frames.good, ev, ctx.links, rows=report.counts.good)
    _gates(report, ev)
    failed_ds = failed_error_rules(report.dataset_rules)
    if failed_ds or (report.counts.quarantined > 0 and report.counts.good == 0):
        report.status = RunStatus.PARTIAL
    else:
        report.status = RunStatus.SUCCEEDED
    if request.materialize and _held_for_approval(spark, contract, plan, frames, report, request, progress):
        # staged for approval (DRIVER §11): no table commit, no file outputs, no service levels, no
        # lifecycle; the staged batch is the only copy of the rows until it is approved
        for pending in staged:
            pending.discard()
        staged.clear()
        if request.output_good or request.output_bad:
            report.warnings.append("output_good/output_bad were not written: the batch awaits approval")
        ev.release()
        return
    # Tables first: the frames may be served by staged files that the publish moves or removes.
    if request.materialize:
        progress.step = "write_target"  # materialize times its target and quarantine writes itself
        report.materialization = _materialize(spark, contract, plan, frames, report, request)
        _record_manifest(spark, ctx, report, executor.files_read)
    # step 15 before the publish: the staged files still serve the good rows of an unmaterialized run
    _service_levels(spark, contract, plan, report, request, frames.good, as_of, progress)
    progress.step = "publish"
    for pending in staged:
        pending.commit()
    staged.clear()
    ev.release()
    cleanups = plan.of_kind(CleanupSource)
    if cleanups and request.materialize and report.materialization is not None:
        with progress.stage("lifecycle"):
            windowed = ctx.source_window_state is not None and (
                ctx.source_window_state.decision.row_window is not None
            )
            _post_ingestion(
                report,
                cleanups[0],
                executor.files_read,
                request.run_id,
                rows_windowed=windowed,
                some_rows_only=executor.some_rows_only,
            )


def _file_manifest(spark: SparkSession, plan: Any, ctx: SparkRunContext, request: RunRequest) -> Any:
    """The manifest of a `manifest` watermark strategy (§3.4), for a run reading the contract's source."""
    from lakelogic.engines.spark.manifest_store import load_manifest, uses_manifest
    from lakelogic.plan.steps import ReadSource

    steps = plan.of_kind(ReadSource)
    if request.source is not None or not steps or not uses_manifest(steps[0]):
        return None
    # the node id (DRIVER §1: `<layer>.<contract>`): bronze and silver contracts may share a name
    name = f"{plan.layer}.{plan.contract_name}" if plan.layer else plan.contract_name
    return load_manifest(spark, steps[0], contract_name=name, contract_dir=ctx.contract_dir)


def _record_manifest(spark: SparkSession, ctx: SparkRunContext, report: RunReport, files: list[str]) -> None:
    """§3.4: once the target holds the run's rows, the manifest lists the files they came from. Files whose
    rows a row window cut (a reprocess or watermark window) are not listed: their other rows are not in the
    target, and listing them would keep later runs from reading those. An ``already_committed`` run wrote
    nothing: the files it read now may include some the earlier commit never saw, so it lists none."""
    from lakelogic.engines.spark.manifest_store import save_manifest

    written = report.materialization
    state = ctx.source_window_state
    if ctx.manifest is None or written is None or not written.committed or written.already_committed:
        return
    if not files or (state is not None and state.decision.row_window is not None):
        return
    save_manifest(spark, ctx.manifest.location, files, datetime.now(UTC))


def _service_levels(
    spark: SparkSession,
    contract: Any,
    plan: Any,
    report: RunReport,
    request: RunRequest,
    good: DataFrame | None,
    as_of: datetime,
    progress: StepClock,
) -> None:
    """§15: measured on the published target (the good rows when nothing is materialized)."""
    steps = plan.of_kind(EvaluateSlos)
    if not steps:
        return
    from lakelogic.engines.spark.slos import evaluate_slos

    def published() -> DataFrame | None:
        if request.materialize:
            return _target_frame(spark, contract, request)
        return good

    def history(name: str, since: datetime) -> list[dict[str, Any]] | None:
        return _run_history(contract, name, since)

    with progress.stage("slo"):
        report.service_levels = evaluate_slos(
            steps[0], published=published, batch=good, report=report, as_of=as_of, history=history
        )


def _target_frame(spark: SparkSession, contract: Any, request: RunRequest) -> DataFrame | None:
    from lakelogic.tables.spark_write import adapter_for
    from lakelogic.tables.target import resolve_target

    adapter = adapter_for(spark, resolve_target(contract, target=request.target, env=request.env))
    return adapter.read() if adapter.exists() else None


def _run_history(contract: Any, name: str, since: datetime) -> list[dict[str, Any]] | None:
    """The contract's run-log rows since ``since``, newest first, in the run log it records to (None: no
    run log yet); resets and skipped runs are no runs."""
    from lakelogic.runlog import store_for_contract

    store = store_for_contract(contract)
    if not store.exists():
        return None
    rows = store.query(contract=name)
    return [
        r
        for r in rows
        if str(r["status"]) not in ("reset", "skipped")
        and (r.get("started_at") is None or _aware(r["started_at"]) >= since)
    ]


def _aware(value: Any) -> Any:
    """Run-log timestamps are naive UTC; compare them with the run's aware clock."""
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


def _post_ingestion(
    report: RunReport,
    step: CleanupSource,
    files: list[str],
    run_id: str,
    *,
    rows_windowed: bool,
    some_rows_only: bool = False,
) -> None:
    """§17, after every commit: delete or archive the files this run read. A failure fails the run when
    the contract says the cleanup is blocking (the data stays committed), else it is a warning.

    ``rows_windowed``: the run took only some rows of its files (a watermark window); removing the
    files would lose the others, so nothing is cleaned and a warning says why. ``some_rows_only``: the
    same for a ``partition_filters`` entry on a data column rather than a ``key=value`` folder."""
    from lakelogic.sources.lifecycle import CleanupResult, clean_up_files

    if report.source.type == "dataframe":
        return  # the caller handed the rows in: this run read no file of the contract's source
    location = report.source.path or step.root or ""
    if rows_windowed:
        report.warnings.append(
            "post_ingestion skipped: the run read only the rows of its watermark window, "
            "so its files still hold rows for later windows"
        )
        return
    if some_rows_only:
        report.warnings.append(
            "post_ingestion skipped: source.partition_filters names a data column, not a key=value "
            "folder, so the run took only some rows of its files and they still hold the others"
        )
        return
    if "://" in location and not location.startswith("file:"):
        result = CleanupResult(failures=[f"{location}: object-store sources are not cleaned up"])
    elif not files:
        return
    else:
        result = clean_up_files(
            files, action=step.action, root=location, archive_path=step.archive_path, run_id=run_id
        )
    if result.done:
        report.warnings.append(
            f"post_ingestion: {len(result.done)} source file(s) {step.action}d; the result's good/bad "
            "frames were read from them and cannot be read again (read the target instead)"
        )
    if not result.failures:
        return
    shown = "; ".join(result.failures[:5]) + (" ..." if len(result.failures) > 5 else "")
    message = f"post_ingestion {step.action} failed for {len(result.failures)} file(s): {shown}"
    if step.blocking:
        raise CleanupFailedError(message + " (the run's data is committed)")
    report.warnings.append(f"cleanup_failed: {message}")


def _standalone_window(
    spark: SparkSession, contract: Any, plan: Any, as_of: datetime, request: RunRequest, report: RunReport
) -> ReadWindow | None:
    from lakelogic.engines.spark.source_bounds import NO_WATERMARK_COLUMN, PROCESSED_AT, standalone_window
    from lakelogic.plan.steps import ReadSource

    steps = plan.of_kind(ReadSource)
    window = standalone_window(spark, contract, steps[0] if steps else None, as_of, target=request.target)
    if window is not None:
        report.window.start, report.window.end = window.start, window.end
        report.window.label, report.window.reason = window.label, window.reason
        if window.reason == NO_WATERMARK_COLUMN and steps:
            field = steps[0].watermark_field or PROCESSED_AT
            report.warnings.append(
                f"incremental source: the target has no column {field!r} to take the max_target watermark "
                "from, so this run read the whole source"
                + (
                    " (it is a lineage column: enable lineage, or set source.watermark_field)"
                    if field == PROCESSED_AT
                    else ""
                )
            )
    return window


def _caller_window(spark: SparkSession, plan: Any, window: ReadWindow) -> ReadWindow:
    from lakelogic.engines.spark.source_bounds import with_lookback
    from lakelogic.plan.steps import ReadSource

    steps = plan.of_kind(ReadSource)
    return with_lookback(spark, steps[0] if steps else None, window)


def _dataset_rules(
    spark: SparkSession, good: DataFrame, ev: Evaluation, links: Mapping[str, DataFrame], *, rows: int
) -> list[DatasetRuleResult]:
    """Step 11 over the final good frame. A rule reading a masked column (or a query whose columns could
    not be attributed) evaluates on the good frame before masking: masking is step 12, after every rule
    has seen the real values (SEMANTICS §5.4). The others read ``good``, which may be the staged output."""
    assert ev.dataset is not None
    rules = list(ev.dataset.rules)
    unmasked = ev.good_unmasked

    def sees_masked(rule: DatasetRule) -> bool:
        return bool(set(rule.columns) & ev.masked_columns) or (rule.query is not None and not rule.columns)

    real = [i for i, rule in enumerate(rules) if unmasked is not None and sees_masked(rule)]
    if not real:
        return evaluate_dataset_rules(spark, good, rules, links, rows=rows)
    assert unmasked is not None
    results: dict[int, DatasetRuleResult] = {}
    for frame, picked in ((unmasked, real), (good, [i for i in range(len(rules)) if i not in real])):
        if picked:
            found = evaluate_dataset_rules(spark, frame, [rules[i] for i in picked], links, rows=rows)
            results.update(zip(picked, found, strict=True))
    return [results[i] for i in range(len(rules))]


@dataclass
class _Frames:
    """What the rest of the run reads after the actions: the good rows (dataset rules, materialization)
    and the quarantined rows (materialization), each served by staged files when there are some."""

    good: DataFrame
    bad: DataFrame


def _scratch_space(spark: SparkSession, request: RunRequest) -> ScratchSpace | None:
    if not request.materialize or request.output_good:
        return None
    root = scratch_root(spark)
    return ScratchSpace(spark, root, request.run_id) if root is not None else None


def _one_job(
    spark: SparkSession,
    executor: PlanExecutor,
    ev: Evaluation,
    request: RunRequest,
    progress: StepClock,
    staged: list[StagedOutput | FanoutOutputs | ScratchSpace],
    good_path: str,
) -> _Frames:
    """Every row evaluated once, good and quarantined rows written by one job (engines.spark.fanout)."""
    assert ev.fanout is not None
    fan = FanoutOutputs(spark, ev.fanout, good_path, request.run_id)
    if request.output_good:  # else it lives in the scratch space, removed with it
        staged.append(fan)
    with progress.stage("write_target" if request.output_good else "evaluate"):
        fan.stage(ev.observations)
    # Rebuilding the quarantine plans a re-evaluation for some runs: only when something reads it.
    needed = bool(request.output_bad or request.materialize)
    quarantine = fan.quarantine(lambda subset: _reevaluate(executor, ev, subset)) if needed else ev.bad
    assert quarantine is not None
    if request.output_bad:
        out = StagedOutput(spark, request.output_bad, request.run_id)
        staged.append(out)
        with progress.stage("write_quarantine"):
            out.write(quarantine)
    return _Frames(good=fan.good_rows(), bad=quarantine)


def _two_actions(
    spark: SparkSession,
    ev: Evaluation,
    request: RunRequest,
    progress: StepClock,
    staged: list[StagedOutput | FanoutOutputs | ScratchSpace],
    good_path: str | None,
) -> _Frames:
    """Each frame consumed by one action (a staged write or a no-op); observations fill every count."""
    assert ev.good is not None and ev.bad is not None
    good = ev.good
    if good_path is not None:
        out = StagedOutput(spark, good_path, request.run_id)
        if request.output_good:  # else it lives in the scratch space, removed with it
            staged.append(out)
        with progress.stage("write_target" if request.output_good else "evaluate"):
            out.write(ev.good)
        # The staged Parquet holds exactly the final good rows: the dataset rules and the table write
        # read it back instead of evaluating the whole contract again.
        good = out.read()
    else:
        with progress.stage("evaluate"):
            noop_action(ev.good)
    if request.output_bad:
        out = StagedOutput(spark, request.output_bad, request.run_id)
        staged.append(out)
        with progress.stage("write_quarantine"):
            out.write(ev.bad)
    else:
        with progress.stage("evaluate"):
            noop_action(ev.bad)
    return _Frames(good=good, bad=ev.bad)


def _reevaluate(executor: PlanExecutor, ev: Evaluation, subset: str) -> DataFrame:
    """The quarantined rows of ``subset`` evaluated again (warnings of that partial run are not kept)."""
    ctx = executor.ctx
    warnings, pending = list(ctx.warnings), list(ctx.pending_warnings)
    again = PlanExecutor(
        executor.plan, ctx, persist=None, contract_dict=executor.contract_dict, subset=subset
    ).evaluate(ev.source_frame)
    ctx.warnings[:], ctx.pending_warnings[:] = warnings, pending
    # released with the run's own frames: a cached re-evaluation left behind would serve its rows to a
    # later run over the same files
    ev.persisted.extend(again.persisted)
    if again.bad is None:
        raise EngineError(f"internal: re-evaluating the {subset!r} quarantine subset read nothing")
    return again.bad


def _empty(report: RunReport, ev: Evaluation, ctx: SparkRunContext) -> None:
    report.counts.source = 0
    if ev.empty_behavior == "skip":
        report.status = RunStatus.NO_NEW_DATA
        ev.release()
        return
    raise EmptySourceError(
        "the source has no rows", hint="set source.empty_behavior: skip to allow empty loads"
    )


def _gates(report: RunReport, ev: Evaluation) -> None:
    quarantined = report.counts.quarantined
    if not ev.quarantine_enabled and quarantined > 0:
        raise QuarantineHalt(
            f"{quarantined} row(s) failed error-severity rules and quarantine is disabled; nothing written"
        )
    if ev.fail_on_quarantine and quarantined > 0:
        raise QuarantineHalt(
            f"{quarantined} row(s) were quarantined and quarantine.fail_on_quarantine is set"
        )
    if ev.dataset is not None and ev.dataset.fail_pipeline_on_dataset_error:
        failed = failed_error_rules(report.dataset_rules)
        if failed:
            names = ", ".join(r.name for r in failed)
            raise DatasetRuleHalt(f"dataset rule(s) failed: {names} (fail_pipeline_on_dataset_error)")


def _held_for_approval(
    spark: SparkSession,
    contract: Any,
    plan: Any,
    frames: _Frames,
    report: RunReport,
    request: RunRequest,
    progress: StepClock,
) -> bool:
    if request.approval is None:
        return False
    from lakelogic.engines.spark.approval_gate import hold_for_approval

    with progress.stage("approval"):
        return hold_for_approval(
            spark,
            gate=request.approval,
            contract=contract,
            plan=plan,
            good=frames.good,
            bad=frames.bad,
            report=report,
            run_id=request.run_id,
            pipeline_run_id=request.pipeline_run_id,
            window=request.window,
            target=request.target,
            env=request.env,
        )


def _materialize(
    spark: SparkSession, contract: Any, plan: Any, frames: _Frames, report: RunReport, request: RunRequest
) -> Any:
    try:
        from lakelogic.tables.materialize import materialize_run
    except ImportError as exc:
        raise UnsupportedError(
            "materialization is provided by lakelogic.tables, which is not installed"
        ) from exc
    return materialize_run(
        spark,
        contract=contract,
        plan=plan,
        good=frames.good,
        bad=frames.bad,
        report=report,
        target=request.target,
        run_id=request.run_id,
        pipeline_run_id=request.pipeline_run_id,
        window=request.window,
        env=request.env,
        before_commit=request.before_commit,
    )


def _version() -> str:
    from lakelogic import __version__

    return __version__
