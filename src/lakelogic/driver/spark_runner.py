"""The Spark contract runner of the driver: one shared session, one FAIR pool and job group per node.

``spark.scheduler.pool`` and the job group are thread-local properties in PySpark (pinned thread mode,
the default), so they are set inside the worker thread that runs the contract (DRIVER §4.4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger

from lakelogic.driver.execution import ContractRunner, RunRequest
from lakelogic.plan.approval import ApprovalFile, ApprovalGate, gate_for
from lakelogic.report import RunReport


@contextmanager
def node_scope(context: Any, node_id: str, description: str) -> Iterator[None]:
    """Run the enclosed Spark jobs in the FAIR pool and job group ``node_id`` (this thread only)."""
    context.setLocalProperty("spark.scheduler.pool", node_id)
    context.setJobGroup(node_id, description, interruptOnCancel=True)
    try:
        yield
    finally:
        context.setLocalProperty("spark.scheduler.pool", None)
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)


def wants_reference_cache(effective_contract: Any, flag: bool) -> bool:
    """``--cache-references``, or the contract's ``metadata.cache_reference_links: true`` (DRIVER §12)."""
    metadata = getattr(effective_contract, "metadata", None)
    return flag or (isinstance(metadata, dict) and metadata.get("cache_reference_links") is True)


