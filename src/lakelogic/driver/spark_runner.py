"""The Spark contract runner of the driver: one shared session, one FAIR pool and job group per node.

``spark.scheduler.pool`` and the job group are thread-local properties in PySpark (pinned thread mode,
the default), so they are set inside the worker thread that runs the contract (DRIVER §4.4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from loguru import logger

from lakelogic.driver.execution import ContractRunner, RunRequest
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

    def __init__(self, spark: Any, *, engine: str = "spark", cache_references: bool = False) -> None:
        from lakelogic.engines.spark.link_cache import LinkCache

        self.spark = spark
        self.engine = engine
        self.cache_references = cache_references
        self.cache = LinkCache()

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


def spark_contract_runner(
    spark: Any, *, engine: str = "spark", cache_references: bool = False
) -> tuple[ContractRunner, Callable[[str], None]]:
    """``(runner, cancel)``: the runner executes one node; ``cancel(node_id)`` cancels its Spark jobs.
    The runner is a :class:`SparkContractRunner`; call its ``close()`` when a pipeline run ends."""
    runner = SparkContractRunner(spark, engine=engine, cache_references=cache_references)
    return runner, runner.cancel
