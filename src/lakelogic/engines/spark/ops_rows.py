"""Spark implementations of deduplicate, deduplicate_by_latest and explode (SEMANTICS §9.2)."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    StringType,
    StructType,
)

from lakelogic.engines.spark.casting import json_value_sql
from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.enforce import is_internal
from lakelogic.engines.spark.ops_frame import (
    col,
    comparable,
    field_type,
    hidden_name,
    op_error,
    require_columns,
)
from lakelogic.plan.ops_common import quote
from lakelogic.plan.steps import Transform


def apply_deduplicate(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    """One row per key with a window ``row_number`` (one shuffle).

    Order inside a key: ``sort_by`` in ``order`` (NULLs last), then every remaining column ascending
    with NULLs last, so the survivor never depends on partitioning or input order. Rows with a NULL
    key value are never collapsed. ``deduplicate_by_latest`` arrives with ``on``/``sort_by``/``order``
    already set by the compiler.
    """
    p = step.params
    on = list(p["on"])
    sort_by = list(p["sort_by"] or ())
    key_name = "key_columns" if step.op == "deduplicate_by_latest" else "on"
    require_columns(step, frame, on, key_name)
    require_columns(
        step, frame, sort_by, "timestamp_column" if step.op == "deduplicate_by_latest" else "sort_by"
    )
    # maps cannot be grouped or sorted as they are: every column takes part through a comparable form
    types = {f.name: f.dataType for f in frame.schema.fields}
    value = {c: comparable(col(c), types[c]) for c in frame.columns}
    # empty `on` keys on the data columns: LakeLogic's working columns (the source file lineage reads, a
    # malformed record's text) would tell two equal rows of two files apart
    keys = on or [c for c in frame.columns if not is_internal(c)]
    descending = p.get("order", "desc") == "desc"
    ordering = [value[c].desc_nulls_last() if descending else value[c].asc_nulls_last() for c in sort_by]
    rest = [c for c in frame.columns if c not in keys and c not in sort_by]
    # data columns first; working columns last, only to fix which of two equal rows survives
    ordering += [value[c].asc_nulls_last() for c in sorted(rest, key=is_internal)]
    # Spark sorts 0.0 and -0.0 as equal (also inside arrays, structs and maps): their text tells them
    # apart, so which one survives is fixed too
    ordering += [
        _zero_sign_text(col(c), types[c]).asc_nulls_last() for c in frame.columns if _holds_floating(types[c])
    ]
    window = Window.partitionBy(*(value[k] for k in keys)).orderBy(*(ordering or [F.lit(1)]))
    rank = hidden_name(step, frame, "rn")
    any_null_key = reduce(lambda a, b: a | b, (col(k).isNull() for k in keys), F.lit(False))
    ranked = frame.withColumn(rank, F.row_number().over(window))
    return ranked.where((F.col(rank) == 1) | any_null_key).drop(rank)


def _holds_floating(data_type: DataType) -> bool:
    """Whether a float or double sits anywhere in ``data_type``."""
    if isinstance(data_type, (FloatType, DoubleType)):
        return True
    if isinstance(data_type, ArrayType):
        return _holds_floating(data_type.elementType)
    if isinstance(data_type, MapType):
        return _holds_floating(data_type.keyType) or _holds_floating(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(_holds_floating(f.dataType) for f in data_type.fields)
    return False


def _zero_sign_text(column: Column, data_type: DataType) -> Column:
    """Text in which 0.0 and -0.0 differ: the value's own for a number, JSON for a nested value."""
    if isinstance(data_type, (FloatType, DoubleType)):
        return column.cast("string")
    return F.to_json(column)


def _elements(step: Transform, frame: DataFrame, field: str) -> Column:
    data_type = field_type(frame, field)
    if isinstance(data_type, ArrayType):
        return col(field)
    if isinstance(data_type, StringType):
        # JSON-array text (e.g. from `split`); non-string elements keep their JSON text, invalid -> NULL
        # (trailing text after the array too).
        return F.from_json(F.expr(json_value_sql(quote(field))), ArrayType(StringType()))
    raise op_error(
        step, f"column `{field}` is {data_type.simpleString()}, not an array or JSON-array text", "field"
    )


def apply_explode(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    """One row per element; a NULL or empty array gives one row with a NULL output (explode_outer)."""
    field, output = step.params["field"], step.params["output"]
    require_columns(step, frame, [field], "field")
    exploded = F.explode_outer(_elements(step, frame, field)).alias(output)
    items = [exploded if c == output else col(c) for c in frame.columns]
    if output not in frame.columns:
        items.append(exploded)
    return frame.select(*items)