class SparkContractRunner:
    """Runs one node on the shared session. Holds the pipeline run's reference cache: contracts that ask
    for it share link frames; a committed target drops the links read from it; ``close`` releases every
    cached frame at the end of the pipeline run (each backfill window is its own pipeline run)."""

    def __init__(
        self,
        spark: Any,
        *,
        engine: str = "spark",
        cache_references: bool = False,
        approval_required: bool = False,
        approval_file: ApprovalFile | None = None,
    ) -> None:
        from lakelogic.engines.spark.link_cache import LinkCache

        self.spark = spark
        self.engine = engine
        self.cache_references = cache_references
        self.cache = LinkCache()
        self.approval_required = approval_required
        self.approval_file = approval_file

    def approval_gate(self, node: Any, pipeline_run_id: str, contract: Any) -> ApprovalGate | None:
        """The node's approval gate (DRIVER §11): ``--approval-required`` or the effective
        ``metadata.approval_required``; the approval file approves it by node id, contract name or file
        stem. None when approval is not required."""
        metadata = getattr(contract, "metadata", None)
        wanted = isinstance(metadata, dict) and bool(metadata.get("approval_required"))
        if not (self.approval_required or wanted):
            return None
        return gate_for(
            metadata if isinstance(metadata, dict) else None,
            required=self.approval_required,
            approval=self.approval_file,
            names=approval_names(node, contract),
            pipeline_run_id=pipeline_run_id,
        )

    def resume_staged(self, node: Any, run_id: str) -> RunReport | None:
        """Resume (DRIVER §11) of a node whose run ``run_id`` awaits approval: its staged batch published
        when the approval file now covers it (or when its commit already landed before a crash), else
        the staged run's report (still awaiting). None when nothing is staged for ``run_id``. The staging
        is kept: the driver drops it (:meth:`discard_staged`) once the outcome is recorded."""
        from lakelogic.engines.spark.approval import find_staged
        from lakelogic.engines.spark.approval_gate import publish_staged, staged_report, was_published

        batch = find_staged(self.spark, run_id)
        if batch is None:
            return None
        approval = self.approval_file
        covered = approval is not None and approval.covers(
            [*batch.names, node.id], pipeline_run_id=batch.pipeline_run_id, now=datetime.now(UTC)
        )
        if not covered and not was_published(self.spark, batch):
            return staged_report(batch)
        with node_scope(self.spark.sparkContext, node.id, f"lakelogic {node.id} publish {run_id}"):
            report = publish_staged(
                self.spark,
                batch,
                approved_by=approval.approved_by if covered and approval is not None else "unknown",
                approval_file=approval.path if covered and approval is not None else None,
                record=False,  # the driver records the outcome with its own columns, then drops the staging
            )
        if report.materialization is not None and report.materialization.target:
            self.cache.invalidate(report.materialization.target)
        return report

    def discard_staged(self, run_id: str) -> None:
        """Drop the staged batch of ``run_id`` (after its outcome is recorded); nothing when none is left."""
        from lakelogic.engines.spark.approval import drop_staged, find_staged

        batch = find_staged(self.spark, run_id)
        if batch is not None:
            drop_staged(self.spark, batch)

    def __call__(self, request: RunRequest) -> RunReport:
        from lakelogic.api import DataProcessor

        node = request.node
        context = self.spark.sparkContext
        with node_scope(context, node.id, f"lakelogic {node.id} run {request.run_id}"):
            contract = node.effective.contract if node.effective is not None else node.contract_file
            processor = DataProcessor(contract, engine=self.engine, spark=self.spark)
            cached = wants_reference_cache(processor.contract, self.cache_references)
            result = processor.run(
                materialize=True,
                run_id=request.run_id,
                pipeline_run_id=request.pipeline_run_id,
                window=request.window,
                link_cache=self.cache if cached else None,
                notify=False,  # once per contract, below or in on_final_failure (not per retried attempt)
                record=False,  # the driver records the outcome with its own columns
                before_commit=request.before_commit,
                approval=self.approval_gate(node, request.pipeline_run_id, processor.contract),
            )
            report: RunReport = result.report
            materialization = report.materialization
            if materialization is not None and materialization.committed and materialization.target:
                # a later contract reading this target as reference data must see the new commit
                self.cache.invalidate(materialization.target)
            # the hierarchy's environment (--env, LAKELOGIC_ENV or its default) is already bound into it
            report.environment = getattr(node.effective, "environment", None) or report.environment
            report.window.label = request.window.label
            # The source reader's reason (e.g. window_not_applicable) says what the read did; keep it.
            report.window.reason = report.window.reason or request.window.reason
            from lakelogic.notify import notify_run

            notify_run(processor.contract, report)
            return report

    def settle_commits(self, node: Any, store: Any) -> None:
        """Record the node's runs that committed but stopped before their run-log row (before its window
        is computed from that log). A target that cannot be read leaves the log as it is, with a warning:
        the window is then the one the log alone gives, as before such a row existed."""
        from lakelogic.api import load_run_contract
        from lakelogic.engines.spark.commit_recovery import settle_pending_commits

        try:
            contract = (
                node.effective.contract
                if node.effective is not None
                else load_run_contract(node.contract_file)
            )
            settle_pending_commits(self.spark, contract, store, name=node.name)
        except Exception as exc:  # noqa: BLE001 - the log keeps its rows; the window is the log's own
            logger.warning("{}: checking its interrupted commits failed: {}", node.id, exc)

    def commit_landed(self, node: Any, run_id: str) -> bool:
        """Whether the node's target holds a commit of ``run_id`` (a run that failed after its commit had
        begun). A target that cannot be read says no, with a warning: the row then records no commit."""
        from lakelogic.api import load_run_contract
        from lakelogic.tables.materialize import already_committed, resolve_target

        try:
            contract = (
                node.effective.contract
                if node.effective is not None
                else load_run_contract(node.contract_file)
            )
            name = str(getattr(contract, "contract_name", "") or node.name)
            return already_committed(self.spark, resolve_target(contract), run_id, contract=name)
        except Exception as exc:  # noqa: BLE001 - the failed run's own outcome stands; the doubt is logged
            logger.warning("{}: could not tell whether run {} committed: {}", node.id, run_id, exc)
            return False

    def on_final_failure(self, node: Any, report: RunReport) -> None:
        """The driver gave up on ``node`` (an error no retry fixed): tell its ``failure`` channels once."""
        from lakelogic.api import load_run_contract
        from lakelogic.notify import notify_run

        try:
            contract = (
                node.effective.contract
                if node.effective is not None
                else load_run_contract(node.contract_file)
            )
        except Exception:  # noqa: BLE001 - a contract that does not load has no channels to tell
            return
        notify_run(contract, report)

    def cancel(self, node_id: str) -> None:
        self.spark.sparkContext.cancelJobGroup(node_id)

    def close(self) -> None:
        """The end of a pipeline run: nothing cached is reused by the next one. Never raises (it runs in a
        ``finally`` that must not hide the pipeline's own error)."""
        try:
            self.cache.release()
        except Exception as exc:  # noqa: BLE001 - releasing a cache must not mask the run's outcome
            logger.warning("releasing the reference cache failed: {}", exc)


def approval_names(node: Any, contract: Any) -> list[str]:
    """The names an approval file may use for a node: its id, its name, the contract name, the file stem."""
    stem = Path(str(node.contract_file)).stem if getattr(node, "contract_file", None) else ""
    return [node.id, node.name, str(getattr(contract, "contract_name", "") or ""), stem]


def spark_contract_runner(
    spark: Any,
    *,
    engine: str = "spark",
    cache_references: bool = False,
    approval_required: bool = False,
    approval_file: ApprovalFile | None = None,
) -> tuple[ContractRunner, Callable[[str], None]]:
    """``(runner, cancel)``: the runner executes one node; ``cancel(node_id)`` cancels its Spark jobs.
    The runner is a :class:`SparkContractRunner`; call its ``close()`` when a pipeline run ends."""
    runner = SparkContractRunner(
        spark,
        engine=engine,
        cache_references=cache_references,
        approval_required=approval_required,
        approval_file=approval_file,
    )
    return runner, runner.cancel
