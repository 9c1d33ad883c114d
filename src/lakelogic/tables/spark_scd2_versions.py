"""SCD2 version computation (SEMANTICS §13.3): stored versions + batch rows -> the new version set.

For the keys in the batch only: the current target versions of those keys and the batch rows become one
stream of *events* per key (change time ``_ll_t``). Events sort by time; a run of consecutive events with
the same tracked values is one version (so unchanged rows open nothing and late rows slot in); a CDC
delete is a tombstone event that ends the version before it. Window functions derive start/end,
current flag, version number, surrogate key and change reason.
"""

from __future__ import annotations

import uuid

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, StringType, StructType, TimestampType

from lakelogic.errors import MergeKeyError
from lakelogic.tables.spark_batch import DELETE_FLAG, cast_to, null_as, projected, q, quote_ident
from lakelogic.tables.spec import Scd2Spec, WriteSpec

T = "_ll_t"  # change time
SRC = "_ll_src"  # 0 = stored version, 1 = batch row
HASH = "_ll_h"  # tracked values (JSON text); tombstones get TOMBSTONE
HAS_TARGET = "_ll_has_target"
OLD_CREATED = "_ll_old_created"
GROUP = "_ll_grp"
TOMBSTONE = "\u0000delete"


def scd_column_types(scd: Scd2Spec, batch: StructType, target: StructType | None) -> dict[str, DataType]:
    """SCD column types: stored type, else the model's (batch) type, else the timestamp field's, else
    timestamp (SEMANTICS §13.3 item 6)."""
    ts_type = batch[scd.timestamp_field].dataType if scd.timestamp_field in batch.fieldNames() else None

    def pick(name: str, fallback: DataType) -> DataType:
        if target is not None and name in target.fieldNames():
            return target[name].dataType
        if name in batch.fieldNames():  # declared in the model
            return batch[name].dataType
        return fallback

    date_like = ts_type or TimestampType()
    types = {
        scd.effective_from: pick(scd.effective_from, date_like),
        scd.effective_to: pick(scd.effective_to, date_like),
        scd.current_flag: pick(scd.current_flag, BooleanType()),
    }
    if scd.version_column:
        types[scd.version_column] = pick(scd.version_column, IntegerType())
    if scd.surrogate_key:
        types[scd.surrogate_key] = pick(scd.surrogate_key, StringType())
    if scd.change_reason_column:
        types[scd.change_reason_column] = pick(scd.change_reason_column, StringType())
    return types


def shape_batch(frame: DataFrame, scd: Scd2Spec, types: dict[str, DataType]) -> DataFrame:
    """Batch with the SCD columns present (typed NULL; they are computed later)."""
    as_sql = [null_as(c, types[c]) if c in types else quote_ident(c) for c in frame.columns]
    as_sql += [null_as(name, dtype) for name, dtype in types.items() if name not in frame.columns]
    shaped = projected(frame, as_sql)
    if shaped is not None:
        return shaped
    kept = [F.lit(None).cast(types[c]).alias(c) if c in types else q(c) for c in frame.columns]
    added = [
        F.lit(None).cast(dtype).alias(name) for name, dtype in types.items() if name not in frame.columns
    ]
    return frame.select(*kept, *added)


def tracked_columns(scd: Scd2Spec, data_columns: list[str], spec: WriteSpec) -> list[str]:
    if scd.track_columns:
        missing = [c for c in scd.track_columns if c not in data_columns]
        if missing:
            raise MergeKeyError(f"scd2.track_columns not in the batch: {', '.join(missing)}")
        return list(scd.track_columns)
    excluded = set(scd.business_key) | set(spec.ignored_in_compare()) | set(spec.generated_columns)
    if scd.timestamp_field:
        excluded.add(scd.timestamp_field)
    return [c for c in data_columns if c not in excluded]


