"""Batch preparation for keyed writes: one row per key, CDC net effect (SEMANTICS §3.5, §13.2).

The output carries the internal boolean column ``_ll_delete`` (a CDC delete). Duplicate detection is
one aggregation over the batch (never over the target), limited to a few sample keys.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import AtomicType, DataType, TimestampType

from lakelogic.errors import MergeKeyError
from lakelogic.tables.spec import WriteSpec

DELETE_FLAG = "_ll_delete"
SAMPLE_KEYS = 5
ROWS_PER_CHANGE_PARTITION = 50_000


def q(name: str) -> Column:
    """A column reference that survives dots and odd characters in names."""
    return F.col(f"`{name}`")


def cast_type_name(dtype: DataType) -> str:
    """The name Spark SQL parses back to ``dtype`` in a cast. ``timestamp`` alone would follow the
    session's ``spark.sql.timestampType``; ``TimestampType`` is always the local-time-zone one."""
    return "timestamp_ltz" if isinstance(dtype, TimestampType) else dtype.simpleString()


def quote_ident(name: str) -> str:
    """A column or table name part as Spark SQL text, always backticked: a bare ``current_date`` would be
    the function."""
    return "`" + name.replace("`", "``") + "`"


def atomic_type_name(dtype: DataType) -> str | None:
    """:func:`cast_type_name` of an atomic type; None for a nested one (its field names would need the
    quoting rules of Spark's own ``DataType.sql``, which PySpark does not expose)."""
    return cast_type_name(dtype) if isinstance(dtype, AtomicType) else None


def null_as(name: str, dtype: DataType) -> str | None:
    """``CAST(NULL AS <type>) AS <name>`` for an atomic type; None for a nested one."""
    type_name = atomic_type_name(dtype)
    return None if type_name is None else f"CAST(NULL AS {type_name}) AS {quote_ident(name)}"


def projected(frame: DataFrame, expressions: list[str | None]) -> DataFrame | None:
    """``frame.selectExpr(*expressions)``, or None when one of them could not be written as SQL text.

    SQL text is one gateway call per expression; the same projection from Column objects costs 3-4
    (a lookup of ``functions`` and a call per function, a release per object), ~0.5 ms each: a write's
    batch alignments took 60-80 round trips that way."""
    if any(e is None for e in expressions):
        return None
    return frame.selectExpr(*[e for e in expressions if e is not None])


def cast_to(column: Column, dtype: DataType) -> Column:
    """``column.cast(dtype)``; atomic types go by name: PySpark sends a ``DataType`` as JSON for the JVM to
    parse (several gateway round trips each, which added up to ~0.2 s in one SCD2 plan)."""
    if isinstance(dtype, AtomicType):
        return column.cast(cast_type_name(dtype))
    return column.cast(dtype)


def change_partitions(spark: SparkSession, rows: int) -> int:
    """Shuffle partitions for work sized by the batch (its keys' stored versions, the change set), not by
    the table. With the session default (200) each window/aggregate stage over a small change set spends
    far more on scheduling tasks than on data: 30k SCD2 version rows took 7 s, most of it in ~1,200 tasks."""
    default = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    return max(1, min(default, math.ceil(rows / ROWS_PER_CHANGE_PARTITION)))


def delete_flag(batch: DataFrame, spec: WriteSpec) -> Column:
    """TRUE for CDC delete events (``cdc_delete_values``, case-insensitive), else FALSE."""
    if not spec.cdc_op_field or spec.cdc_op_field not in batch.columns or not spec.cdc_delete_values:
        return F.lit(False)
    values = [v.lower() for v in spec.cdc_delete_values]
    return F.coalesce(F.lower(q(spec.cdc_op_field).cast("string")).isin(values), F.lit(False))


def duplicate_key_samples(batch: DataFrame, keys: tuple[str, ...]) -> list[str]:
    """Up to five keys that occur more than once (one aggregation over the batch)."""
    rows = batch.groupBy(*[q(k) for k in keys]).count().where(F.col("count") > 1).limit(SAMPLE_KEYS).collect()
    return [", ".join(f"{k}={row[k]!r}" for k in keys) for row in rows]


def _latest_per_key(batch: DataFrame, keys: tuple[str, ...], order_column: str) -> DataFrame:
    """The latest row per key. Rows tied at the latest time collapse when identical; different ones are
    an error, since which one wins would depend on input order (SEMANTICS §0: results never do)."""
    window = Window.partitionBy(*[q(k) for k in keys]).orderBy(q(order_column).desc_nulls_last())
    latest = batch.withColumn("_ll_rank", F.rank().over(window)).where("_ll_rank = 1").drop("_ll_rank")
    return _without_duplicates(
        latest.dropDuplicates(), keys, f"with different values at the same latest {order_column}"
    )


