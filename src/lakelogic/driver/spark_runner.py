"""The Spark contract runner of the driver: one shared session, one FAIR pool and job group per node.

``spark.scheduler.pool`` and the job group are thread-local properties in PySpark (pinned thread mode,
the default), so they are set inside the worker thread that runs the contract (DRIVER §4.4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
            return report

    def cancel(self, node_id: str) -> None:
        self.spark.sparkContext.cancelJobGroup(node_id)

    def close(self) -> None:
        """The end of a pipeline run: nothing cached is reused by the next one."""
        self.cache.release()


def spark_contract_runner(
    spark: Any, *, engine: str = "spark", cache_references: bool = False
) -> tuple[ContractRunner, Callable[[str], None]]:
    """``(runner, cancel)``: the runner executes one node; ``cancel(node_id)`` cancels its Spark jobs.
    The runner is a :class:`SparkContractRunner`; call its ``close()`` when a pipeline run ends."""
    runner = SparkContractRunner(spark, engine=engine, cache_references=cache_references)
    return runner, runner.cancel
