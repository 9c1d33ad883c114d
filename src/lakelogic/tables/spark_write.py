"""Strategies on plain DataFrames: append, overwrite, merge, SCD2 into any supported format.

:func:`write_frame` is the one entry point below ``materialize_run``; benchmarks call it directly.
Order of one write: exactly-once check → schema evolution plan → strategy → one commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from lakelogic.errors import CommitError, LakeLogicError, PlanError, SchemaEvolutionError, UnsupportedError
from lakelogic.tables.base import CommitResult, ReplaceResult, TableAdapter
from lakelogic.tables.conflicts import as_conflict
from lakelogic.tables.key_range import batch_keys
from lakelogic.tables.spark_batch import (
    DELETE_FLAG,
    change_partitions,
    check_keys_present,
    one_row_per_key,
    q,
    quote_ident,
    rereads_the_same,
    with_soft_delete_columns,
)
from lakelogic.tables.spark_evolution import (
    EvolutionPlan,
    WriteDrift,
    align_batch,
    as_schema_error,
    evolved_schema,
    plan_evolution,
    same_type,
    schema_drift,
)
from lakelogic.tables.spark_iceberg_merge import single_scan_applies, single_scan_merge
from lakelogic.tables.spark_merge import ChangeSummary, merge_changes, summarize_changes
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget, require_spark_writable
from lakelogic.tables.unknown_member import stored_member, unknown_member

INTERNAL_PREFIX = "_ll_"
# Raised by a reprocess batch row outside the window it replaces (see _refuse_rows_outside).
_OUTSIDE_WINDOW = "LAKELOGIC_ROW_OUTSIDE_REPROCESS_WINDOW"


@dataclass
class WriteOutcome:
    """Result of one write, mapped onto the report's materialization block by the caller."""

    target: str
    format: str
    strategy: str
    committed: bool = False
    already_committed: bool = False
    snapshot: str | None = None
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    versions_closed: int = 0
    warnings: list[str] = field(default_factory=list)
    # write-side schema drift (SEMANTICS §7.1): batch columns new to the target, target columns the batch
    # lacks, and columns whose type differs ({column, target_type, batch_type, change})
    added_columns: list[str] = field(default_factory=list)
    missing_columns: list[str] = field(default_factory=list)
    type_changes: list[dict[str, str]] = field(default_factory=list)


def adapter_for(spark: SparkSession, target: ResolvedTarget) -> TableAdapter:
    """The table adapter of a resolved target (Iceberg catalog table, Delta path, Parquet/CSV/JSON path)."""
    require_spark_writable(target)
    if target.format == "iceberg":
        from lakelogic.tables.spark_iceberg import IcebergTable

        return IcebergTable(spark, target)
    if target.format == "delta":
        from lakelogic.tables.delta_adapter import delta_adapter

        return delta_adapter(spark, target)
    from lakelogic.tables.spark_files import FileTable

    return FileTable(spark, target)


def _require_strategy(target: ResolvedTarget, strategy: str) -> None:
    if target.format in ("csv", "json") and strategy not in ("append", "overwrite"):
        raise UnsupportedError(
            f"format {target.format} supports only append/overwrite, not {strategy}",
            hint="use iceberg, delta or parquet for merge/scd2",
        )


def _require_layout_columns(frame: DataFrame, spec: WriteSpec) -> None:
    """§13.4: ``partition_by``/``cluster_by`` columns must exist in the output. The compiler rejects what it
    can prove missing; a column left to the source is checked here, before anything is written, instead of
    the table silently being laid out without it."""
    available = set(frame.columns) | set(written_by_strategy(spec))
    for key, columns in (("partition_by", spec.partition_by), ("cluster_by", spec.cluster_by)):
        missing = [c for c in columns if c not in available]
        if missing:
            raise PlanError(
                f"{', '.join(missing)} not in the output; output columns: {', '.join(frame.columns)}",
                yaml_path=f"materialization.{key}",
            )


