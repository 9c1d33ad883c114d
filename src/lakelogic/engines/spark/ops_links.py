"""Spark implementations of the link ops: lookup and join (SEMANTICS §9.2).

Reference columns are renamed to hidden names before joining so they can never clash with frame
columns; the op's outputs then replace same-named frame columns in place or are appended. Spark's
adaptive execution broadcasts small references on its own (a pre-aggregated lookup reference
usually is small).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import (
    NO_OUTPUT_ROW,
    col,
    field_type,
    hidden_name,
    op_error,
    require_columns,
    text_of,
    with_columns,
    with_default,
)
from lakelogic.engines.spark.ops_warnings import observe_for_warning
from lakelogic.plan.steps import Transform


def _link(step: Transform, ctx: SparkRunContext) -> DataFrame:
    name = step.params["reference"]
    if name not in ctx.links:
        known = ", ".join(sorted(ctx.links)) or "none"
        raise op_error(step, f"link `{name}` is not defined", "reference", hint=f"links: {known}")
    return ctx.links[name]


def _require_link_columns(step: Transform, ref: DataFrame, names: list[str], key: str) -> None:
    missing = [n for n in names if n not in ref.columns]
    if missing:
        raise op_error(
            step,
            f"link `{step.params['reference']}` has no column(s) {', '.join(missing)}",
            key,
            hint=f"its columns: {', '.join(ref.columns)}",
        )


def _join_keys(step: Transform, frame: DataFrame, ref: DataFrame) -> tuple[Column, Column]:
    """(frame key, reference key); keys of different types are compared as text."""
    on, key = step.params["on"], step.params["key"]
    frame_type, ref_type = field_type(frame, on), field_type(ref, key)
    if frame_type.simpleString() == ref_type.simpleString():
        return col(on), col(key)
    return text_of(on, frame_type), text_of(key, ref_type)


def _without(frame: DataFrame, hidden: list[str]) -> DataFrame:
    return frame.select(*(col(c) for c in frame.columns if c not in hidden))


def apply_lookup(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    """Left join on a reference pre-aggregated to one row per key (the smallest value), so the row
    count never changes. Keys with several reference rows are detected by an observation on that
    aggregate (no extra job) and reported as ``lookup_duplicate_keys`` after the run's actions."""
    p = step.params
    ref = _link(step, ctx)
    require_columns(step, frame, [p["on"]], "on")
    _require_link_columns(step, ref, [p["key"]], "key")
    _require_link_columns(step, ref, [p["value"]], "value")
    frame_key, ref_key = _join_keys(step, frame, ref)
    key_col, value_col = hidden_name(step, frame, "lk_key"), hidden_name(step, frame, "lk_value")
    rows_col = hidden_name(step, frame, "lk_rows")
    reference = (
        ref.where(ref_key.isNotNull())
        .groupBy(ref_key.alias(key_col))
        .agg(F.min(col(p["value"])).alias(value_col), F.count(F.lit(1)).alias(rows_col))
    )
    # max is idempotent: a plan part Spark executes twice (e.g. sort sampling) merges to the same value.
    most_rows = F.coalesce(F.max(F.col(rows_col)), F.lit(0))
    reference = observe_for_warning(
        step, reference, ctx, most_rows, lambda n: _duplicate_keys_message(step, n)
    ).drop(rows_col)
    joined = frame.join(reference, frame_key == F.col(key_col), "left")
    value: Column = F.col(value_col)
    if p.get("default_value") is not None:
        value = with_default(value, field_type(ref, p["value"]), p["default_value"])
    return _without(with_columns(joined, {p["field"]: value}), [key_col, value_col])


def _duplicate_keys_message(step: Transform, most_rows: object) -> str | None:
    if not isinstance(most_rows, int) or most_rows <= 1:
        return None
    return (
        f"lookup_duplicate_keys: {step.yaml_path} (lookup {step.params['field']}): link "
        f"`{step.params['reference']}` has keys with several rows (up to {most_rows}); the smallest "
        f"`{step.params['value']}` was used"
    )


def _join_marking_misses(
    frame: DataFrame, reference: DataFrame, condition: Column, key_col: str, how: str
) -> DataFrame:
    """The join, except that the frame rows an ``inner``/``right`` join drops are kept with
    ``NO_OUTPUT_ROW`` TRUE; the executor counts them as filtered and removes them (SEMANTICS §9.2: join
    misses are ``filtered``, fan-out and reference-only rows ``expanded``, not just the net change). A
    matched row always has the reference key (``=`` never matches NULL)."""
    if how not in ("inner", "right"):
        return frame.join(reference, condition, how)
    if how == "inner":
        joined = frame.join(reference, condition, "left")
        return joined.withColumn(NO_OUTPUT_ROW, F.col(key_col).isNull())
    present = f"{key_col}_frame"
    joined = frame.withColumn(present, F.lit(True)).join(reference, condition, "full")
    miss = F.col(present).isNotNull() & F.col(key_col).isNull()
    return joined.withColumn(NO_OUTPUT_ROW, miss).drop(present)


def apply_join(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    """SQL join adding ``prefix + f = COALESCE(ref.f, defaults[f])`` per listed field.

    The key is added only when listed; when it is listed under the frame's own key name, the output
    keeps the frame's key and falls back to the reference key (rows only in the reference).
    """
    p = step.params
    ref = _link(step, ctx)
    on, key, fields = p["on"], p["key"], list(p["fields"])
    require_columns(step, frame, [on], "on")
    _require_link_columns(step, ref, [key], "key")
    _require_link_columns(step, ref, fields, "fields")
    frame_key, ref_key = _join_keys(step, frame, ref)
    key_col = hidden_name(step, frame, "jn_key")
    hidden = {f: hidden_name(step, frame, f"jn_{i}") for i, f in enumerate(fields)}
    reference = ref.select(ref_key.alias(key_col), *(col(f).alias(hidden[f]) for f in fields))
    joined = _join_marking_misses(frame, reference, frame_key == F.col(key_col), key_col, p["type"])
    defaults = dict(p.get("defaults") or {})
    assignments: dict[str, Column] = {}
    for f in fields:
        value: Column = F.col(hidden[f])
        if f == key and p["prefix"] + f == on:
            value = F.coalesce(col(on), value)
        if defaults.get(f) is not None:
            value = with_default(value, field_type(ref, f), defaults[f])
        assignments[p["prefix"] + f] = value
    return _without(with_columns(joined, assignments), [key_col, *hidden.values()])
