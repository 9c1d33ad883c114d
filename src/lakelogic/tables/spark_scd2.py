"""SCD2 writes (SEMANTICS §13.3), applied as a change set on (business key, effective_from).

The new version set of the batch's keys (:mod:`spark_scd2_versions`) is diffed against the stored one on
(key, effective_from): only inserted, updated and deleted version rows reach the table, in one commit. An
identical re-run yields an empty diff. A forward batch over a small key range of a merge-on-read Iceberg
table skips the change set: one ``MERGE`` applies it (:mod:`spark_scd2_merge`), with the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakelogic.errors import MergeKeyError
from lakelogic.tables.base import CommitResult, TableAdapter
from lakelogic.tables.key_range import batch_keys
from lakelogic.tables.spark_batch import (
    DELETE_FLAG,
    change_partitions,
    check_keys_present,
    delete_flag,
    null_as,
    projected,
    q,
    quote_ident,
    rereads_the_same,
    with_soft_delete_columns,
)
from lakelogic.tables.spark_iceberg import IcebergTable
from lakelogic.tables.spark_merge import CLOSED, OP, ChangeSummary, summarize_changes
from lakelogic.tables.spark_scd2_forward import OTHER, forward_change_set, other_keys_stored, other_rows
from lakelogic.tables.spark_scd2_merge import one_merge_applies, scd2_one_merge
from lakelogic.tables.spark_scd2_versions import (
    compute_versions,
    default_literal,
    scd_column_types,
    shape_batch,
)
from lakelogic.tables.spec import Scd2Spec, WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.unknown_member import stored_member, unknown_member


def diff_versions(
    new: DataFrame,
    old: DataFrame | None,
    schema: StructType,
    *,
    match: list[str],
    spec: WriteSpec,
    scd: Scd2Spec,
    partitions: int | None = None,
) -> DataFrame:
    """Change set between the stored and the new version rows of the affected keys, matched on
    (key, effective_from); lineage/created columns alone never make a change. With ``partitions`` both
    sides are hash-partitioned on the match columns into that many partitions (a small change set)."""
    if old is None:
        return new.withColumn(OP, F.lit("insert")).withColumn(CLOSED, F.lit(False))
    if partitions:
        new = new.repartition(partitions, *[q(c) for c in match])
        old = old.repartition(partitions, *[q(c) for c in match])
    ignored = spec.ignored_in_compare() | set(match)
    old_r = old.select(*[q(c).alias(f"__o__{c}") for c in schema.names], F.lit(True).alias("__o__present"))
    new_r = new.withColumn("__n__present", F.lit(True))
    condition = None
    for c in match:
        clause = q(c) == F.col(f"__o__{c}")
        condition = clause if condition is None else condition & clause
    joined = new_r.join(old_r, on=condition, how="full_outer")
    in_new = F.col("__n__present").isNotNull()
    in_old = F.col("__o__present").isNotNull()
    differs = F.lit(False)
    for c in schema.names:
        if c not in ignored:
            differs = differs | ~q(c).eqNullSafe(F.col(f"__o__{c}"))
    op = (
        F.when(in_new & ~in_old, F.lit("insert"))
        .when(in_old & ~in_new, F.lit("delete"))
        .when(differs, F.lit("update"))
    )
    old_current = F.coalesce(F.col(f"__o__{scd.current_flag}").cast("boolean"), F.lit(False))
    new_current = F.coalesce(q(scd.current_flag).cast("boolean"), F.lit(False))
    created = set(spec.created_columns)

    def value(c: str) -> Column:
        if c in created:
            return F.when(in_old, F.col(f"__o__{c}")).otherwise(q(c))
        return F.when(in_new, q(c)).otherwise(F.col(f"__o__{c}"))

    return joined.select(
        *[value(c).alias(c) for c in schema.names],
        op.alias(OP),
        (in_old & in_new & old_current & ~new_current).alias(CLOSED),
    ).where(F.col(OP).isNotNull())


def _unknown_member_row(
    adapter: TableAdapter, schema: StructType, scd: Scd2Spec, spec: WriteSpec, spark: SparkSession
) -> DataFrame | None:
    """The placeholder member (``scd2.unknown_member``) as an insert, when the table does not hold it yet."""
    member = unknown_member(
        scd.unknown_member,
        key_columns=scd.business_key,
        surrogate_key=scd.surrogate_key,
        where="unknown_member",
    )
    if member is None or stored_member(adapter, member, schema):
        return None
    values: dict[str, Column] = {
        scd.effective_from: default_literal(scd.effective_from_default, schema[scd.effective_from].dataType),
        scd.effective_to: default_literal(scd.effective_to_default, schema[scd.effective_to].dataType),
        scd.current_flag: F.lit(True),
    }
    if scd.version_column:
        values[scd.version_column] = F.lit(1)
    if scd.change_reason_column:
        # §13.3 knows three reasons; the placeholder is a first version like any other
        values[scd.change_reason_column] = F.lit("initial_load")
    for column, value in member.values.items():
        if column in schema.names:
            values[column] = F.lit(value)
    row = spark.range(1).select(
        *[values.get(c, F.lit(None)).cast(schema[c].dataType).alias(c) for c in schema.names],
        F.lit("insert").alias(OP),
        F.lit(False).alias(CLOSED),
    )
    return row


def scd2_write(
    adapter: TableAdapter,
    frame: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: Any,
    *,
    evolve: Callable[..., tuple[DataFrame, Any]],
) -> CommitResult | None:
    """Apply ``frame`` to an SCD2 target: compute the affected keys' versions, diff, commit once."""
    scd = spec.scd2
    if scd is None:
        raise MergeKeyError("strategy scd2 without scd2 settings")
    if scd.timestamp_field is None and spec.cdc_timestamp_field and spec.cdc_timestamp_field in frame.columns:
        # §3.5: a CDC batch's events apply in `cdc_timestamp_field` order, and a delete closes at its CDC
        # time (§13.6): without its own timestamp_field, SCD2 takes the change time from there, not as_of
        scd = replace(scd, timestamp_field=spec.cdc_timestamp_field)
        spec = replace(spec, scd2=scd)
    keys = list(scd.business_key)
    check_keys_present(frame, tuple(keys))
    if scd.timestamp_field and scd.timestamp_field not in frame.columns:
        raise MergeKeyError(f"scd2.timestamp_field {scd.timestamp_field!r} is not in the batch")
    current_schema = adapter.schema()
    types = scd_column_types(scd, frame.schema, current_schema)
    batch_columns = {c for c in frame.columns if c not in types and not c.startswith("_ll_")}
    frame = with_soft_delete_columns(frame, spec)
    flagged = frame.withColumn(DELETE_FLAG, delete_flag(frame, spec))
    shaped = shape_batch(flagged, scd, types)
    aligned, _ = evolve(adapter, shaped, spec, outcome)
    # a staged batch is re-read, not cached: see spark_batch.rereads_the_same
    if not rereads_the_same(aligned):
        aligned = aligned.persist()
    try:
        return _apply_scd2(adapter, aligned, spec, stamp, outcome, scd, batch_columns)
    finally:
        aligned.unpersist()