def written_by_strategy(spec: WriteSpec) -> tuple[str, ...]:
    """Columns the write itself adds to the batch (SCD2's version columns, soft-delete columns)."""
    added: list[str | None] = list(spec.soft_delete_columns)
    if spec.scd2 is not None:
        scd = spec.scd2
        added += [
            scd.effective_from,
            scd.effective_to,
            scd.current_flag,
            scd.version_column,
            scd.surrogate_key,
            scd.change_reason_column,
        ]
    return tuple(c for c in added if c)


def _record_drift(
    outcome: WriteOutcome, current: StructType | None, batch: StructType, plan: EvolutionPlan
) -> None:
    if current is None:
        return  # a new table: nothing to drift from
    outcome.added_columns = [f.name for f in plan.added]
    outcome.missing_columns = list(plan.missing)
    if plan.replace_schema:  # the schema is replaced, not evolved; the drift is still reported (§7.1)
        outcome.added_columns = [n for n in batch.names if n not in current.names]
        outcome.missing_columns = [n for n in current.names if n not in batch.names]
    target_types = {f.name: f.dataType for f in current.fields}
    changes = {c: "widened" for c, _, _ in plan.widened}
    changes.update({c: "cast to the target type" for c in plan.casts if c not in changes})
    if plan.replace_schema:
        changes.update(
            {
                f.name: "replaced"
                for f in batch.fields
                if f.name in target_types and not same_type(f.dataType, target_types[f.name])
            }
        )
    outcome.type_changes = [
        {
            "column": column,
            "target_type": target_types[column].simpleString(),
            "batch_type": batch[column].dataType.simpleString(),
            "change": change,
        }
        for column, change in changes.items()
        if column in target_types and column in batch.names
    ]


def _refuse_widenings(
    adapter: TableAdapter, plan: EvolutionPlan, current: StructType | None, batch: StructType
) -> None:
    """A widening §7.1 allows but the table cannot make fails before anything is written, with the drift:
    path tables keep old files' physical types; Iceberg does not promote every pair (``widens``)."""
    widens: Callable[[DataType, DataType], bool] = getattr(adapter, "widens", lambda narrow, wide: True)
    whole = bool(getattr(adapter, "supports_widening", False))
    for name, narrow, wide in plan.widened:
        if whole and widens(narrow, wide):
            continue
        change = f"{narrow.simpleString()} -> {wide.simpleString()}"
        error = (
            SchemaEvolutionError(
                f"column {name!r}: widening {change} is not supported for {adapter.target.format} path "
                "tables (existing files keep the old type)",
                hint="use an Iceberg table, cast the column in the contract, or use evolution: overwrite",
            )
            if not whole
            else SchemaEvolutionError(
                f"column {name!r}: {adapter.target.format} cannot widen {change} in place",
                hint="cast the column in the contract to the stored type, or use evolution: overwrite",
            )
        )
        error.drift = schema_drift(current, batch) if current is not None else None
        raise error


def _evolve(
    adapter: TableAdapter, frame: DataFrame, spec: WriteSpec, outcome: WriteOutcome
) -> tuple[DataFrame, EvolutionPlan]:
    """Plan and apply write-side evolution; return the batch aligned to the (evolved) target schema."""
    text_form = getattr(adapter, "text_form", None)
    if callable(text_form):  # CSV/JSON: nested values are JSON text in the table, so in the batch too
        frame = text_form(frame)
    current = adapter.schema()
    data_columns = [c for c in frame.columns if not c.startswith(INTERNAL_PREFIX)]
    batch_schema = frame.selectExpr(*[quote_ident(c) for c in data_columns]).schema
    plan = plan_evolution(current, batch_schema, policy=spec.evolution, strategy=spec.strategy)
    outcome.warnings.extend(plan.warnings)
    _record_drift(outcome, current, batch_schema, plan)
    _refuse_widenings(adapter, plan, current, batch_schema)
    schema = evolved_schema(current, batch_schema, plan)
    if current is not None and plan.changes_table and not plan.replace_schema:
        adapter.evolve(plan, schema)
    name = adapter.target.name
    if plan.added:
        outcome.warnings.append(
            f"schema evolution on {name}: added column(s) {', '.join(f.name for f in plan.added)}"
        )
    for column, narrow, wide in plan.widened:
        outcome.warnings.append(
            f"schema evolution on {name}: widened {column} {narrow.simpleString()} -> {wide.simpleString()}"
        )
    if plan.replace_schema and current is not None:
        outcome.warnings.append(f"schema evolution on {name}: schema replaced (evolution: overwrite)")
    extras = [c for c in frame.columns if c.startswith(INTERNAL_PREFIX)]
    if extras:  # internal flags (e.g. _ll_delete) ride along after the schema columns
        schema_with_extras = StructType(
            list(schema.fields) + [StructField(c, frame.schema[c].dataType, True) for c in extras]
        )
        return align_batch(frame, schema_with_extras, plan), plan
    aligned = align_batch(frame, schema, plan)
    return aligned, plan


