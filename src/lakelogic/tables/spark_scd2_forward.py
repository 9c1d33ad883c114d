"""SCD2 forward keys: one batch change after the whole stored history of its key (SEMANTICS §13.3).

The general computation (:mod:`spark_scd2_versions`) runs every event of a touched key through window
operators, which Spark evaluates row by row without generated code: at 10M stored rows and a 100k-row batch
that was ~2.3 CPU-s for 150k events, the largest single cost of an SCD2 write. Most batches do not need it:
each key brings one change, later than anything stored for it. For such a *forward* key the outcome needs
no ordering at all:

* a new key opens version 1, starting at ``effective_from_default``;
* the current version's tracked values → no new version; the batch's untracked columns update the
  current version in place (a change only when they differ);
* other tracked values → the current version ends at the change time and the next version opens there.

A key is forward when its key values are not NULL, the batch holds exactly one row for it (exact
duplicates, which collapse, take the general path), that row is no CDC delete and has a change time, and
either nothing is stored for the key or its stored history ends in exactly one current version that is the
latest by start and by change time, every stored version has a change time, the row is strictly later than
all of them, and (with a version column) the current version's number equals the number of stored
versions. Every other key (late rows, several changes of one key, deletes, deleted keys coming back) goes
through the general computation, and both change sets are committed together.

Where the stored history is the one this writer keeps (versions 1..n, each ending where the next starts,
one current), the forward rows are exactly the general computation's; tests compare both. The general
computation also re-normalises older versions of a key it touches; the forward path only ever writes the
current version and the new one (docs/decisions.md, "SCD2 forward keys").
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType, TimestampType

from lakelogic.tables.spark_batch import DELETE_FLAG, cast_to, q
from lakelogic.tables.spark_merge import CLOSED, OP
from lakelogic.tables.spark_scd2_versions import (
    HASH,
    T,
    default_literal,
    opened_surrogate_key,
    tracked_columns,
    tracked_hash,
    untracked_columns,
)
from lakelogic.tables.spec import Scd2Spec, WriteSpec

FORWARD = "_ll_forward"
CUR = "_ll_cur"  # prefix of the key's current stored version's columns (NULL for a new key)
NEW_KEY = "_ll_new_key"
OTHER = "other"  # change-set operation of a row the general computation still has to handle
_EVENTS = "_ll_events"
_CUR_T = "_ll_cur_t"
_CUR_H = "_ll_cur_h"
_STORED_COUNTS = ("_ll_sn", "_ll_stn", "_ll_ncur", "_ll_maxfrom", "_ll_maxt")


def _key_condition(keys: list[str], left: DataFrame, right: DataFrame) -> Column:
    condition = F.lit(True)
    for k in keys:
        condition = condition & left[k].eqNullSafe(right[k])
    return condition


def other_keys_stored(stored: DataFrame, other: DataFrame, keys: list[str]) -> DataFrame:
    """The stored versions of the keys the general computation handles (NULL-safe on the key)."""
    other_keys = other.select(*[q(k) for k in keys]).distinct()
    return stored.join(other_keys, on=_key_condition(keys, stored, other_keys), how="left_semi")


def one_row_per_key(spec: WriteSpec, keys: list[str]) -> bool:
    """True when the caller proved the batch unique on a subset of the business key
    (``WriteSpec.keys_unique`` is proven over ``primary_key``): then every key with no NULL in it has
    exactly one batch row, and the per-key count, an aggregation and a join over the batch, is known."""
    return spec.keys_unique and bool(spec.primary_key) and set(spec.primary_key) <= set(keys)


def _classify(
    aligned: DataFrame,
    stored: DataFrame | None,
    schema: StructType,
    *,
    scd: Scd2Spec,
    spec: WriteSpec,
    tracked: list[str],
    partitions: int,
) -> DataFrame:
    """Every batch row with its key's stored summary and a forward flag."""
    keys = list(scd.business_key)
    ts = scd.timestamp_field
    t_type = aligned.schema[ts].dataType if ts else TimestampType()
    # hash-partitioned by key once: the per-key count and the joins reuse it. Exact duplicates are not
    # removed here (a shuffle over the whole batch); a key with two rows is left to the general path
    events = aligned.repartition(partitions, *[q(k) for k in keys])
    batch_t = q(ts) if ts else F.lit(spec.as_of).cast(TimestampType())
    events = events.select("*", batch_t.alias(T), tracked_hash(tracked).alias(HASH))
    if one_row_per_key(spec, keys):
        joined = events.withColumn(_EVENTS, F.lit(1))
    else:
        # a left join: a row whose key holds a NULL matches no count and is left to the general path
        per_key = events.groupBy(*[q(k) for k in keys]).agg(F.count(F.lit(1)).alias(_EVENTS))
        joined = events.join(per_key, on=keys, how="left")

    if stored is None:
        joined = joined.select(
            "*",
            *[F.lit(None).alias(c) for c in _STORED_COUNTS],
            *[cast_to(F.lit(None), f.dataType).alias(stored_name(f.name)) for f in schema.fields],
            cast_to(F.lit(None), t_type).alias(_CUR_T),
            F.lit(None).cast(StringType()).alias(_CUR_H),
        )
        later: Column = F.lit(False)
    else:
        current = F.coalesce(q(scd.current_flag).cast("boolean"), F.lit(False))
        stored_t = cast_to(q(ts), t_type) if ts else cast_to(q(scd.effective_from), TimestampType())
        summary = stored.groupBy(*[q(k) for k in keys]).agg(
            F.count(F.lit(1)).alias("_ll_sn"),
            F.count(stored_t).alias("_ll_stn"),
            F.sum(current.cast("int")).alias("_ll_ncur"),
            F.max(q(scd.effective_from)).alias("_ll_maxfrom"),
            F.max(stored_t).alias("_ll_maxt"),
        )
        # the current version by a join, not a max_by over structs (a sort aggregate without generated
        # code). A key with several current versions gets its rows repeated, but such a key is never
        # forward, and the general computation collapses exact duplicates.
        current_rows = stored.where(current).select(
            *[q(k) for k in keys],
            *[q(c).alias(stored_name(c)) for c in schema.names],
            stored_t.alias(_CUR_T),
            tracked_hash(tracked).alias(_CUR_H),
        )
        joined = joined.join(summary, on=keys, how="left").join(current_rows, on=keys, how="left")
        later = (
            (F.col("_ll_ncur") == 1)
            & (F.col(stored_name(scd.effective_from)) == F.col("_ll_maxfrom"))
            & (F.col("_ll_stn") == F.col("_ll_sn"))
            & (F.col(_CUR_T) == F.col("_ll_maxt"))
            & (F.col(T) > F.col("_ll_maxt"))
        )
        if scd.version_column:
            later = later & (F.col(stored_name(scd.version_column)) == F.col("_ll_sn"))

    new_key = F.col("_ll_sn").isNull()
    keys_present = F.lit(True)
    for k in keys:
        keys_present = keys_present & q(k).isNotNull()
    forward = (
        keys_present & (F.col(_EVENTS) == 1) & ~F.col(DELETE_FLAG) & F.col(T).isNotNull() & (new_key | later)
    )
    return joined.select("*", F.coalesce(forward, F.lit(False)).alias(FORWARD), new_key.alias(NEW_KEY))