def _apply_scd2(
    adapter: TableAdapter,
    aligned: DataFrame,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: Any,
    scd: Scd2Spec,
    batch_columns: set[str],
) -> CommitResult | None:
    keys = list(scd.business_key)
    schema = StructType([f for f in aligned.schema.fields if f.name != DELETE_FLAG])
    target = in_range = None
    found = batch_keys(aligned, keys) if adapter.exists() else None
    if found is not None:
        rows = found.rows
    else:  # a first load reads no target: the run's row count when it gave one
        rows = spec.batch_rows if spec.batch_rows is not None else aligned.count()
    partitions = change_partitions(aligned.sparkSession, rows)
    if found is not None:
        target = found.read(adapter)
        # the one-MERGE path summarizes the whole (small) key range in its own statement
        in_range = _in_schema(target, schema)
    member = _unknown_member_row(adapter, schema, scd, spec, aligned.sparkSession)
    if (
        in_range is not None
        and found is not None
        and member is None
        and one_merge_applies(adapter, spec, scd, batch_columns)
    ):
        assert isinstance(adapter, IcebergTable)  # one_merge_applies checked it
        merged = scd2_one_merge(
            adapter,
            aligned,
            in_range,
            schema,
            stamp,
            scd=scd,
            spec=spec,
            batch_columns=batch_columns,
            found=found,
        )
        if merged is not None:
            outcome.rows_inserted, outcome.rows_updated = merged.inserted, merged.updated
            outcome.rows_deleted, outcome.versions_closed = 0, merged.closed
            return None if merged.snapshot is None else CommitResult(committed=True, snapshot=merged.snapshot)
    stored = (
        None if target is None else _stored_versions(target, aligned, schema, keys, rows, spec, partitions)
    )
    return _diff_and_commit(
        adapter, aligned, stored, schema, spec, stamp, outcome, scd, batch_columns, partitions, member
    )


