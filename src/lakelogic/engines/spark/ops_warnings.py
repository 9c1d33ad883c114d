"""Op warnings that depend on the data, gathered without extra jobs.

An op attaches a Spark ``Observation`` to its plan; the metric is computed while the run's own
actions (the writes) stream the rows through. The op registers a reader in
``ctx.pending_warnings``; :func:`resolve_pending_warnings`, called after the actions, turns the
observed values into report warnings.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Observation

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import safe_identifier
from lakelogic.plan.steps import Transform


def observe_for_warning(
    step: Transform,
    frame: DataFrame,
    ctx: SparkRunContext,
    metric: Column,
    message: Callable[[Any], str | None],
) -> DataFrame:
    """Observe ``metric`` (an aggregate) on ``frame``; after the run, ``message(value)`` (if not
    None) becomes a warning."""
    # Observation names are global to the session: unique per run, op and call.
    name = f"ll_{safe_identifier(ctx.run_id)}_op{step.index}_{uuid.uuid4().hex[:8]}"
    observation = Observation(name)

    def read(timeout: float) -> list[str]:
        values: list[Any] = []
        errors: list[BaseException] = []

        def get() -> None:
            try:
                values.append(observation.get.get("value"))
            except Exception as exc:  # noqa: BLE001 - recorded and reported as a warning below
                errors.append(exc)

        # Observation.get blocks until an action executed the plan; a run that stopped early never does.
        reader = threading.Thread(target=get, daemon=True)
        reader.start()
        reader.join(timeout)
        if errors:
            return [f"observation_failed: {step.yaml_path} ({step.op}): {errors[0]}"]
        if not values:
            return []
        text = message(values[0])
        return [text] if text else []

    ctx.pending_warnings.append(read)
    return frame.observe(observation, metric.alias("value"))


def resolve_pending_warnings(ctx: SparkRunContext, timeout: float = 5.0) -> list[str]:
    """Move the warnings of observations that have fired into ``ctx.warnings``; returns them.

    Call after the run's actions. ``timeout`` bounds the wait per observation that never fired.
    """
    found: list[str] = []
    pending, ctx.pending_warnings = ctx.pending_warnings, []
    for read in pending:
        found.extend(read(timeout))
    ctx.warnings.extend(found)
    return found
