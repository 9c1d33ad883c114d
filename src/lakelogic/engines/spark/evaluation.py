"""The lazy result of evaluating a plan: frames, checks, observation points (built by the executor)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from lakelogic.engines.spark.counting import Observations
from lakelogic.engines.spark.fanout import Fanout
from lakelogic.engines.spark.rules import Check
from lakelogic.plan.steps import CheckDataset
from lakelogic.report import SchemaDrift, SourceInfo


@dataclass(frozen=True)
class RowEffectPoint:
    """Observation labels around a step that may change the row count."""

    before: str
    after: str
    effect: str  # filter | dedup | expand | any
    # A point whose metric ``empty`` counts the input rows that yield nothing: those are filtered and the
    # rest's extra rows expanded, instead of only the net change being known.
    empty_label: str | None = None


@dataclass
class Evaluation:
    """The lazy result of a plan: frames, checks (for per-rule counts) and observation points."""

    good: DataFrame | None
    bad: DataFrame | None
    observations: Observations
    checks: dict[str, list[Check]] = field(default_factory=dict)  # observation label -> checks
    row_effects: list[RowEffectPoint] = field(default_factory=list)
    malformed_label: str | None = None
    dataset: CheckDataset | None = None
    drift: SchemaDrift = field(default_factory=SchemaDrift)
    source_info: SourceInfo = field(default_factory=SourceInfo)
    empty_behavior: str = "fail"
    persisted: list[DataFrame] = field(default_factory=list)
    quarantine_enabled: bool = True
    fail_on_quarantine: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    # The source as read (re-used by re-evaluations of a subset of rows) and the one-job split.
    source_frame: DataFrame | None = None
    fanout: Fanout | None = None
    # Columns the output masks, and the good frame before masking (only built when there are dataset
    # rules): the dataset rules that read a masked column evaluate on it.
    masked_columns: frozenset[str] = frozenset()
    good_unmasked: DataFrame | None = None

    @property
    def no_input(self) -> bool:
        """True when nothing could be read (no qualifying file): zero rows without a scan."""
        return self.good is None

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()
        self.persisted.clear()