def untracked_columns(
    scd: Scd2Spec, data_cols: list[str], batch_columns: set[str], tracked: list[str], spec: WriteSpec
) -> set[str]:
    """Batch columns a later row of the same version updates in place (SEMANTICS §13.3 item 2)."""
    excluded = {*tracked, *scd.business_key, *spec.created_columns}
    if scd.timestamp_field:
        excluded.add(scd.timestamp_field)
    return {c for c in data_cols if c in batch_columns and c not in excluded}


# JSON text options of the tracked-value comparison: Spark's default timestamp text stops at milliseconds,
# so values a microsecond apart compared equal (no version opened; a tie nothing ordered)
JSON_TEXT_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}


def tracked_hash(columns: list[str]) -> Column:
    """The values of ``columns`` as JSON text (what SCD2 compares; equal text, equal values)."""
    if not columns:
        return F.lit("")
    return F.to_json(F.struct(*[q(c).alias(c) for c in columns]), JSON_TEXT_OPTIONS)


def _check_conflicts(events: DataFrame, keys: list[str], compared: list[str]) -> None:
    """Same key and change time with different values is an error (nothing written), as for a merge: which
    row would be the version is ambiguous, and picking one made the result depend on partitioning and
    input order (so an identical re-run rewrote it). Different tracked values, or equal tracked values
    but a different untracked column (``compared``: the data columns a change is judged on). One hash
    aggregation over the batch events (duplicates need no removal first: they cannot widen min..max)."""
    # deletes compare as tombstones, whatever before-image a CDC delete carries
    content = F.when(F.col(HASH) == TOMBSTONE, F.lit(TOMBSTONE)).otherwise(tracked_hash(compared))
    rows = (
        events.groupBy(*[q(k) for k in keys], F.col(T))
        .agg(
            (F.min(HASH) != F.max(HASH)).alias("_ll_tracked"),
            (F.min(content) != F.max(content)).alias("_ll_other"),
        )
        .where(F.col("_ll_tracked") | F.col("_ll_other"))
        # the time as the (UTC) session writes it: collected as a datetime it took the Python process's
        # local zone (§0: times the runtime produces are UTC)
        .withColumn("_ll_at", F.col(T).cast("string"))
        .limit(5)
        .collect()
    )
    if rows:
        samples = "; ".join(", ".join(f"{k}={r[k]!r}" for k in keys) + f" at {r['_ll_at']}" for r in rows)
        which = "tracked" if any(r["_ll_tracked"] for r in rows) else "untracked"
        raise MergeKeyError(
            f"scd2 batch has rows with the same key and change time but different {which} values: {samples}",
            hint="give each change its own timestamp_field value, or deduplicate the batch first",
        )


def random_uuid(parts: list[Column]) -> Column:
    """A random UUID (version 4 layout) per row, as a *deterministic* expression: SHA-256 of the row's
    identity (key values and start, unique per version) salted with a fresh random value per call.
    Spark's ``uuid()`` is non-deterministic, and row-level writes refuse a source plan that contains one
    (a copy-on-write Iceberg MERGE failed with INVALID_NON_DETERMINISTIC_EXPRESSIONS)."""
    digest = F.sha2(F.concat_ws("|", F.lit(uuid.uuid4().hex), *[p.cast("string") for p in parts]), 256)
    return F.concat_ws(
        "-",
        F.substring(digest, 1, 8),
        F.substring(digest, 9, 4),
        F.concat(F.lit("4"), F.substring(digest, 14, 3)),
        F.concat(F.lit("8"), F.substring(digest, 18, 3)),
        F.substring(digest, 21, 12),
    )


def opened_surrogate_key(scd: Scd2Spec, key_columns: list[Column], start: Column) -> Column:
    """The surrogate key of a version a batch row opens: a random UUID (``uuid``) or the first 16 hex
    characters of SHA-256 over the key values and the version's start."""
    if scd.surrogate_key_strategy == "uuid":
        return random_uuid([*key_columns, start])
    parts = [k.cast("string") for k in key_columns] + [start.cast("string")]
    return F.substring(F.sha2(F.concat_ws("|", *parts), 256), 1, 16)


def default_literal(value: str, dtype: DataType) -> Column:
    return cast_to(F.lit(value), dtype)


