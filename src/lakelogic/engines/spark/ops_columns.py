"""Spark implementations of the column ops: rename, derive, filter, select, drop, trim, lower, upper,
coalesce, map_values, split, json_extract, bucket (SEMANTICS §9.2).

Each function is one lazy projection (or filter) over the frame: no actions, no extra jobs.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    MapType,
    NullType,
    NumericType,
    StringType,
    StructType,
)

from lakelogic.engines.spark.casting import json_value_sql, strict_cast_sql, trim_sql
from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import (
    col,
    field_type,
    op_error,
    require_columns,
    text_of,
    with_columns,
    with_default,
)
from lakelogic.engines.spark.ops_sqlviews import bound_expression
from lakelogic.plan.ops_common import literal, quote, value_text
from lakelogic.plan.steps import Transform
from lakelogic.types import parse_type

_TRIM_SIDES = {"both": "BOTH", "left": "LEADING", "right": "TRAILING"}


def apply_rename(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    mappings: dict[str, str] = dict(step.params["mappings"])
    pair = step.params.get("from")  # the contract's from/to form, if it used it
    missing = [c for c in mappings if c not in frame.columns]
    require_columns(step, frame, mappings, "from" if missing == [pair] else "mappings")
    # Simultaneous: a target may reuse a name that is itself renamed away in the same op (a <-> b).
    staying = set(frame.columns) - set(mappings)
    taken = sorted(t for t in mappings.values() if t in staying)
    if taken:
        key = "to" if pair is not None and taken == [mappings[pair]] else "mappings"
        raise op_error(step, f"target column(s) already exist: {', '.join(taken)}", key)
    return frame.select(*(col(c).alias(mappings.get(c, c)) for c in frame.columns))


def apply_derive(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    sql = step.params.get("sql_spark") or step.params["sql"]
    with bound_expression(step, sql, ctx) as value:
        return with_columns(frame, {step.params["field"]: value})


def apply_filter(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    # WHERE keeps TRUE rows only; FALSE and NULL rows are removed (counted as filtered by the engine).
    with bound_expression(step, step.params["sql"], ctx) as condition:
        return frame.where(condition)


def apply_select(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    columns = list(step.params["columns"])
    require_columns(step, frame, columns, "columns")
    return frame.select(*(col(c) for c in columns))


def apply_drop(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    dropped = set(step.params["columns"])  # absent names are ignored (SEMANTICS §9.2)
    return frame.select(*(col(c) for c in frame.columns if c not in dropped))


def _text_fields(step: Transform, frame: DataFrame) -> list[str]:
    """The op's fields that hold text; other types are left as they are (trimming a number is a no-op)."""
    fields = list(step.params["fields"])
    require_columns(step, frame, fields, "fields")
    return [f for f in fields if isinstance(field_type(frame, f), StringType)]


