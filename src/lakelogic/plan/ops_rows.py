"""Compilers of the ops that change the row count or bring in a link (SEMANTICS §9.2):
deduplicate, deduplicate_by_latest, explode, date_range_explode, lookup, join."""

from __future__ import annotations

import re

from lakelogic.plan.ops_common import OpArgs, OpCompiled, literal, quote, unique
from lakelogic.plan.steps import RowEffect

DEDUP_ORDERS = ("desc", "asc")
JOIN_TYPES = ("left", "inner", "right", "full")
INTERVAL_UNITS = {"d": "DAY", "w": "WEEK", "mo": "MONTH", "h": "HOUR"}
_INTERVAL = re.compile(r"^\s*(\d+)\s*(mo|d|w|h)\s*$", re.IGNORECASE)


def _dedup(args: OpArgs, on: tuple[str, ...], sort_by: tuple[str, ...], order: str) -> OpCompiled:
    direction = order.upper()
    keys = ", ".join(quote(c) for c in on) or "<all columns>"
    ordering = ", ".join(f"{quote(c)} {direction} NULLS LAST" for c in sort_by)
    ordering = (
        f"{ordering}, <remaining columns> ASC NULLS LAST" if ordering else "<other columns> ASC NULLS LAST"
    )
    null_keys = " OR ".join(f"{quote(c)} IS NULL" for c in on)
    keep = f"__rn = 1 OR {null_keys}" if null_keys else "__rn = 1"
    sql = (
        f"SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY {ordering}) AS __rn "
        f"FROM {{input}}) WHERE {keep}"
    )
    return OpCompiled(
        params={"on": on, "sort_by": sort_by, "order": order},
        sql=sql,
        row_effect="dedup",
        reads=unique([*on, *sort_by]),
    )


def compile_deduplicate(args: OpArgs) -> OpCompiled:
    args.check_keys(("on", "by", "sort_by", "order"))
    on = args.names("on")
    by = args.names("by")
    if on and by and on != by:
        raise args.error("`by` is an alias of `on`; give one of them", "by")
    sort_by = args.names("sort_by")
    order = args.choice("order", DEDUP_ORDERS, "desc")
    return _dedup(args, on or by, sort_by, order)


def compile_deduplicate_by_latest(args: OpArgs) -> OpCompiled:
    args.check_keys(("key_columns", "timestamp_column"))
    keys = args.names("key_columns")
    timestamp = args.required_text("timestamp_column")
    compiled = _dedup(args, keys, (timestamp,), "desc")
    params = {"key_columns": keys, "timestamp_column": timestamp, **compiled.params}
    return OpCompiled(params=params, sql=compiled.sql, row_effect="dedup", reads=compiled.reads)


def compile_explode(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "output"))
    field = args.required_text("field")
    output = args.text("output") or field
    return OpCompiled(
        params={"field": field, "output": output},
        sql=(
            f"SELECT *, {quote(output)} FROM {{input}} LATERAL VIEW OUTER "
            f"explode({quote(field)}) AS {quote(output)}  -- JSON-array text is parsed first"
        ),
        row_effect="expand",
        creates=(output,),
        reads=(field,),
    )


def compile_date_range_explode(args: OpArgs) -> OpCompiled:
    args.check_keys(("output", "start_col", "end_col", "interval"))
    output = args.required_text("output")
    start = args.required_text("start_col")
    end = args.text("end_col")
    interval = args.text("interval", "1d")
    assert interval is not None
    match = _INTERVAL.match(interval)
    if match is None or int(match.group(1)) < 1:
        raise args.error(
            f"bad interval {interval!r}", "interval", hint="a positive count and a unit: 1d, 2w, 1mo, 6h"
        )
    count, unit = int(match.group(1)), match.group(2).lower()
    end_sql = f"COALESCE({quote(end)}, current_date())" if end else "current_date()"
    sql = (
        f"SELECT *, {quote(output)} FROM {{input}} LATERAL VIEW explode(CASE WHEN {quote(start)} IS NULL "
        f"OR {end_sql} < {quote(start)} THEN NULL ELSE sequence({quote(start)}, {end_sql}, "
        f"INTERVAL {count} {INTERVAL_UNITS[unit]}) END) AS {quote(output)}"
    )
    return OpCompiled(
        params={
            "output": output,
            "start_col": start,
            "end_col": end,
            "interval": interval,
            "count": count,
            "unit": unit,
        },
        sql=sql,
        row_effect="any",
        creates=(output,),
        reads=tuple(c for c in (start, end) if c),
    )


def compile_lookup(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "reference", "on", "key", "value", "default_value"))
    field = args.required_text("field")
    reference = args.required_text("reference")
    on = args.required_text("on")
    key = args.required_text("key")
    value = args.required_text("value")
    default = args.get("default_value")
    sql = (
        f"SELECT f.*, COALESCE(r.v, {literal(default)}) AS {quote(field)} FROM {{input}} f LEFT JOIN "
        f"(SELECT {quote(key)} AS k, min({quote(value)}) AS v FROM {quote(reference)} "
        f"GROUP BY {quote(key)}) r "
        f"ON f.{quote(on)} = r.k"
    )
    return OpCompiled(
        params={
            "field": field,
            "reference": reference,
            "on": on,
            "key": key,
            "value": value,
            "default_value": default,
        },
        sql=sql,
        creates=(field,),
        reads=(on,),
    )


def compile_join(args: OpArgs) -> OpCompiled:
    args.check_keys(("reference", "on", "key", "fields", "type", "prefix", "defaults"))
    reference = args.required_text("reference")
    on = args.required_text("on")
    key = args.required_text("key")
    fields = args.names("fields", required=True, allow_empty=False)
    join_type = args.choice("type", JOIN_TYPES, "left")
    prefix = args.text("prefix", "") or ""
    defaults = args.mapping("defaults")
    stray = sorted(set(defaults) - set(fields))
    if stray:
        raise args.error(f"`defaults` names column(s) not in `fields`: {', '.join(stray)}", "defaults")
    outputs = tuple(prefix + f for f in fields)
    assignments = [
        (prefix + f, f"COALESCE(r.{quote(f)}, {literal(defaults[f])})" if f in defaults else f"r.{quote(f)}")
        for f in fields
    ]
    items = ", ".join(f"{expr} AS {quote(name)}" for name, expr in assignments)
    condition = f"f.{quote(on)} = r.{quote(key)}"
    sql = f"SELECT f.*, {items} FROM {{input}} f {join_type.upper()} JOIN {quote(reference)} r ON {condition}"
    effect: RowEffect = "expand" if join_type == "left" else "any"
    return OpCompiled(
        params={
            "reference": reference,
            "on": on,
            "key": key,
            "fields": fields,
            "type": join_type,
            "prefix": prefix,
            "defaults": defaults,
        },
        sql=sql,
        row_effect=effect,
        creates=outputs,
        reads=(on,),
    )
