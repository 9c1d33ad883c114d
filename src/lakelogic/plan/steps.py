"""The Plan: an immutable, ordered list of small steps compiled from one contract.

Engines execute steps; they never read the contract to decide semantics. All SQL in a step is Spark SQL
(the canonical dialect, already validated by sqlglot at compile time); SQL engines transpile it.

Row rules never filter in place: they add failure messages, and the split happens once (``Split``).
Everything an engine needs to count rows (filtered, expanded, deduplicated) is declared on the step
(``row_effect``) so counts come from observations on the single scan, not from extra jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from lakelogic.types import LogicalType, Phase, Severity

RowEffect = Literal["none", "filter", "dedup", "expand", "any"]
"""How a step may change the row count: none; only remove (filter/dedup); only add (expand); either."""


# --- resolved model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """A model field with its type parsed and its policies resolved."""

    name: str
    type: LogicalType
    required: bool = False  # required or nullable: false
    generated: bool = False
    pii: bool = False
    phi: bool = False
    masking: str | None = None
    masking_format: str | None = None
    pii_vault: str | None = None


@dataclass(frozen=True)
class ReferenceProbe:
    """Membership/lookup a rule needs from a link, evaluated by a join (not a correlated subquery).

    The engine adds boolean column ``column`` = "a reference row matches"; for a plain membership
    probe: ``frame_expr`` value IN ``link.key``; for a window probe (lifecycle_window with reference):
    a reference row with the same key has ``start <= frame_expr <= COALESCE(end, end_default)``.
    """

    column: str
    link: str
    key: tuple[str, ...]
    frame_expr: tuple[str, ...]
    window_start: str | None = None
    window_end: str | None = None
    window_end_default: str | None = None
    window_value_expr: str | None = None
    # SQL's `IN (subquery)`: no match while the link's key holds a NULL is NULL, not FALSE (it decides
    # `NOT IN`). The shorthands ask "is the key in the reference", where a NULL key row means nothing.
    sql_in_semantics: bool = False


@dataclass(frozen=True)
class RowRule:
    """A row rule after shorthand expansion. The row passes only when ``predicate`` is TRUE."""

    name: str
    predicate: str  # Spark SQL boolean expression
    category: str
    severity: Severity
    phase: Phase
    origin: Literal["declared", "shorthand", "field", "implied", "schema"]
    yaml_path: str
    description: str | None = None
    probes: tuple[ReferenceProbe, ...] = ()
    # Readable SQL for messages and reports when ``predicate`` uses probe columns (e.g. the
    # ``f IN (SELECT key FROM link)`` form of referential_integrity); None = ``predicate`` is readable.
    detail: str | None = None
    reads: tuple[str, ...] = ()  # frame columns the rule reads (phase inference, missing columns)
    # Inferred pre while a post op's output columns are only known at run time (`sql`, `pivot`, ...):
    # the engine runs the rule post when it reads a column the frame lacks after the pre ops (§10.2).
    deferrable: bool = False

    @property
    def quarantines(self) -> bool:
        return self.severity == Severity.ERROR

    @property
    def message_detail(self) -> str:
        """The ``<detail>`` of ``Rule failed: <name> (<detail>)`` (SEMANTICS §11)."""
        return self.detail or self.predicate


@dataclass(frozen=True)
class DatasetRule:
    """A dataset rule compiled to one aggregate expression over the good frame (named ``source``).

    ``aggregate_sql`` is a Spark SQL aggregate expression yielding ``observed``; ``check_sql`` is a
    boolean expression over ``observed`` (the column name) that decides ``passed``. Rules with a full
    ``SELECT`` (``query``) are run as their own query over ``source`` and links.
    """

    name: str
    generated_name: str
    category: str
    severity: Severity
    yaml_path: str
    aggregate_sql: str | None = None
    query: str | None = None
    check_sql: str = "observed"
    expected: Any = None
    columns: tuple[str, ...] = ()  # columns read, for `passed: null` on materialization-only columns
    description: str | None = None
    # The subset of ``columns`` that only the write adds (SCD2 columns, surrogate key): such a rule
    # reports ``passed: null`` (SEMANTICS §10.5).
    materialization_columns: tuple[str, ...] = ()
    # The key columns of a uniqueness rule (its ``observed`` counts duplicate keys), in key order;
    # engines may screen such a rule with a cheaper aggregate first (engines.spark.dataset_rules).
    unique_columns: tuple[str, ...] = ()


# --- steps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """Base of every step. ``label`` is the §8 step name used for timings."""

    yaml_path: str

    @property
    def kind(self) -> str:
        return type(self).__name__


StepT = TypeVar("StepT", bound=Step)


@dataclass(frozen=True)
class ReadSource(Step):
    source_type: str
    path: str | None
    format: str | None
    options: Mapping[str, Any] = field(default_factory=dict)
    pattern: str | None = None
    load_mode: str = "full"
    empty_behavior: Literal["skip", "fail"] = "fail"
    flatten_nested: bool | tuple[str, ...] = False
    partition_filters: Mapping[str, Any] = field(default_factory=dict)
    query: str | None = None
    watermark_field: str | None = None
    # The whole ``source`` block as plain data (watermark strategy, CDC keys, partition, dlt, …).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # DRIVER §8: the date column explicit windows select rows of a `full` contract by
    # (`materialization.reprocess_date_column`, else the first `partition_by` column).
    reprocess_date_column: str | None = None


@dataclass(frozen=True)
class LoadLink(Step):
    name: str
    path: str | None
    table: str | None
    type: str
    columns: tuple[str, ...] = ()
    filter: str | None = None
    query: str | None = None
    broadcast: bool = False


@dataclass(frozen=True)
class PreserveUpstream(Step):
    columns: tuple[str, ...]
    prefix: str = "_upstream"


@dataclass(frozen=True)
class Extract(Step):
    provider: str
    text_column: str | None
    patterns: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExternalLogic(Step):
    type: str
    path: str  # absolute, resolved against the contract file
    engine: str
    entrypoint: str = "run"
    args: Mapping[str, Any] = field(default_factory=dict)
    handles_output: bool = False
    output_path: str | None = None
    output_format: str | None = None


@dataclass(frozen=True)
class Transform(Step):
    """One transformation op. ``op`` is the op key (``derive``, ``trim``, ``sql``...); ``params`` are the
    op's parameters with aliases resolved and defaults applied; ``sql`` is the Spark SQL rendering of
    the step (expressions or a full SELECT over ``{input}``), shown by ``lakelogic plan``."""

    index: int
    op: str
    phase: Phase
    params: Mapping[str, Any]
    row_effect: RowEffect = "none"
    sql: str = ""
    creates: tuple[str, ...] = ()  # columns this op writes
    reads: tuple[str, ...] = ()  # columns this op reads (for plan-time checks)

    @property
    def adds(self) -> tuple[str, ...]:
        """The columns this op brings into being: those it writes without reading them. A column it also
        reads existed before, so ``trim``/``lower``/``cast`` and an in-place ``coalesce`` only change it
        (§7.1 unknown columns, §8 step 5: such a column is still the source's or the model's)."""
        return tuple(c for c in self.creates if c not in self.reads)


@dataclass(frozen=True)
class EnforceSchema(Step):
    """Step 5: missing-column checks, unknown-field policy, strict casts of model columns."""

    fields: tuple[FieldSpec, ...]
    unknown_fields: Literal["allow", "drop", "quarantine"] = "allow"
    evolution: str = "allow"
    cast_to_string: bool = False
    post_created: tuple[str, ...] = ()  # model columns a post op creates (not required at step 5)
    date_formats: tuple[str, ...] = ()
    timestamp_formats: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValidateRows(Step):
    """Steps 6 and 9: evaluate every rule of a phase in one projection."""

    phase: Phase
    rules: tuple[RowRule, ...]


@dataclass(frozen=True)
class Split(Step):
    """Step 7: rows with >=1 failed error-severity rule go to quarantine."""

    quarantine_enabled: bool = True
    include_error_reason: bool = True


@dataclass(frozen=True)
class FinalProjection(Step):
    """Step 10: re-cast model columns, add missing ones as NULL, order columns, drop unknown if asked."""

    fields: tuple[FieldSpec, ...]
    unknown_fields: Literal["allow", "drop", "quarantine"] = "allow"


@dataclass(frozen=True)
class CheckDataset(Step):
    """Step 11: every dataset rule in one aggregation over the final good frame."""

    rules: tuple[DatasetRule, ...]
    fail_pipeline_on_dataset_error: bool = False


@dataclass(frozen=True)
class Mask(Step):
    fields: tuple[FieldSpec, ...]


def masked_columns(steps: Sequence[Step]) -> frozenset[str]:
    """The columns step 12 masks (the good frame the dataset rules see holds their real values)."""
    return frozenset(f.name for step in steps if isinstance(step, Mask) for f in step.fields)


@dataclass(frozen=True)
class AddLineage(Step):
    """Step 12: lineage columns; ``columns`` maps output column -> what it holds
    (``source_path``, ``processed_at``, ``run_id``, ``pipeline_run_id``, ``contract_name``, ``domain``,
    ``system``, ``created_at``, ``created_by``); ``values`` holds constants resolved at compile time."""

    columns: Mapping[str, str]
    values: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Materialize(Step):
    """Step 13. Details are resolved by ``tables`` from the contract; the plan only records intent."""

    target: str | None
    format: str | None
    strategy: str
    quarantine_target: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CleanupSource(Step):
    """Step 14 (SEMANTICS §17): what happens to the files a committed, materializing run read.

    ``root``: the source location archive paths are relative to; ``blocking``: a failed cleanup fails the
    run (its data stays committed) instead of adding a warning."""

    action: Literal["delete", "archive"]
    root: str | None  # None: the location given to run() instead of source.path
    archive_path: str | None = None
    blocking: bool = False


@dataclass(frozen=True)
class SloObjective:
    """One ``service_levels`` objective (SEMANTICS §15). ``threshold``: seconds for freshness, a ratio in
    0..1 for availability; ``threshold_text`` as written."""

    objective: Literal["freshness", "availability", "row_count", "completeness", "volume_anomaly"]
    field: str | None = None
    threshold: float | None = None
    threshold_text: str | None = None
    min_rows: int | None = None
    max_rows: int | None = None
    check_field: str = "counts_good"
    skip_reprocess_days: int = 3
    description: str | None = None
    # freshness from the hierarchy's check_columns: the first column present in the data wins
    candidates: tuple[str, ...] = ()
    # completeness (hierarchy slo.quality)
    min_good_ratio: float | None = None
    max_quarantine_ratio: float | None = None
    # volume anomaly (hierarchy slo.row_count.<layer>.anomaly)
    method: str = "median"
    lookback_runs: int = 14
    lookback_days: int = 35
    min_ratio: float = 0.5
    max_ratio: float = 2.0
    min_runs_before_enforcement: int = 5
    critical_ratio: float | None = None
    # hierarchy slo.row_count.<layer>.warn_only: a miss is reported with severity info, never alerted
    warn_only: bool = False


@dataclass(frozen=True)
class EvaluateSlos(Step):
    """Step 15: service levels, on the published target (the good rows when nothing is materialized)."""

    objectives: tuple[SloObjective, ...]


@dataclass(frozen=True)
class Plan:
    """Ordered steps of one contract run plus the identity the report needs."""

    contract_name: str
    title: str
    table_name: str
    version: str
    layer: str | None
    domain: str | None
    system: str | None
    steps: tuple[Step, ...]
    links: tuple[LoadLink, ...] = ()
    primary_key: tuple[str, ...] = ()
    fields: tuple[FieldSpec, ...] = ()
    quarantine: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def of_kind(self, kind: type[StepT]) -> list[StepT]:
        return [s for s in self.steps if isinstance(s, kind)]

    @property
    def row_rules(self) -> tuple[RowRule, ...]:
        return tuple(r for s in self.steps if isinstance(s, ValidateRows) for r in s.rules)