def evolve_target(adapter: TableAdapter, frame: DataFrame, spec: WriteSpec) -> EvolutionPlan:
    """Bring an existing table to ``frame``'s schema as a write would (``spec.evolution`` decides; an
    incompatible change raises naming the column and both types), without writing rows."""
    target = adapter.target
    _, plan = _evolve(adapter, frame, spec, WriteOutcome(target.name, target.format, spec.strategy))
    return plan


def _bounds(summary: ChangeSummary, match: tuple[str, ...]) -> dict[str, tuple[Any, Any]] | None:
    """Key bounds for the MERGE target scan: None = no restriction; {} with no updates/deletes = none
    of the target can match."""
    touching = summary.counts.get("update", 0) + summary.counts.get("delete", 0)
    if touching == 0:
        return {}
    return summary.bounds or None


def _with_unknown_member(adapter: TableAdapter, prepared: DataFrame, spec: WriteSpec) -> DataFrame:
    """The merge batch plus the placeholder member (``materialization.unknown_member``, SEMANTICS §13.6)
    when neither the table nor the batch holds its key yet."""
    member = unknown_member(
        spec.unknown_member,
        key_columns=spec.primary_key,
        where="materialization.unknown_member",
        whole_key=True,
    )
    if member is None or stored_member(adapter, member, prepared.schema):
        return prepared
    types = {f.name: f.dataType for f in prepared.schema.fields}
    row = prepared.sparkSession.range(1).select(
        *[
            (F.lit(member.values[c]) if c in member.values else F.lit(None)).cast(types[c]).alias(c)
            for c in prepared.columns
            if c != DELETE_FLAG
        ],
        F.lit(False).alias(DELETE_FLAG),
    )
    batch_keys = prepared.select(*[F.col(f"`{k}`") for k in spec.primary_key])
    fresh = row.join(batch_keys, list(spec.primary_key), "left_anti")
    return prepared.unionByName(fresh)


def _keyed_write(
    adapter: TableAdapter,
    frame: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
) -> CommitResult | None:
    keys = spec.primary_key
    check_keys_present(frame, keys)
    batch_columns = {c for c in frame.columns if not c.startswith(INTERNAL_PREFIX)}
    frame = with_soft_delete_columns(frame, spec)
    deduplicated = one_row_per_key(frame, keys, spec)  # cached by its duplicate check unless a mere scan
    prepared = _with_unknown_member(adapter, deduplicated, spec)
    cached = not rereads_the_same(prepared)
    if cached:
        prepared = prepared.persist()
    try:
        return _apply_keyed(adapter, prepared, spec, stamp, outcome, batch_columns)
    finally:
        if cached:
            prepared.unpersist()
        deduplicated.unpersist()  # the duplicate check's cache when the unknown member made another