def apply_trim(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    side = _TRIM_SIDES[step.params.get("side", "both")]
    return with_columns(
        frame,
        {
            # TRIM(<side> <chars> FROM x) is native and code-generated: about half the cost of the
            # equivalent regexp_replace, less again with trim_sql's guard
            f: F.expr(trim_sql(quote(f), side))
            for f in _text_fields(step, frame)
        },
    )


def apply_lower(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    return with_columns(frame, {f: F.lower(col(f)) for f in _text_fields(step, frame)})


def apply_upper(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    return with_columns(frame, {f: F.upper(col(f)) for f in _text_fields(step, frame)})


def apply_coalesce(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    inputs = list(p["sources"]) or [p["field"]]
    require_columns(step, frame, inputs, "sources" if p["sources"] else "field")
    value = F.coalesce(*[col(c) for c in inputs])
    if p.get("default") is not None:
        text = any(isinstance(field_type(frame, c), StringType) for c in inputs)
        value = with_default(value, StringType() if text else field_type(frame, inputs[0]), p["default"])
    return with_columns(frame, {p["output"]: value})


def apply_map_values(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    require_columns(step, frame, [p["field"]], "field")
    data_type = field_type(frame, p["field"])
    # the value's text as §5.3 writes it: a timestamp is 2024-01-05T10:00:00Z, not "2024-01-05 10:00:00"
    text = text_of(p["field"], data_type)
    mapping: dict[str, Any] = dict(p["mapping"])
    default = p.get("default")
    as_text = _map_result_is_text([*mapping.values(), default], field_type(frame, p["field"]), default)

    def value(v: Any) -> Column:
        return F.lit(v).cast("string") if as_text and v is not None else F.lit(v)

    fallback: Column = value(default) if default is not None else (text if as_text else col(p["field"]))
    if not mapping:
        return with_columns(frame, {p["output"]: fallback})
    items = iter(mapping.items())
    key, first = next(items)
    mapped = F.when(text == F.lit(key), value(first))
    for key, v in items:
        mapped = mapped.when(text == F.lit(key), value(v))
    return with_columns(frame, {p["output"]: mapped.otherwise(fallback)})


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "text"


def _map_result_is_text(values: list[Any], column_type: DataType, default: Any) -> bool:
    """Whether ``map_values`` yields text: the mapped values, the default and (without a default) the
    unchanged column must share one type, and a boolean has no common type with text or numbers in Spark
    (``CASE WHEN .. THEN true ELSE <string column>`` does not resolve). When they are not all of one kind,
    every result is written as text (``true`` -> ``'true'``), which the model's strict cast then reads."""
    kinds = {_value_kind(v) for v in values if v is not None}
    if default is None:
        if isinstance(column_type, BooleanType):
            kinds.add("boolean")
        elif isinstance(column_type, NumericType):
            kinds.add("number")
        elif not isinstance(column_type, NullType):
            kinds.add("text")
    return "text" in kinds or len(kinds) > 1


def _java_regex_literal(text: str) -> str:
    """``text`` as a Java regex matching it literally (re.escape only escapes non-alphanumerics,
    which Java also reads as literals after a backslash)."""
    return re.escape(text)


def apply_split(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    require_columns(step, frame, [p["field"]], "field")
    # limit -1 keeps trailing empty parts: "a," -> ["a",""], "" -> [""]; NULL stays NULL.
    parts = F.split(col(p["field"]).cast("string"), _java_regex_literal(p["delimiter"]), -1)
    return with_columns(frame, {p["output"]: F.to_json(parts)})


def _spark_json_path(segments: tuple[str | int, ...]) -> str:
    path = "$"
    for seg in segments:
        if isinstance(seg, int):
            path += f"[{seg}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", seg):
            path += f".{seg}"
        else:
            path += f"['{seg}']"
    return path


def apply_json_extract(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    source = p["source"]
    require_columns(step, frame, [source], "source")
    source_sql = quote(source)
    if isinstance(field_type(frame, source), (StructType, MapType, ArrayType)):
        source_sql = f"to_json({source_sql})"  # nested input (e.g. a JSON object read as a struct)
    else:  # invalid JSON (trailing text included) gives NULL, not its first value's field
        source_sql = json_value_sql(source_sql)
    value = f"get_json_object({source_sql}, {literal(_spark_json_path(tuple(p['segments'])))})"
    if p.get("cast"):
        target = parse_type(p["cast"])
        if target.kind not in ("string", "json"):
            # §5.3's forms ("3.0" -> 3, YYYYMMDD dates), never rounded; what does not convert is NULL
            value = strict_cast_sql(value, StringType(), target)
    return with_columns(frame, {p["field"]: F.expr(value)})


_BIN_OPS = {
    "lt": lambda c, v: c < v,
    "lte": lambda c, v: c <= v,
    "gt": lambda c, v: c > v,
    "gte": lambda c, v: c >= v,
    "eq": lambda c, v: c == v,
}


def apply_bucket(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    require_columns(step, frame, [p["source"]], "source")
    source = col(p["source"])
    # labels and default share one type: text when they are of different kinds (as map_values does)
    as_text = _map_result_is_text([*(b["label"] for b in p["bins"]), p.get("default")], NullType(), True)

    def label(v: Any) -> Column:
        return F.lit(value_text(v)) if as_text and v is not None else F.lit(v)

    default = label(p.get("default"))
    result = F.when(source.isNull(), default)
    # Text holding numbers (a pre op over CSV text) is compared as a number: against an integer bound
    # Spark casts the text to an integer, so "100.7" compared equal to 100 and "1e3" was NULL.
    text = isinstance(field_type(frame, p["source"]), StringType)
    numeric = source.cast(DoubleType()) if text else source
    for b in p["bins"]:
        condition: Column = F.lit(True)
        for key, make in _BIN_OPS.items():
            bound = b.get(key)
            if bound is None:
                continue
            is_number = isinstance(bound, int | float) and not isinstance(bound, bool)
            condition = condition & (
                make(numeric, F.lit(float(bound))) if text and is_number else make(source, F.lit(bound))
            )
        result = result.when(condition, label(b["label"]))
    return with_columns(frame, {p["field"]: result.otherwise(default)})
