"""Merge (upsert on primary key) as a change set (SEMANTICS §13.2, §13.6).

:func:`merge_changes` joins the prepared batch (one row per key) with the target on the key and yields
only the rows that change, each with ``_ll_op`` = insert | update | delete and the complete new row in
the target schema. Every format applies that change set in one commit (Iceberg ``MERGE INTO``; file
formats rewrite only the files holding changed keys). An identical re-run yields an empty change set.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakelogic.tables.spark_batch import DELETE_FLAG, q
from lakelogic.tables.spec import WriteSpec

OP = "_ll_op"
PRESENT = "__t__present"


def tcol(name: str) -> str:
    return f"__t__{name}"


def _differs(a: Column, b: Column) -> Column:
    return ~a.eqNullSafe(b)


def merge_changes(
    batch: DataFrame,
    target: DataFrame | None,
    schema: StructType,
    *,
    keys: tuple[str, ...],
    batch_columns: set[str],
    spec: WriteSpec,
) -> DataFrame:
    """The change set of merging ``batch`` into ``target`` (both already in ``schema``).

    ``batch`` must hold one row per key plus ``_ll_delete``; ``batch_columns`` are the columns the batch
    really brought (others were filled with NULL by alignment and keep the target's value on update).
    """
    spark = batch.sparkSession
    if target is None:
        target = spark.createDataFrame([], schema)
    # columns added by this write are NULL in the current target rows
    old_columns = [
        (q(c) if c in target.columns else F.lit(None).cast(schema[c].dataType)).alias(tcol(c))
        for c in schema.names
    ]
    renamed = target.select(*old_columns, F.lit(True).alias(PRESENT))
    condition = None
    for k in keys:
        clause = q(k) == F.col(tcol(k))
        condition = clause if condition is None else condition & clause
    joined = batch.join(renamed, on=condition, how="left")

    matched = F.col(PRESENT).isNotNull()
    is_delete = F.col(DELETE_FLAG)
    ignored = spec.ignored_in_compare() | set(keys)
    soft = spec.soft_delete_column if spec.soft_delete_column in schema.names else None
    soft_meta = {
        c for c in (spec.soft_delete_time_column, spec.soft_delete_reason_column) if c in schema.names
    }
    soft_all = ({soft} | soft_meta) if soft else set()

    compared = [c for c in schema.names if c in batch_columns and c not in ignored and c not in soft_all]
    differs = F.lit(False)
    for c in compared:
        differs = differs | _differs(q(c), F.col(tcol(c)))
    if soft and soft not in batch_columns:
        differs = differs | F.col(tcol(soft)).isNotNull()  # an upsert revives a soft-deleted row

    soft_value = F.lit(spec.soft_delete_value).cast(schema[soft].dataType) if soft else F.lit(None)
    if soft:
        already_deleted = F.col(tcol(soft)).eqNullSafe(soft_value)
        delete_op = F.when(already_deleted, F.lit(None)).otherwise(F.lit("update"))
    else:
        delete_op = F.lit("delete")
    op = (
        F.when(is_delete & ~matched, F.lit(None))
        .when(is_delete, delete_op)
        .when(~matched, F.lit("insert"))
        .when(differs, F.lit("update"))
        .otherwise(F.lit(None))
    )

    def value(c: str) -> Column:
        dtype = schema[c].dataType
        old = F.col(tcol(c))
        if soft and c == soft:
            upsert = q(c) if c in batch_columns else F.lit(None).cast(dtype)
            return F.when(is_delete, soft_value).otherwise(upsert)
        if c in soft_meta:
            if c == spec.soft_delete_time_column:
                when_deleted = (
                    q(spec.cdc_timestamp_field)
                    if spec.cdc_timestamp_field and spec.cdc_timestamp_field in batch.columns
                    else F.lit(spec.as_of)
                )
            else:
                when_deleted = q(spec.cdc_op_field) if spec.cdc_op_field in batch.columns else F.lit("delete")
            upsert = q(c) if c in batch_columns else F.lit(None)
            return F.when(is_delete, when_deleted.cast(dtype)).otherwise(upsert.cast(dtype))
        if c in spec.created_columns:
            return F.when(matched, old).otherwise(q(c))
        if c in batch_columns:
            return F.when(is_delete, old).otherwise(q(c))
        return old

    out = joined.select(*[value(c).alias(c) for c in schema.names], op.alias(OP))
    return out.where(F.col(OP).isNotNull())
