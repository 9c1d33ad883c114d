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


def spark_contract_runner(
    spark: Any, *, engine: str = "spark"
) -> tuple[ContractRunner, Callable[[str], None]]:
    """``(runner, cancel)``: the runner executes one node; ``cancel(node_id)`` cancels its Spark jobs."""
    from lakelogic.api import DataProcessor

    context = spark.sparkContext

    def run(request: RunRequest) -> RunReport:
        node = request.node
        with node_scope(context, node.id, f"lakelogic {node.id} run {request.run_id}"):
            contract = node.effective.contract if node.effective is not None else node.contract_file
            processor = DataProcessor(contract, engine=engine, spark=spark)
            result = processor.run(
                materialize=True,
                run_id=request.run_id,
                pipeline_run_id=request.pipeline_run_id,
                window=request.window,
            )
            report: RunReport = result.report
            # the hierarchy's environment (--env, LAKELOGIC_ENV or its default) is already bound into it
            report.environment = getattr(node.effective, "environment", None) or report.environment
            report.window.label = request.window.label
            # The source reader's reason (e.g. window_not_applicable) says what the read did; keep it.
            report.window.reason = report.window.reason or request.window.reason
            return report

    def cancel(node_id: str) -> None:
        context.cancelJobGroup(node_id)

    return run, cancel