def stored_name(column: str) -> str:
    """The classified frame's copy of a column of the key's current stored version."""
    return f"{CUR}_{column}"


def forward_change_set(
    aligned: DataFrame,
    stored: DataFrame | None,
    schema: StructType,
    *,
    scd: Scd2Spec,
    spec: WriteSpec,
    batch_columns: set[str],
    partitions: int,
) -> DataFrame:
    """The forward keys' changes plus, as operation ``OTHER``, the batch rows of every other key: target
    columns, the operation, the closed flag and the CDC delete flag."""
    keys = list(scd.business_key)
    scd_cols = set(scd.scd_columns)
    data_cols = [c for c in schema.names if c not in scd_cols]
    tracked = tracked_columns(scd, [c for c in data_cols if c in batch_columns], spec)
    untracked = untracked_columns(scd, data_cols, batch_columns, tracked, spec)
    from_type = schema[scd.effective_from].dataType
    to_type = schema[scd.effective_to].dataType
    classified = _classify(
        aligned, stored, schema, scd=scd, spec=spec, tracked=tracked, partitions=partitions
    )
    new_key = F.col(NEW_KEY)
    opens = new_key | (F.col(HASH) != F.col(_CUR_H))

    # one Column per name: every F.col is a few gateway round trips, and each name recurs in four rows
    @functools.cache
    def current(c: str) -> Column:
        return F.col(f"`{stored_name(c)}`")

    @functools.cache
    def batch(c: str) -> Column:
        return q(c)

    start = F.when(new_key, default_literal(scd.effective_from_default, from_type)).otherwise(
        cast_to(F.col(T), from_type)
    )
    sentinel = default_literal(scd.effective_to_default, to_type)
    opened: dict[str, Column] = {c: batch(c) for c in data_cols}
    opened |= {
        scd.effective_from: start,
        scd.effective_to: sentinel,
        scd.current_flag: F.lit(True),
    }
    if scd.version_column:
        opened[scd.version_column] = F.when(new_key, F.lit(1)).otherwise(current(scd.version_column) + 1)
    if scd.surrogate_key:
        opened[scd.surrogate_key] = opened_surrogate_key(scd, [batch(k) for k in keys], start)
    if scd.change_reason_column:
        changed = [F.when(~batch(c).eqNullSafe(current(c)), F.lit(c)) for c in tracked]
        listed = F.concat_ws(",", *changed) if changed else F.lit("")
        # no tracked change listed: the key comes back after a delete, a first version again
        opened[scd.change_reason_column] = F.when(new_key | (listed == ""), F.lit("initial_load")).otherwise(
            listed
        )

    kept: dict[str, Column] = {c: current(c) for c in schema.names}
    closing = kept | {scd.effective_to: cast_to(F.col(T), to_type), scd.current_flag: F.lit(False)}
    in_place = kept | {c: batch(c) for c in untracked} | {scd.effective_to: sentinel}
    for values in (opened, closing, in_place):
        _clear_soft_delete(values, schema, spec)

    compared = [c for c in schema.names if c not in spec.ignored_in_compare() | {*keys, scd.effective_from}]
    updates_in_place = F.lit(False)
    for c in compared:
        updates_in_place = updates_in_place | ~in_place[c].eqNullSafe(current(c))

    def shaped(values: dict[str, Column], op: str, closed: bool) -> Column:
        return F.struct(
            *[cast_to(values[c], schema[c].dataType).alias(c) for c in schema.names],
            F.lit(op).alias(OP),
            F.lit(closed).alias(CLOSED),
            (F.col(DELETE_FLAG) if op == OTHER else F.lit(False)).alias(DELETE_FLAG),
        )

    # one pass: each batch row yields its rows of the change set through one explode (a union of
    # filtered branches would re-plan, and with different column pruning re-run, the joins per branch)
    forward = F.col(FORWARD)
    produced = F.array(
        F.when(forward & opens, shaped(opened, "insert", False)),
        F.when(forward & opens & ~new_key, shaped(closing, "update", True)),
        F.when(forward & ~opens & updates_in_place, shaped(in_place, "update", False)),
        F.when(~forward, shaped({c: batch(c) for c in schema.names}, OTHER, False)),
    )
    return (
        classified.select(F.explode(produced).alias("_ll_row"))
        .where(F.col("_ll_row").isNotNull())
        .select("_ll_row.*")
    )


def other_rows(changes: DataFrame, columns: list[str]) -> DataFrame:
    """The ``OTHER`` rows of a forward change set in the batch's own shape (``columns``)."""
    return changes.where(F.col(OP) == OTHER).select(*[q(c) for c in columns])


def _clear_soft_delete(values: dict[str, Column], schema: StructType, spec: WriteSpec) -> None:
    """Soft-delete columns are set only on versions a CDC delete closed, never on forward rows."""
    soft = spec.soft_delete_column
    if soft and soft in schema.names:
        values[soft] = F.lit(None)
        for meta in (spec.soft_delete_time_column, spec.soft_delete_reason_column):
            if meta in schema.names:
                values[str(meta)] = F.lit(None)
