"""The Python API: ``DataProcessor(contract).run(source) -> RunResult`` (SEMANTICS §22).

One call runs one contract: load and compile the contract, execute the plan on Spark (single scan,
counts from observations), gate (reconciliation, halts, status), then optionally write Parquet outputs
and materialize through ``lakelogic.tables``.

Error policy (documented choice): a run is never left half-reported. Every exception is recorded in
``report.error`` ({type, message, step, traceback}) with status ``failed``. *User* errors (anything
deriving from :class:`~lakelogic.errors.LakeLogicError`: bad contract, missing columns, empty source,
halts, commit failures) are returned as a failed :class:`RunResult` so pipelines can inspect the
report; *programming* errors (any other exception: bugs, Py4J crashes) are recorded and re-raised.
Contract loading/compilation errors are raised as :class:`~lakelogic.errors.ContractError` /
:class:`~lakelogic.errors.PlanError` from the constructor, because there is no run to report yet.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakelogic.report import RunReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakelogic.contract.models import Contract
    from lakelogic.plan.steps import Plan
    from lakelogic.tables.forget import ErasureResult, RetentionResult


@dataclass
class RunResult:
    """Outcome of one run: the good frame, the quarantine frame and the report.

    ``good``/``bad`` are Spark DataFrames (``None`` when the run failed before producing them).
    Unpacks as ``good, bad = result``.
    """

    good: DataFrame | None
    bad: DataFrame | None
    report: RunReport
    extras: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[DataFrame | None]:
        yield self.good
        yield self.bad

    @property
    def status(self) -> str:
        return str(self.report.status)

    @property
    def ok(self) -> bool:
        return self.report.status != "failed"


class DataProcessor:
    """Runs one contract on Spark.

    ``contract``: a path to a contract YAML, a mapping (the parsed YAML) or a loaded ``Contract``.
    ``overrides``: ``{"dotted.path": value}`` applied at load time (same as ``--set``).
    ``check_channels``: refuse a strict contract with unusable notification channels (§16; default).
    """

    def __init__(
        self,
        contract: str | Path | Mapping[str, Any] | Contract,
        engine: str = "spark",
        spark: SparkSession | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        check_channels: bool = True,
    ) -> None:
        if engine != "spark":
            from lakelogic.errors import UnsupportedError

            raise UnsupportedError(f"engine {engine!r} is not available; this build runs on 'spark'")
        self.engine = engine
        self._spark = spark
        self.contract = load_run_contract(contract, overrides)
        if check_channels:  # maintenance (forget, retention) must not depend on a webhook's secret
            _refuse_unusable_channels(self.contract)
        self._plan: Plan | None = None

    @property
    def plan(self) -> Plan:
        """The compiled plan (compiled once, on first use)."""
        if self._plan is None:
            from lakelogic.plan.compiler import compile_contract

            self._plan = compile_contract(self.contract, engine=self.engine)
        return self._plan

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from lakelogic.engines.spark.session import spark_session

            self._spark = spark_session()
        return self._spark

    def run(
        self,
        source: DataFrame | str | Path | None = None,
        *,
        materialize: bool = False,
        target: str | None = None,
        output_good: str | Path | None = None,
        output_bad: str | Path | None = None,
        run_id: str | None = None,
        pipeline_run_id: str | None = None,
        window: Any = None,
        env: str | None = None,
        link_cache: Any = None,
        notify: bool = True,
        approval_required: bool = False,
        approval_file: str | Path | None = None,
        approval: Any = None,
        record: bool | None = None,
        before_commit: Callable[[RunReport], None] | None = None,
    ) -> RunResult:
        """Run the contract once. ``source``: a Spark DataFrame, a path, or None (``contract.source``).
        ``env``: the active environment (SEMANTICS §7.3; else ``LAKELOGIC_ENV``). ``link_cache``: a
        pipeline run's reference cache (DRIVER §12), shared by the contracts of one driver run.
        ``notify=False``: send no §16 notifications (the driver sends them once per contract, after its
        retries). Approval (DRIVER §11, materialized runs): required with ``approval_required`` or the
        contract's ``metadata.approval_required``; ``approval_file`` may approve the batch; a triggered,
        unapproved batch is staged and the run ends ``awaiting_approval``. ``approval``: a gate already
        decided (:class:`lakelogic.plan.approval.ApprovalGate`, as the driver passes it). ``record``:
        write the run-log row (DRIVER §15.1; default: when materializing; the driver and ``lakelogic
        run`` record their own rows). ``before_commit``: called with the report just before the target
        commit; a recorded run writes its run-log ``committing`` row there by default (the row a crash
        after the commit is recovered from, instead of the run's window being read again)."""
        from lakelogic.engines.spark.pinned import pinned_semantics
        from lakelogic.engines.spark.runner import RunRequest, run_contract
        from lakelogic.sources.windows import ReadWindow

        # ``window``: (start, end), or an object with start/end/label/reason (the driver's Window); the
        # label decides how file sources select (by arrival time, or by the date in the file name).
        read_window = ReadWindow.of(window)
        if approval is None and materialize:
            approval = self._approval_gate(approval_required, approval_file, pipeline_run_id)
        request = RunRequest(
            source=source,
            materialize=materialize,
            target=target,
            output_good=str(output_good) if output_good is not None else None,
            output_bad=str(output_bad) if output_bad is not None else None,
            run_id=run_id or str(uuid.uuid4()),
            pipeline_run_id=pipeline_run_id,
            window=read_window.bounds() if read_window is not None else None,
            source_window=read_window,
            env=env,
            link_cache=link_cache,
            approval=approval,
        )
        from lakelogic.notify import notify_run

        recording = materialize if record is None else record
        if before_commit is None and recording:
            before_commit = self._record_intent
        request.before_commit = before_commit
        try:
            with pinned_semantics(self.spark):
                outcome = run_contract(self.spark, self.contract, lambda: self.plan, request)
        except Exception as exc:
            # an unexpected failure still tells the channels subscribed to `failure`, then propagates
            failed = exc.__dict__.get("lakelogic_report") if hasattr(exc, "__dict__") else None
            if isinstance(failed, RunReport):
                if notify:
                    notify_run(self.contract, failed)
                if recording:
                    self._record(failed, materialized=materialize)
            raise
        # step 15 wrap-up (SEMANTICS §16): after the report is final, failed runs included. Notified
        # before the row is recorded, so the row holds the deliveries: the next run's duplicate-breach
        # suppression reads them there (notify_run never raises)
        if notify:
            notify_run(self.contract, outcome.report)
        if recording:
            self._record(outcome.report, materialized=materialize)
        return RunResult(outcome.good, outcome.bad, outcome.report)

    def _record(self, report: RunReport, *, materialized: bool) -> None:
        """The run's run-log row, in the store its ``metadata`` names; a store that cannot be written is
        a warning on the report, never a second failure of the run. A run that skipped the contract's
        materialization is recorded as ``run_mode: no_write``: it committed nothing, so it moves no
        window or cursor (SEMANTICS §3.4)."""
        from lakelogic.runlog import record_run, store_for_contract

        skipped = not materialized and getattr(self.contract, "materialization", None) is not None
        try:
            extra = {"run_mode": "no_write"} if skipped else {}
            record_run(report, store=store_for_contract(self.contract), **extra)
        except Exception as exc:  # noqa: BLE001 - the run's own outcome stands; the loss is reported
            report.warnings.append(f"the run was not recorded in the run log: {exc}")

    def _record_intent(self, report: RunReport) -> None:
        """The run's ``committing`` row in its run log; a store that cannot be written is a warning, as
        for the final row (the run then only loses the crash recovery)."""
        from lakelogic.runlog import record_commit_intent, store_for_contract

        try:
            record_commit_intent(report, store=store_for_contract(self.contract))
        except Exception as exc:  # noqa: BLE001 - the commit goes ahead; the gap is reported
            report.warnings.append(f"the run's commit intent was not recorded in the run log: {exc}")

    def _approval_gate(
        self, required: bool, approval_file: str | Path | None, pipeline_run_id: str | None
    ) -> Any:
        from lakelogic.plan.approval import gate_for, load_approval_file

        metadata = self.contract.metadata
        if not required and not (isinstance(metadata, dict) and metadata.get("approval_required")):
            return None
        source = self.contract.source_file
        return gate_for(
            metadata,
            required=required,
            approval=load_approval_file(approval_file) if approval_file is not None else None,
            names=[self.contract.contract_name, source.stem if source is not None else ""],
            pipeline_run_id=pipeline_run_id,
        )

    def forget(
        self,
        subject_column: str,
        subject_ids: Iterable[Any],
        strategy: str = "nullify",
        columns: Iterable[str] | None = None,
        reason: str | None = None,
        *,
        requested_by: str | None = None,
        target: str | None = None,
        env: str | None = None,
    ) -> ErasureResult:
        """Erase data subjects (SEMANTICS §18) from the target (every SCD2 version) and its quarantine
        table, one atomic commit per table, and append one row per table to ``_lakelogic_erasure_evidence``.

        ``strategy``: ``nullify``, ``hash`` or ``redact`` rewrite ``columns`` (default: the fields marked
        ``pii`` or ``phi``) on the subjects' rows; ``delete`` removes the rows."""
        from lakelogic.tables.forget import build_request, forget_subjects

        request = build_request(
            self.contract,
            subject_column=subject_column,
            subject_ids=subject_ids,
            strategy=strategy,
            columns=columns,
            reason=reason,
            requested_by=requested_by,
        )
        from lakelogic.engines.spark.pinned import pinned_semantics

        with pinned_semantics(self.spark):
            return forget_subjects(self.spark, self.contract, request, target=target, env=env)

    def apply_retention(
        self, *, dry_run: bool = False, target: str | None = None, env: str | None = None
    ) -> RetentionResult:
        """Delete the target rows older than ``compliance.retention.period`` by its ``column`` (§18)."""
        from lakelogic.plan.retention import retention_policy
        from lakelogic.tables.forget import ErasureRequestError, apply_retention

        # a contract without a policy (or with a malformed one) fails before Spark starts
        policy = retention_policy(self.contract)
        if policy is None:
            raise ErasureRequestError(
                "the contract has no compliance.retention",
                hint="add compliance: {retention: {period: P90D, column: <a date or timestamp column>}}",
            )
        from lakelogic.engines.spark.pinned import pinned_semantics

        with pinned_semantics(self.spark):
            return apply_retention(
                self.spark, self.contract, dry_run=dry_run, target=target, env=env, policy=policy
            )


def _refuse_unusable_channels(contract: Contract) -> None:
    """§16: with ``strict_notifications`` (the default) an unresolvable channel (unknown scheme, missing
    secret, no destination) is a load error; a template that does not parse always is."""
    from lakelogic.errors import ContractError
    from lakelogic.notify import contract_problems

    problems = contract_problems(contract)
    if problems:
        raise ContractError(problems)


def _in_hierarchy(path: Path) -> bool:
    from lakelogic.contract.hierarchy.resolve import find_hierarchy

    return path.is_file() and any(f is not None for f in find_hierarchy(path.resolve()))


def load_run_contract(
    contract: str | Path | Mapping[str, Any] | Contract,
    overrides: Mapping[str, Any] | None = None,
    *,
    env: str | None = None,
) -> Contract:
    """The contract a run executes: a file inside a domain/system hierarchy is resolved with its
    ``_domain.yaml``/``_system.yaml`` (as the driver and ``validate`` do); other input is loaded as is."""
    from lakelogic.contract.loader import load_contract

    if isinstance(contract, str | Path) and _in_hierarchy(Path(contract)):
        # what runs is the effective contract: _domain.yaml -> _system.yaml -> file -> overrides (DRIVER §2.4)
        from lakelogic.contract.hierarchy.resolve import resolve_effective

        return resolve_effective(contract, overrides=dict(overrides) if overrides else None, env=env).contract
    if isinstance(contract, str | Path | Mapping):
        return load_contract(
            contract if not isinstance(contract, Mapping) else dict(contract),
            overrides=dict(overrides) if overrides else None,
        )
    if overrides:
        # A loaded contract is re-validated with the overrides applied to its YAML form.
        data = contract.model_dump(by_alias=True, exclude_none=True)
        return load_contract(data, overrides=dict(overrides))
    return contract


def awaiting_approval(*, pipeline_run_id: str | None = None, spark: SparkSession | None = None) -> list[Any]:
    """Batches staged by the approval gate (DRIVER §11), oldest first
    (:class:`lakelogic.engines.spark.approval.StagedBatch`)."""
    from lakelogic.engines.spark.approval import list_staged

    return list_staged(_session(spark), pipeline_run_id=pipeline_run_id)


def approve(
    *,
    run_ids: Sequence[str] = (),
    pipeline_run_id: str | None = None,
    contracts: Sequence[str] = (),
    approved_by: str | None = None,
    force: bool = False,
    spark: SparkSession | None = None,
) -> list[RunReport]:
    """Publish staged batches with their original run id and window, without recomputing them.
    A batch a later run superseded (it committed an overlapping window) is refused unless ``force``."""
    from lakelogic.engines.spark.approval import select_staged
    from lakelogic.engines.spark.approval_gate import publish_staged

    session = _session(spark)
    who = approved_by or _current_user()
    batches = select_staged(
        session, run_ids=tuple(run_ids), pipeline_run_id=pipeline_run_id, contracts=tuple(contracts)
    )
    return [publish_staged(session, b, approved_by=who, force=force) for b in batches]


def reject(
    *,
    run_ids: Sequence[str] = (),
    pipeline_run_id: str | None = None,
    contracts: Sequence[str] = (),
    rejected_by: str | None = None,
    spark: SparkSession | None = None,
) -> list[RunReport]:
    """Drop staged batches; their runs are recorded ``rejected`` and no table is touched."""
    from lakelogic.engines.spark.approval import select_staged
    from lakelogic.engines.spark.approval_gate import reject_staged

    session = _session(spark)
    who = rejected_by or _current_user()
    batches = select_staged(
        session, run_ids=tuple(run_ids), pipeline_run_id=pipeline_run_id, contracts=tuple(contracts)
    )
    return [reject_staged(session, b, rejected_by=who) for b in batches]


def _session(spark: SparkSession | None) -> SparkSession:
    if spark is not None:
        return spark
    from lakelogic.engines.spark.session import spark_session

    return spark_session()


def _current_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