def compute_versions(
    batch: DataFrame,
    stored: DataFrame | None,
    schema: StructType,
    *,
    scd: Scd2Spec,
    spec: WriteSpec,
    batch_columns: set[str],
    partitions: int | None = None,
) -> DataFrame:
    """The complete new version set of the batch's keys, in ``schema`` (target) column order.

    With ``partitions``, the events are hash-partitioned by the business key once: every later window and
    aggregation is keyed by it, so none of them shuffles again."""
    keys = list(scd.business_key)
    scd_cols = set(scd.scd_columns)
    data_cols = [c for c in schema.names if c not in scd_cols]
    tracked = tracked_columns(scd, [c for c in data_cols if c in batch_columns], spec)
    from_type = schema[scd.effective_from].dataType
    ts = scd.timestamp_field
    t_type = batch.schema[ts].dataType if ts else TimestampType()
    created = [c for c in spec.created_columns if c in schema.names]

    is_delete = F.col(DELETE_FLAG)
    batch_t = q(ts) if ts else F.lit(spec.as_of).cast(TimestampType())
    batch_events = batch.select(
        *[q(c) for c in data_cols],
        batch_t.alias(T),
        F.lit(1).alias(SRC),
        F.when(is_delete, F.lit(TOMBSTONE)).otherwise(tracked_hash(tracked)).alias(HASH),
        F.lit(None).cast(StringType()).alias("_ll_old_sk"),
    )
    ignored = spec.ignored_in_compare()
    _check_conflicts(batch_events, keys, [c for c in data_cols if c not in ignored])
    if partitions:
        batch_events = batch_events.repartition(partitions, *[q(k) for k in keys])
    batch_events = batch_events.dropDuplicates()

    events = batch_events
    if stored is not None:
        current = F.col(f"`{scd.current_flag}`")
        stored_t = q(ts).cast(t_type) if ts else q(scd.effective_from).cast(TimestampType())
        sk = q(scd.surrogate_key).cast(StringType()) if scd.surrogate_key else F.lit(None).cast(StringType())
        versions = stored.select(
            *[q(c) for c in data_cols],
            stored_t.alias(T),
            F.lit(0).alias(SRC),
            tracked_hash(tracked).alias(HASH),
            sk.alias("_ll_old_sk"),
        )
        # A closed version that no later version starts at (the key's last version, or one followed
        # by a gap) was deleted at its end: keep that tombstone, or re-normalising the key's history
        # would join the versions on both sides of the gap when their tracked values are equal.
        by_start = Window.partitionBy(*[q(k) for k in keys]).orderBy(q(scd.effective_from))
        next_start = F.lead(q(scd.effective_from)).over(by_start)
        deleted_at_end = ~F.coalesce(current, F.lit(False)) & ~F.coalesce(
            next_start == q(scd.effective_to), F.lit(False)
        )
        deletions = (
            stored.withColumn("_ll_deleted_at_end", deleted_at_end)
            .where("_ll_deleted_at_end")
            .select(
                *[q(c) for c in data_cols],
                q(scd.effective_to).cast(t_type).alias(T),
                F.lit(0).alias(SRC),
                F.lit(TOMBSTONE).alias(HASH),
                F.lit(None).cast(StringType()).alias("_ll_old_sk"),
            )
        )
        events = events.unionByName(versions).unionByName(deletions)
        if partitions:
            events = events.repartition(partitions, *[q(k) for k in keys])

    # one event per (key, time): a batch row at a stored version's time corrects that version in place
    at_time = Window.partitionBy(*[q(k) for k in keys], F.col(T))
    old_created = [
        F.max(F.when(F.col(SRC) == 0, q(c))).over(at_time).alias(f"{OLD_CREATED}{c}") for c in created
    ]
    events = events.select(
        "*",
        (F.min(SRC).over(at_time) == 0).alias(HAS_TARGET),
        F.max(F.when(F.col(SRC) == 0, F.col("_ll_old_sk"))).over(at_time).alias("_ll_sk_at"),
        *old_created,
        # rows of one key and time that are still two differ only in columns no change is judged on
        # (lineage, CDC operation; _check_conflicts refused the rest): their text orders them, so the
        # one kept never depends on partitioning or input order
        F.row_number().over(at_time.orderBy(F.col(SRC).desc(), tracked_hash(data_cols))).alias("_ll_pick"),
    ).where("_ll_pick = 1")

    by_key = Window.partitionBy(*[q(k) for k in keys]).orderBy(F.col(T))
    events = events.withColumn(
        "_ll_new", F.coalesce(F.lag(HASH).over(by_key) != F.col(HASH), F.lit(True)).cast("int")
    ).withColumn(GROUP, F.sum("_ll_new").over(by_key.rowsBetween(Window.unboundedPreceding, 0)))

    # one row per version group: representative = earliest stored event, else earliest event
    payload = [*data_cols, T, SRC, HASH, HAS_TARGET, "_ll_sk_at", *[f"{OLD_CREATED}{c}" for c in created]]
    rep_order = F.struct((~F.col(HAS_TARGET)).alias("a"), F.col(T).alias("b"))
    groups = events.groupBy(*[q(k) for k in keys], F.col(GROUP)).agg(
        F.min(T).alias("_ll_start"),
        F.min_by(F.struct(*[q(c) for c in payload]), rep_order).alias("rep"),
        F.max_by(F.struct(*[q(c) for c in payload]), F.col(T)).alias("latest"),
        # a stored version no batch row re-states (a batch row at its time would have replaced it)
        F.max((F.col(SRC) == 0).cast("int")).alias("_ll_has_stored"),
    )
    key_groups = Window.partitionBy(*[q(k) for k in keys]).orderBy(F.col(GROUP))
    later_groups = key_groups.rowsBetween(1, Window.unboundedFollowing)
    groups = (
        groups.withColumn("_ll_next_start", F.lead("_ll_start").over(key_groups))
        .withColumn("_ll_next_hash", F.lead("rep." + HASH).over(key_groups))
        .withColumn("_ll_delete_op", F.lead(_batch_delete_op(spec, data_cols)).over(key_groups))
        .withColumn("_ll_stored_after", F.coalesce(F.max("_ll_has_stored").over(later_groups), F.lit(0)) == 1)
        .where(F.col("rep." + HASH) != F.lit(TOMBSTONE))
    )
    versions_w = Window.partitionBy(*[q(k) for k in keys]).orderBy(F.col(GROUP))
    groups = groups.withColumn("_ll_version", F.row_number().over(versions_w))
    is_last = F.col("_ll_next_start").isNull()
    closed_by_delete = F.coalesce(F.col("_ll_next_hash") == F.lit(TOMBSTONE), F.lit(False))
    # Batch rows apply in change-time order (§13.3): a row with the version's tracked values updates its
    # untracked columns in place while that version is current, i.e. when no stored version (or stored
    # deletion) follows it; versions the same batch opens (or re-states) later close it only afterwards.
    # Stored versions the batch re-states do not count, so an identical re-run keeps the in-place values.
    from_batch = (F.col("latest." + SRC) == 1) & (F.col("latest." + T) >= F.col("rep." + T))
    in_place = ~F.col("_ll_stored_after") & from_batch
    untracked = untracked_columns(scd, data_cols, batch_columns, tracked, spec)

    def data_value(c: str) -> Column:
        if c in keys:
            return q(c)
        if c in created:
            old = F.col(f"rep.{OLD_CREATED}{c}")
            return F.coalesce(old, F.col(f"rep.`{c}`"))
        if c in untracked:
            return F.when(in_place, F.col(f"latest.`{c}`")).otherwise(F.col(f"rep.`{c}`"))
        return F.col(f"rep.`{c}`")

    start = F.when(
        F.col("_ll_version") == 1, default_literal(scd.effective_from_default, from_type)
    ).otherwise(F.col("_ll_start").cast(from_type))
    to_type = schema[scd.effective_to].dataType
    end = F.when(is_last, default_literal(scd.effective_to_default, to_type)).otherwise(
        F.col("_ll_next_start").cast(to_type)
    )
    out = groups.select(
        *[data_value(c).alias(c) for c in data_cols],
        start.alias(scd.effective_from),
        end.alias(scd.effective_to),
        is_last.alias("_ll_is_last"),
        closed_by_delete.alias("_ll_closed_by_delete"),
        F.col("_ll_delete_op"),
        F.col("_ll_version"),
        F.col("rep._ll_sk_at").alias("_ll_sk_at"),
        F.col("rep." + HAS_TARGET).alias("_ll_rep_stored"),
    )
    return _finish_columns(out, schema, scd, spec, tracked, keys)