def _refuse(keys: tuple[str, ...], samples: list[str], why: str) -> MergeKeyError:
    return MergeKeyError(
        f"the batch has duplicate keys ({', '.join(keys)}) {why}; sample keys: {'; '.join(samples)}",
        hint="set materialization.merge_dedup_guard: true to keep the latest row per key "
        "(by source.cdc_timestamp_field or source.watermark_field)",
    )


def one_row_per_key(batch: DataFrame, keys: tuple[str, ...], spec: WriteSpec) -> DataFrame:
    """Reduce the batch to one row per key per SEMANTICS §13.2 / §3.5, adding ``_ll_delete``.

    * CDC with ``cdc_timestamp_field``: events apply in time order, so the latest event per key is the net
      result (an upsert replaces the row; a delete removes it).
    * ``merge_dedup_guard``: latest by the CDC timestamp, else the watermark field; without an ordering
      column exact duplicates collapse and any other duplicate is an error.
    * otherwise any duplicate key refuses the write with sample keys.

    A batch the caller proved unique on the key (``WriteSpec.keys_unique``) already is one row per key:
    every rule above would keep it as it is, so it is returned without an aggregation.
    """
    flagged = batch.withColumn(DELETE_FLAG, delete_flag(batch, spec))
    if spec.keys_unique:
        return flagged
    cdc_ts = spec.cdc_timestamp_field if spec.cdc_timestamp_field in batch.columns else None
    if spec.cdc_enabled and cdc_ts:
        return _latest_per_key(flagged, keys, cdc_ts)
    if spec.merge_dedup_guard:
        order = cdc_ts or (spec.watermark_field if spec.watermark_field in batch.columns else None)
        if order:
            return _latest_per_key(flagged, keys, order)
        return _without_duplicates(
            flagged.dropDuplicates(), keys, "with different values and no ordering column"
        )
    if spec.cdc_enabled:
        why = "(several CDC events per key need source.cdc_timestamp_field)"
    else:
        why = "and merge_dedup_guard is false"
    return _without_duplicates(flagged, keys, why)


def _without_duplicates(frame: DataFrame, keys: tuple[str, ...], why: str) -> DataFrame:
    """``frame`` after checking that no key occurs twice. Cached before the check, so the check fills the
    cache the write then reads instead of computing the batch once more (the caller releases it), unless
    reading it again is a mere scan (:func:`rereads_the_same`)."""
    cached = frame if rereads_the_same(frame) else frame.persist()  # unpersist below: a no-op if not
    try:
        samples = duplicate_key_samples(cached, keys)
    except BaseException:
        cached.unpersist()
        raise
    if samples:
        cached.unpersist()
        raise _refuse(keys, samples, why)
    return cached


def with_soft_delete_columns(batch: DataFrame, spec: WriteSpec) -> DataFrame:
    """The batch with the configured soft-delete columns it lacks, as typed NULLs, so the table gets them
    (SEMANTICS §13.6 does not require them in the model). Callers leave them out of the columns the batch
    "brought", so an upsert keeps or clears them as it does for any column the source did not send."""
    missing = {c: t for c, t in spec.soft_delete_columns.items() if c not in batch.columns}
    return batch.withColumns({c: F.lit(None).cast(t) for c, t in missing.items()}) if missing else batch


def check_keys_present(batch: DataFrame, keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in batch.columns]
    if missing:
        raise MergeKeyError(
            f"key column(s) {', '.join(missing)} are not in the batch; columns: {', '.join(batch.columns)}"
        )


# Logical plan nodes that only pass rows through (no shuffle, no state) and leaves whose rows cannot move.
_PASS_THROUGH = frozenset({"Project", "Filter", "SubqueryAlias", "Union", "LocalRelation"})


def rereads_the_same(frame: DataFrame) -> bool:
    """True when evaluating ``frame`` again is one scan that yields the same rows: deterministic
    projections, filters and unions over files listed when the frame was made (``spark.read`` of Parquet,
    JSON...; what a contract run hands to its write) or literal rows.

    A keyed write reads its batch several times (key range, statements); such a frame needs no cache,
    whose build costs more than the scans it saves (100k rows: ~0.4 s against ~0.15 s per scan). Anything
    else is cached: joins and aggregations would run again, a table-format scan (Iceberg, Delta) or a
    catalog table lists its files per query and could see another writer's commit between two reads, and
    a non-deterministic expression would give other values."""
    plan = frame._jdf.queryExecution().analyzed()
    if not plan.deterministic():
        return False
    pending = [plan]
    while pending:
        node = pending.pop()
        kind = node.getClass().getSimpleName()
        if kind == "LogicalRelation":
            if node.relation().getClass().getSimpleName() != "HadoopFsRelation":
                return False
            if node.relation().location().getClass().getSimpleName() != "InMemoryFileIndex":
                return False
        elif kind not in _PASS_THROUGH:
            return False
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))
    return True
