"""Spark implementations of the reshaping ops: rollup, pivot, unpivot (SEMANTICS §9.2).

Pivot uses conditional aggregation (one aggregate per pivot value x value column) rather than
Spark's ``pivot()``, so the column names, ``first``/``last`` semantics and value matching (as text)
are exactly those of the plan and identical on every engine.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    LongType,
    NumericType,
    TimestampType,
)

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.enforce import is_internal
from lakelogic.engines.spark.ops_frame import (
    NO_OUTPUT_ROW,
    col,
    field_type,
    op_error,
    require_columns,
    with_default,
)
from lakelogic.plan.ops_common import value_text
from lakelogic.plan.ops_reshape import pivot_column_name
from lakelogic.plan.steps import Transform

# A pivot without `values` turns every distinct value into columns; beyond this it is a mistake.
MAX_INFERRED_PIVOT_VALUES = 1000


def apply_rollup(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    group_by = list(p["group_by"])
    require_columns(step, frame, group_by, "group_by")
    keys = list(p["keys"] or ())
    require_columns(step, frame, keys, "keys")
    aggregates: list[Column] = [F.expr(sql).alias(out) for out, sql in p["aggregations"].items()]
    key_value: Column | None = None
    if p.get("key_expr"):
        key_value = F.expr(p["key_expr"]).cast("string")
    elif keys:
        texts = [col(k).cast("string") for k in keys]
        any_null = reduce(lambda a, b: a | b, (col(k).isNull() for k in keys))
        # A multi-column key is NULL (skipped) when any part is NULL, so "a|" never stands for (a, NULL).
        key_value = texts[0] if len(texts) == 1 else F.when(~any_null, F.concat_ws("|", *texts))
    if key_value is not None:
        collect = F.collect_set if p.get("distinct", True) else F.collect_list
        key_list = F.array_sort(collect(key_value))  # both skip NULLs
        aggregates.append(key_list.alias(p["rollup_keys_column"]))
        if p.get("rollup_keys_count_column"):
            aggregates.append(F.size(key_list).alias(p["rollup_keys_count_column"]))
    run_id_source = next(
        (c for c in (p.get("upstream_run_id_column"), p.get("fallback_run_id_column")) if c in frame.columns),
        None,
    )
    if run_id_source and p.get("upstream_run_ids_column"):
        run_ids = F.array_sort(F.collect_set(col(run_id_source).cast("string")))
        aggregates.append(run_ids.alias(p["upstream_run_ids_column"]))
    if not aggregates:
        if not group_by:
            raise op_error(step, "nothing to compute: give group_by, aggregations or keys", "group_by")
        return frame.select(*(col(g) for g in group_by)).distinct()
    return frame.groupBy(*(col(g) for g in group_by)).agg(*aggregates)


def _pivot_values(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> list[tuple[Any, ...]]:
    """The declared pivot values, or the distinct non-NULL ones sorted as text (one small job)."""
    declared = step.params["values"]
    if declared:
        return [tuple(v) for v in declared]
    pivot_cols = list(step.params["pivot_cols"])
    texts = [col(c).cast("string").alias(c) for c in pivot_cols]
    not_null = reduce(lambda a, b: a & b, (col(c).isNotNull() for c in pivot_cols))
    distinct = frame.where(not_null).select(*texts).distinct().limit(MAX_INFERRED_PIVOT_VALUES + 1)
    found = sorted(tuple(row) for row in distinct.collect())
    if len(found) > MAX_INFERRED_PIVOT_VALUES:
        raise op_error(
            step,
            f"more than {MAX_INFERRED_PIVOT_VALUES} distinct pivot values",
            "values",
            hint="list the wanted values in `values`",
        )
    ctx.warnings.append(
        f"pivot_values_inferred: {step.yaml_path}: `values` not given; pivoted on {len(found)} distinct "
        f"value(s) of {', '.join(pivot_cols)}"
    )
    return found


_AGGREGATES = {
    "sum": F.sum,
    "avg": F.avg,
    "min": F.min,
    "max": F.max,
    "count": F.count,
    "first": F.min,  # first = smallest non-NULL (deterministic, unlike Spark's first())
    "last": F.max,
}


def apply_pivot(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    id_vars, pivot_cols, value_cols = list(p["id_vars"]), list(p["pivot_cols"]), list(p["value_cols"])
    require_columns(step, frame, id_vars, "id_vars")
    require_columns(step, frame, pivot_cols, "pivot_cols" if len(pivot_cols) > 1 else "pivot_col")
    require_columns(step, frame, value_cols, "value_cols" if len(value_cols) > 1 else "value_col")
    separator, aliases = p["separator"], dict(p["value_aliases"])
    cells: list[Column] = []
    names: list[str] = []
    for value in _pivot_values(step, frame, ctx):
        texts = tuple(value_text(v) for v in value)
        alias = aliases.get(separator.join(texts), separator.join(texts))
        matches = reduce(
            lambda a, b: a & b,
            (col(c).cast("string") == F.lit(t) for c, t in zip(pivot_cols, texts, strict=True)),
        )
        for value_col in value_cols:
            agg = p["aggs"].get(value_col, p["agg"])
            name = pivot_column_name(p["name_template"], texts, alias, value_col, agg, separator)
            cell = _AGGREGATES[agg](F.when(matches, col(value_col)))
            if p.get("fill_value") is not None:
                # count/sum/avg give numbers whatever the value column holds; first/last/min/max its type
                cell_type = LongType() if agg in ("count", "sum", "avg") else field_type(frame, value_col)
                cell = with_default(cell, cell_type, p["fill_value"])
            cells.append(cell.alias(name))
            names.append(name)
    clashes = sorted({n for n in [*id_vars, *names] if [*id_vars, *names].count(n) > 1})
    if clashes:
        raise op_error(step, f"pivot output column(s) {', '.join(clashes)} would repeat", "name_template")
    if not cells:
        return frame.select(*(col(c) for c in id_vars)).distinct()
    return frame.groupBy(*(col(c) for c in id_vars)).agg(*cells)


def _common_type(types: list[DataType]) -> str | None:
    """The type unpivoted values share; ``None`` lets Spark widen numerics itself; text otherwise."""
    if all(t == types[0] for t in types):
        return None
    if all(isinstance(t, NumericType) for t in types):
        return None
    if all(isinstance(t, (DateType, TimestampType)) for t in types):
        return "timestamp"
    return "string"


def apply_unpivot(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    id_vars = list(p["id_vars"])
    require_columns(step, frame, id_vars, "id_vars")
    # LakeLogic's working columns (the source file lineage reads) are no values: they ride along per row
    carried = [c for c in frame.columns if is_internal(c) and c not in id_vars]
    value_vars = list(p["value_vars"]) or [c for c in frame.columns if c not in id_vars and c not in carried]
    require_columns(step, frame, value_vars, "value_vars")
    key_field, value_field, aliases = p["key_field"], p["value_field"], dict(p["value_aliases"])
    if not value_vars:
        raise op_error(step, "no value columns to unpivot", "value_vars")
    types = [field_type(frame, c) for c in value_vars]
    common = _common_type(types)
    values = [col(c).cast(common) if common else col(c) for c in value_vars]
    pairs = [
        F.struct(F.lit(aliases.get(c, c)).alias(key_field), value.alias(value_field))
        for c, value in zip(value_vars, values, strict=True)
    ]
    if not p.get("include_nulls", False):  # the value as output, as the filter on the output column was
        pairs = [F.when(value.isNotNull(), pair) for value, pair in zip(values, pairs, strict=True)]
    entries = F.array_compact(F.array(*pairs))  # the NULL values dropped (§9.2) before the rows are made
    entry = "__ll_unpivot_entry"
    # A row all of whose values are NULL yields no row: it is kept once, marked NO_OUTPUT_ROW, so it
    # counts as filtered and the other rows' extra rows as expanded (§9.1, §12), not only the net change.
    kept = [*id_vars, *(c for c in carried if c not in value_vars)]
    exploded = frame.select(
        *(col(c) for c in kept),
        F.explode_outer(entries).alias(entry),
        (F.size(entries) == 0).alias(NO_OUTPUT_ROW),
    )
    return exploded.select(
        *(col(c) for c in kept),
        F.col(entry).getField(key_field).alias(key_field),
        F.col(entry).getField(value_field).alias(value_field),
        F.col(NO_OUTPUT_ROW),
    )