def _apply_keyed(
    adapter: TableAdapter,
    prepared: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
    batch_columns: set[str],
) -> CommitResult | None:
    keys = spec.primary_key
    if single_scan_applies(adapter, spec, batch_columns):
        return _single_scan(adapter, prepared, spec, stamp, outcome, batch_columns)
    aligned, _ = _evolve(adapter, prepared, spec, outcome)
    found = batch_keys(aligned, keys)
    rows = found.rows
    small = rows <= spec.broadcast_keys_max_rows
    schema_cols = [c for c in aligned.columns if c != DELETE_FLAG]
    schema = aligned.select(*[F.col(f"`{c}`") for c in schema_cols]).schema
    target = found.read(adapter) if adapter.exists() else None
    changes = merge_changes(
        aligned, target, schema, keys=keys, batch_columns=batch_columns, spec=spec, broadcast_keys=small
    )
    # Spark 3.5 never coalesces the last shuffle of a cached plan (the change set ends in a join), so
    # a change set of a few rows would keep 200 partitions: 200 tasks per statement, a file each.
    changes = changes.coalesce(change_partitions(prepared.sparkSession, rows)).persist()
    try:
        summary = summarize_changes(changes, keys)
        counts = summary.counts
        outcome.rows_inserted = counts.get("insert", 0)
        outcome.rows_updated = counts.get("update", 0)
        outcome.rows_deleted = counts.get("delete", 0)
        if not counts and adapter.exists():
            return None  # an identical re-run changes nothing: no commit
        return adapter.apply_changes(
            changes, stamp, spec, match=keys, bounds=_bounds(summary, keys), counts=counts
        )
    finally:
        changes.unpersist()


def _single_scan(
    adapter: TableAdapter,
    prepared: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
    batch_columns: set[str],
) -> CommitResult | None:
    """Merge into a merge-on-read Iceberg table by update + insert on a branch published at once (counts
    from the snapshot summaries). A batch that changes nothing publishes nothing and is reported like the
    general path: no rows, no snapshot."""
    from lakelogic.tables.spark_iceberg import IcebergTable

    assert isinstance(adapter, IcebergTable)
    aligned, _ = _evolve(adapter, prepared, spec, outcome)
    columns = [c for c in aligned.columns if c != DELETE_FLAG]
    found = batch_keys(aligned, spec.primary_key)
    merged = single_scan_merge(
        adapter, aligned, columns, stamp, spec, batch_columns=batch_columns, batch_keys=found
    )
    outcome.rows_inserted, outcome.rows_updated = merged.inserted, merged.updated
    if merged.inserted == 0 and merged.updated == 0:
        return None
    return CommitResult(committed=True, snapshot=merged.snapshot)


def _scd2_write(
    adapter: TableAdapter,
    frame: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
) -> CommitResult | None:
    from lakelogic.tables.spark_scd2 import scd2_write

    return scd2_write(adapter, frame, spec, stamp, outcome, evolve=_evolve)


def write_frame(
    spark: SparkSession,
    frame: DataFrame,
    target: ResolvedTarget,
    spec: WriteSpec,
    stamp: CommitStamp,
    *,
    reprocess_window: tuple[datetime | None, datetime | None] | None = None,
    adapter: TableAdapter | None = None,
) -> WriteOutcome:
    """Write ``frame`` to ``target`` with ``spec.strategy`` as one commit stamped with ``stamp``.

    ``reprocess_window``: for append/overwrite, rows of the target whose ``reprocess_date_column`` falls
    in the window are replaced by the batch in one commit (SEMANTICS §13.4).
    """
    _require_strategy(target, spec.strategy)
    _require_layout_columns(frame, spec)
    adapter = adapter or adapter_for(spark, target)
    outcome = WriteOutcome(target=target.name, format=target.format, strategy=spec.strategy)
    if adapter.already_committed(stamp):
        outcome.already_committed = True
        return outcome
    try:
        result = _dispatch(adapter, frame, spec, stamp, outcome, reprocess_window)
    except LakeLogicError as exc:
        _raise_if_outside_window(exc, target, spec, reprocess_window)
        conflict = as_conflict(exc, target.name) if type(exc) is CommitError else None
        if conflict is not None:
            raise conflict from exc
        raise
    except Exception as exc:
        _raise_if_outside_window(exc, target, spec, reprocess_window)
        conflict = as_conflict(exc, target.name)
        if conflict is not None:
            raise conflict from exc
        schema_error = as_schema_error(exc)
        if schema_error is not None:
            # the drift planned before the job failed belongs in the report all the same (§7.1)
            schema_error.drift = WriteDrift(
                list(outcome.added_columns), list(outcome.missing_columns), list(outcome.type_changes)
            )
            raise schema_error from exc
        raise CommitError(f"writing {target.format} target {target.name} failed: {exc}") from exc
    if result is not None:
        outcome.committed = result.committed
        outcome.snapshot = result.snapshot
        replaced = isinstance(result, ReplaceResult)  # counted by _replace (rows_added holds rewrites)
        if result.rows_added is not None and spec.strategy in ("append", "overwrite") and not replaced:
            outcome.rows_inserted = result.rows_added
    # else: a merge or SCD2 batch that changes nothing makes no commit, and the report says so
    # (committed false, no snapshot) rather than claiming one that no table history shows
    return outcome