def _in_schema(target: DataFrame, schema: StructType) -> DataFrame:
    """The target's columns in the batch's schema; a column the target lacks yet reads as NULL. As SQL
    text where the types allow (:func:`spark_batch.projected`)."""
    present = set(target.columns)
    as_sql = [quote_ident(f.name) if f.name in present else null_as(f.name, f.dataType) for f in schema]
    shaped = projected(target, as_sql)
    if shaped is not None:
        return shaped
    return target.select(
        *[q(c) if c in present else F.lit(None).cast(schema[c].dataType).alias(c) for c in schema.names]
    )


def _stored_versions(
    target: DataFrame,
    aligned: DataFrame,
    schema: StructType,
    keys: list[str],
    rows: int,
    spec: WriteSpec,
    partitions: int,
) -> DataFrame:
    """The batch keys' stored versions, not cached: the change set reads them in its own job (the per-key
    summary and the current versions are two scans of the range-pruned target there), and building a
    cache of them cost more than those scans (10M rows, clustered batch: about 1 JVM CPU-s of 6 per write,
    docs/decisions.md "Session 17"). Keys the forward path leaves to the general computation read them
    again, at the same snapshot (IcebergTable.read pins it)."""
    batch_keys_frame = aligned.select(*[q(k) for k in keys])
    if rows <= spec.broadcast_keys_max_rows:
        batch_keys_frame = F.broadcast(batch_keys_frame)  # probe the target without shuffling it
    stored = _in_schema(target.join(batch_keys_frame, on=keys, how="left_semi"), schema)
    return stored.repartition(partitions, *[q(k) for k in keys])  # the scan's many file splits -> few


def _diff_and_commit(
    adapter: TableAdapter,
    aligned: DataFrame,
    stored: DataFrame | None,
    schema: StructType,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: Any,
    scd: Scd2Spec,
    batch_columns: set[str],
    partitions: int,
    member: DataFrame | None,
) -> CommitResult | None:
    keys = list(scd.business_key)
    match = [*keys, scd.effective_from]

    def general(batch: DataFrame, versions_of: DataFrame | None) -> DataFrame:
        versions = compute_versions(
            batch, versions_of, schema, scd=scd, spec=spec, batch_columns=batch_columns, partitions=partitions
        )
        return diff_versions(
            versions, versions_of, schema, match=match, spec=spec, scd=scd, partitions=partitions
        )

    if spec.scd2_forward:
        changes = forward_change_set(
            aligned, stored, schema, scd=scd, spec=spec, batch_columns=batch_columns, partitions=partitions
        )
        if member is not None:
            changes = changes.unionByName(member.withColumn(DELETE_FLAG, F.lit(False)))
    else:
        changes = general(aligned, stored)
        if member is not None:
            changes = changes.unionByName(member)
    # at most `partitions` partitions, even where the plan lost the stored versions' key partitioning (an
    # empty stored scan is folded away, and the joins then shuffle to the session default; a cached plan
    # keeps its partitions, so every tiny one became a file of its own): a narrow merge, no shuffle
    cached = [changes.coalesce(partitions).persist()]
    try:
        summary = summarize_changes(cached[-1], tuple(keys), closed_column=CLOSED)
        if summary.counts.get(OTHER):
            # keys the forward path does not cover: the general computation, over those keys only
            other = other_rows(cached[-1], aligned.columns)
            versions_of = other_keys_stored(stored, other, keys) if stored is not None else None
            forward = cached[-1].where(F.col(OP) != OTHER).drop(DELETE_FLAG)
            cached.append(forward.unionByName(general(other, versions_of)).persist())
            summary = summarize_changes(cached[-1], tuple(keys), closed_column=CLOSED)
            cached[0].unpersist()
        return _commit(adapter, cached[-1], summary, spec, stamp, outcome, match)
    finally:
        for frame in cached:
            frame.unpersist()


def _commit(
    adapter: TableAdapter,
    changes: DataFrame,
    summary: ChangeSummary,
    spec: WriteSpec,
    stamp: CommitStamp,
    outcome: Any,
    match: list[str],
) -> CommitResult | None:
    """Report the counts, then apply the (cached) change set in one commit; nothing when it is empty."""
    counts = summary.counts
    outcome.rows_inserted = counts.get("insert", 0)
    outcome.rows_updated = counts.get("update", 0)
    outcome.rows_deleted = counts.get("delete", 0)
    outcome.versions_closed = summary.closed
    if not counts and adapter.exists():
        return None
    touching = counts.get("update", 0) + counts.get("delete", 0)
    bounds = {} if touching == 0 else (summary.bounds or None)
    # the cached frame itself (adapters skip its internal columns), so it is released before the publish
    # the business key is the join's hash key; effective_from is checked on its few matches
    ranged = tuple(match[len(match) - 1 :])
    return adapter.apply_changes(
        changes, stamp, spec, match=tuple(match), bounds=bounds, counts=counts, ranged=ranged
    )
