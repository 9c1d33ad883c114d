"""Row counts without count() jobs: Spark ``Observation`` metrics gathered during the run's actions.

Each observation point adds a ``CollectMetrics`` node to the plan; its aggregates are computed while the
action (a write, or a no-op sink) streams the rows through, so counting never adds a scan. An
observation fires once, on the first action that executes it; :meth:`Observations.collect` reads them
all after the actions have run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from lakelogic.errors import EngineError

_WAIT_SECONDS = 30.0


@dataclass
class Observations:
    """Named observation points of one run (label -> Spark Observation)."""

    run_tag: str
    points: dict[str, Observation] = field(default_factory=dict)
    _counter: int = 0

    def observe(self, frame: DataFrame, label: str, metrics: dict[str, Column] | None = None) -> DataFrame:
        """Attach an observation to ``frame``: ``rows`` (row count) plus ``metrics``."""
        if label in self.points:
            raise EngineError(f"internal: observation point {label!r} defined twice")
        self._counter += 1
        # Names are global to the session: make them unique per run so concurrent runs never clash.
        obs = Observation(f"ll_{self.run_tag}_{self._counter}")
        exprs = [F.count(F.lit(1)).alias("rows")]
        exprs += [col.alias(name) for name, col in (metrics or {}).items()]
        self.points[label] = obs
        return frame.observe(obs, *exprs)

    def rows(self, label: str) -> int:
        return int(self.value(label, "rows") or 0)

    def value(self, label: str, metric: str) -> Any:
        return self.collect_one(label).get(metric)

    def has(self, label: str) -> bool:
        return label in self.points

    def collect_one(self, label: str) -> dict[str, Any]:
        obs = self.points[label]
        result: list[dict[str, Any]] = []
        errors: list[BaseException] = []

        def read() -> None:
            try:
                result.append(dict(obs.get))
            except Exception as exc:  # noqa: BLE001 - re-raised below as an EngineError
                errors.append(exc)

        # Observation.get blocks until the metrics arrive; a point no action executed would hang forever.
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(_WAIT_SECONDS)
        if errors:
            raise EngineError(f"reading observation {label!r} failed: {errors[0]}") from errors[0]
        if not result:
            raise EngineError(f"internal: observation {label!r} was never executed by the run's actions")
        return result[0]


def sum_flag(flag_column: str) -> Column:
    """Number of rows where boolean column ``flag_column`` is TRUE (NULL counts as false)."""
    return F.coalesce(F.sum(F.col(flag_column).cast("int")), F.lit(0))


class Unobserved(Observations):
    """Observation points that observe nothing: for re-evaluations whose counts nobody reads.

    Without the observation nodes Spark may push filters through the projections (their expressions
    are then inlined); a re-evaluation filters its rows early, so that costs little there.
    """

    def observe(self, frame: DataFrame, label: str, metrics: dict[str, Column] | None = None) -> DataFrame:
        self.points.setdefault(label, Observation(f"unused_{self.run_tag}"))
        return frame

    def collect_one(self, label: str) -> dict[str, Any]:
        raise EngineError(f"internal: observation {label!r} of an unobserved evaluation was read")
