"""Row counts without count() jobs: Spark ``Observation`` metrics gathered during the run's actions.

Each observation point adds a ``CollectMetrics`` node to the plan; its aggregates are computed while the
action (a write, or a no-op sink) streams the rows through, so counting never adds a scan. An
observation fires once, on the first action that executes it; :meth:`Observations.collect` reads them
all after the actions have run.

``CollectMetrics`` cannot take part in whole-stage code generation, so every point also splits the
generated pipeline and copies each row across the split. A point whose rows reach the next point
unchanged is therefore *deferred* (:meth:`Observations.defer`): its metrics are computed by the next
point of the same chain, which saves a split (measured on the benchmark contract: see
docs/decisions.md "Runtime performance").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from lakelogic.errors import EngineError

_WAIT_SECONDS = 30.0
_SEP = "::"


@dataclass
class Observations:
    """Named observation points of one run (label -> Spark Observation)."""

    # False: every point is a placeholder and adds nothing to the plan (see Unobserved)
    observing: ClassVar[bool] = True
    run_tag: str
    points: dict[str, Observation] = field(default_factory=dict)
    _counter: int = 0
    # deferred label -> the label of the point that computes its metrics
    hosts: dict[str, str] = field(default_factory=dict)
    _pending: dict[str, dict[str, Column]] = field(default_factory=dict)
    _read: dict[str, dict[str, Any]] = field(default_factory=dict)

    def defer(self, label: str, metrics: dict[str, Column] | None = None) -> None:
        """Observe ``label`` (``rows`` plus ``metrics``) at the next point of this chain instead of here.

        The caller guarantees that the rows reach that point unchanged (no filter, join or generator in
        between) and that the columns ``metrics`` read survive to it.
        """
        if not self.observing:
            self._placeholder(label)
            return
        self._check_new(label)
        self._pending[label] = {"rows": F.expr("count(1)"), **(metrics or {})}

    def observe(
        self,
        frame: DataFrame,
        label: str,
        metrics: dict[str, Column] | None = None,
        *,
        branch: bool = False,
    ) -> DataFrame:
        """Attach an observation to ``frame``: ``rows`` (row count) plus ``metrics``, and the metrics of
        every deferred point before it. A ``branch`` point (a filtered side branch) hosts none."""
        if not self.observing:
            self._placeholder(label)
            return frame
        self._check_new(label)
        self._counter += 1
        # Names are global to the session: make them unique per run so concurrent runs never clash.
        obs = Observation(f"ll_{self.run_tag}_{self._counter}")
        exprs = [F.expr("count(1)").alias("rows")]
        exprs += [col.alias(name) for name, col in (metrics or {}).items()]
        if not branch:
            for deferred, deferred_metrics in self._pending.items():
                exprs += [col.alias(f"{deferred}{_SEP}{name}") for name, col in deferred_metrics.items()]
                self.hosts[deferred] = label
            self._pending.clear()
        self.points[label] = obs
        return frame.observe(obs, *exprs)

    def measured(self, frame: DataFrame, label: str) -> DataFrame:
        """``observe`` with the point's metrics gathered now, by a job of its own over every row: for a
        consumer that may not read all of them (external logic may limit, sample or ignore its input)."""
        observed = self.observe(frame, label)
        if self.observing:
            observed.write.format("noop").mode("overwrite").save()
        return observed

    def require_hosted(self) -> None:
        """Every deferred point must have been hosted before the chain branches."""
        if self._pending:
            raise EngineError(f"internal: deferred observation(s) {sorted(self._pending)} were never hosted")

    def _placeholder(self, label: str) -> None:
        self.points.setdefault(label, Observation(f"unused_{self.run_tag}"))

    def _check_new(self, label: str) -> None:
        if label in self.points or label in self._pending or label in self.hosts:
            raise EngineError(f"internal: observation point {label!r} defined twice")

    def rows(self, label: str) -> int:
        return int(self.value(label, "rows") or 0)

    def value(self, label: str, metric: str) -> Any:
        return self.collect_one(label).get(metric)

    def has(self, label: str) -> bool:
        return label in self.points or label in self.hosts

    def collect_one(self, label: str) -> dict[str, Any]:
        if label in self.hosts:
            prefix = f"{label}{_SEP}"
            hosted = self.collect_one(self.hosts[label])
            return {name[len(prefix) :]: value for name, value in hosted.items() if name.startswith(prefix)}
        if label in self._pending:
            raise EngineError(f"internal: deferred observation {label!r} has no later point to host it")
        if label not in self._read:
            # metrics never change once gathered; each read walks a Java map (a gateway call per entry)
            self._read[label] = self._gather(label)
        return self._read[label]

    def _gather(self, label: str) -> dict[str, Any]:
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
    return F.expr(f"coalesce(sum(CAST({flag_column} AS INT)), 0)")  # one gateway call, not five


class Unobserved(Observations):
    """Observation points that observe nothing: for re-evaluations whose counts nobody reads.

    Without the observation nodes Spark may push filters through the projections (their expressions
    are then inlined); a re-evaluation filters its rows early, so that costs little there.
    """

    observing: ClassVar[bool] = False

    def collect_one(self, label: str) -> dict[str, Any]:
        raise EngineError(f"internal: observation {label!r} of an unobserved evaluation was read")