def _batch_delete_op(spec: WriteSpec, data_cols: list[str]) -> Column:
    """On a version group opened by a batch CDC delete: the delete's op value (SEMANTICS §13.6 reason
    column), or ``delete`` when the op column is not stored; NULL on other groups."""
    stored_op = spec.cdc_op_field in data_cols
    op = F.col(f"rep.`{spec.cdc_op_field}`").cast("string") if stored_op else F.lit("delete")
    return F.when((F.col("rep." + HASH) == F.lit(TOMBSTONE)) & (F.col("rep." + SRC) == 1), op)


def _finish_columns(
    frame: DataFrame, schema: StructType, scd: Scd2Spec, spec: WriteSpec, tracked: list[str], keys: list[str]
) -> DataFrame:
    """Current flag, version, surrogate key, change reason, soft-delete columns; target column order."""
    is_current = F.col("_ll_is_last") & ~F.col("_ll_closed_by_delete")
    values: dict[str, Column] = {scd.current_flag: is_current.cast(schema[scd.current_flag].dataType)}
    if scd.version_column:
        values[scd.version_column] = F.col("_ll_version").cast(schema[scd.version_column].dataType)
    if scd.surrogate_key:
        if scd.surrogate_key_strategy == "uuid":
            parts = [q(k) for k in keys] + [q(scd.effective_from)]
            sk = F.coalesce(F.col("_ll_sk_at"), random_uuid(parts))
        else:
            parts = [q(k).cast("string") for k in keys] + [q(scd.effective_from).cast("string")]
            sk = F.substring(F.sha2(F.concat_ws("|", *parts), 256), 1, 16)
        values[scd.surrogate_key] = sk.cast(schema[scd.surrogate_key].dataType)
    if scd.change_reason_column:
        order = Window.partitionBy(*[q(k) for k in keys]).orderBy(F.col("_ll_version"))
        changed = [F.when(~q(c).eqNullSafe(F.lag(q(c)).over(order)), F.lit(c)) for c in tracked]
        listed = F.concat_ws(",", *changed) if changed else F.lit("")
        reason = (
            F.when(F.col("_ll_closed_by_delete"), F.lit("delete"))
            .when(F.col("_ll_version") == 1, F.lit("initial_load"))
            .when(listed == "", F.lit("initial_load"))  # back after a delete: no tracked change to list
            .otherwise(listed)
        )
        values[scd.change_reason_column] = reason.cast(schema[scd.change_reason_column].dataType)
    soft = spec.soft_delete_column
    if soft and soft in schema.names:
        values[soft] = F.when(F.col("_ll_closed_by_delete"), F.lit(spec.soft_delete_value)).cast(
            schema[soft].dataType
        )
        if spec.soft_delete_time_column in schema.names:
            col = str(spec.soft_delete_time_column)
            values[col] = F.when(F.col("_ll_closed_by_delete"), q(scd.effective_to)).cast(
                schema[col].dataType
            )
        reason_col = spec.soft_delete_reason_column
        if reason_col and reason_col in schema.names:
            # the op value of the batch's delete; a version a stored delete closed keeps its reason
            reason_value = F.coalesce(F.col("_ll_delete_op"), q(reason_col).cast("string"))
            values[reason_col] = F.when(F.col("_ll_closed_by_delete"), reason_value).cast(
                schema[reason_col].dataType
            )
    columns = [(values[c] if c in values else q(c)).alias(c) for c in schema.names]
    return frame.select(*columns)