def _dispatch(
    adapter: TableAdapter,
    frame: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
    reprocess_window: tuple[datetime | None, datetime | None] | None,
) -> CommitResult | None:
    if spec.strategy == "merge":
        return _keyed_write(adapter, frame, spec, stamp, outcome)
    if spec.strategy == "scd2":
        return _scd2_write(adapter, frame, spec, stamp, outcome)
    aligned, plan = _evolve(adapter, frame, spec, outcome)
    if reprocess_window is not None and spec.reprocess_date_column and adapter.exists():
        return _replace(adapter, aligned, spec, stamp, outcome, spec.reprocess_date_column, reprocess_window)
    if spec.strategy == "append":
        return adapter.append(aligned, stamp, spec)
    return adapter.overwrite(
        aligned, stamp, spec, partitions=bool(spec.partition_by), replace_schema=plan.replace_schema
    )


def _replace(
    adapter: TableAdapter,
    aligned: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: WriteOutcome,
    column: str,
    window: tuple[datetime | None, datetime | None],
) -> CommitResult:
    """A reprocess (SEMANTICS §13.4): the target rows whose ``column`` is in ``window`` are replaced by the
    batch in one commit. Every batch row must be in the window too: one outside it would be added beside
    the rows it should replace and never be replaced by a later reprocess of the window, so the write
    fails instead (checked while the rows are written, no extra job). The report counts the batch rows
    as inserted and the replaced target rows as deleted; the rows a format writes again because they
    share a file with replaced ones are neither."""
    start, end = window
    inserted = spec.batch_rows if spec.batch_rows is not None else aligned.count()
    counted = replace(spec, batch_rows=inserted)
    guarded = _refuse_rows_outside(aligned, column, start, end)
    result = adapter.replace_where(guarded, stamp, counted, column=column, start=start, end=end)
    outcome.rows_inserted = inserted
    if isinstance(result, ReplaceResult) and result.rows_deleted is not None:
        outcome.rows_deleted = result.rows_deleted
    return result


def _inside(column: str, start: object, end: object) -> Column:
    """``start <= column < end``, false for NULL (the predicate the path formats delete by)."""
    inside = F.lit(True)
    if start is not None:
        inside = inside & (q(column) >= F.lit(start))
    if end is not None:
        inside = inside & (q(column) < F.lit(end))
    return F.coalesce(inside, F.lit(False))


def _refuse_rows_outside(frame: DataFrame, column: str, start: object, end: object) -> DataFrame:
    """``frame`` whose rows fail the job that writes them when ``column`` is outside ``[start, end)``."""
    failure = F.raise_error(F.lit(f"{_OUTSIDE_WINDOW}: a batch row's {column} is outside the window"))
    # a filter that keeps every row or fails: the batch's schema (nullability included) stays as it is
    return frame.where(F.when(_inside(column, start, end), F.lit(True)).otherwise(failure))


def _raise_if_outside_window(
    exc: BaseException,
    target: ResolvedTarget,
    spec: WriteSpec,
    window: tuple[datetime | None, datetime | None] | None,
) -> None:
    """The clear error for a write that failed on :func:`_refuse_rows_outside`'s check."""
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        if _OUTSIDE_WINDOW in str(current):
            start, end = window if window is not None else (None, None)
            column = spec.reprocess_date_column
            raise CommitError(
                f"reprocess of {target.name}: the batch has rows whose {column} is outside the window "
                f"[{start}, {end}) that the write replaces; written, they would sit beside rows a later "
                "reprocess of their dates does not replace (duplicates). Nothing was written.",
                hint=f"a reprocess batch holds only rows whose {column} is in the window: check that the "
                f"read is limited to the window and that no transformation moves {column} out of it",
            ) from exc
        seen.append(current)
        current = current.__cause__ or current.__context__
