"""Metrics a statement's plan observed (``DataFrame.observe``), read from the executed plan itself.

``pyspark.sql.Observation`` waits for a listener event without a timeout, and that event never comes when
the optimizer removes the observing node with an empty part of the plan: the caller then hangs for good.
A SQL command (a ``MERGE`` whose source observes) keeps its executed physical plan, so the collected values
are read from there once the statement has returned: no waiting, and a plan without the node reads as
None.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from py4j.protocol import Py4JError
from pyspark.sql import DataFrame


def _children(node: Any) -> list[Any]:
    kind = node.getClass().getSimpleName()
    if kind == "CommandResultExec":  # an executed command: its own physical plan
        return [node.commandPhysicalPlan()]
    if kind == "AdaptiveSparkPlanExec":  # the final plan adaptive execution ran
        return [node.executedPlan()]
    if kind.endswith("QueryStageExec"):  # a materialized stage of that plan
        return [node.plan()]
    children = node.children()
    return [children.apply(i) for i in range(children.size())]


def observed_metrics(executed: DataFrame, name: str) -> dict[str, Any] | None:
    """The values ``executed`` observed under ``name``, or None when its executed plan has no such node or
    cannot be read (a session without a JVM gateway, such as Spark Connect, or plan classes of another
    Spark version): callers treat None as "counts unknown" and take a path that does not need them."""
    try:
        pending = [executed._jdf.queryExecution().executedPlan()]
        while pending:
            node = pending.pop()
            if node.getClass().getSimpleName() == "CollectMetricsExec" and node.name() == name:
                row = node.collectedMetrics()
                fields = row.schema().fieldNames()
                return {str(fields[i]): row.get(i) for i in range(len(fields))}
            pending.extend(_children(node))
    except (AttributeError, Py4JError) as exc:
        logger.warning(f"the executed plan's observed metrics could not be read: {exc}")
    return None
