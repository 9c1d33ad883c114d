"""Compilers of the column ops (SEMANTICS §9.2): they keep the row count and write or rename columns.

Each ``compile_<op>(args)`` validates the op's parameters, resolves aliases and defaults, and returns
an :class:`OpCompiled` with the plain parameters the engines execute, the columns read and written,
and a readable Spark SQL rendering for ``lakelogic plan``.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from lakelogic.plan.ops_common import OpArgs, OpCompiled, literal, quote, select_with, unique, value_text
from lakelogic.plan.ops_sql import expression_reads, parse_expression, parse_query, query_tables, render

ASCII_WHITESPACE = " \t\n\r\f\v"
TRIM_SIDES = ("both", "left", "right")
DATE_DIFF_UNITS = ("days", "hours", "minutes", "seconds", "weeks", "months", "years")


def compile_sql(args: OpArgs, query: str, dataset: str | None) -> OpCompiled:
    parsed = parse_query(args, "sql", query)
    tables = query_tables(parsed)
    params = {"query": query, "dataset": dataset, "tables": tables}
    return OpCompiled(params=params, sql=render(parsed), row_effect="any", creates=_computed_outputs(parsed))


def _computed_outputs(query: exp.Query) -> tuple[str, ...]:
    """The columns a ``sql`` op computes under a name of its own (``id * 2 AS z``; not ``id`` passed
    through, nor ``*``): a model column only a post ``sql`` op makes is then known to the plan, so step 5
    does not call it missing (§8)."""
    select = query
    while isinstance(select, exp.SetOperation):  # a UNION's columns are named by its first branch
        select = select.this
    if not isinstance(select, exp.Select):
        return ()
    names: list[str] = []
    for item in select.expressions:
        if not isinstance(item, exp.Alias):
            continue
        inner = item.this
        if isinstance(inner, exp.Column) and inner.name == item.alias:
            continue
        names.append(item.alias)
    return tuple(names)


def compile_rename(args: OpArgs) -> OpCompiled:
    args.check_keys(("from", "to", "mappings"))
    mappings = {k: str(v) for k, v in args.mapping("mappings").items()}
    if args.has("from") or args.has("to"):
        old, new = args.required_text("from"), args.required_text("to")
        if old in mappings and mappings[old] != new:
            raise args.error(f"`{old}` is renamed twice (from/to and mappings)", "mappings")
        mappings[old] = new
    if not mappings:
        raise args.error("give `from` and `to`, or `mappings {old: new}`")
    targets = list(mappings.values())
    clashes = sorted({t for t in targets if targets.count(t) > 1})
    if clashes:
        raise args.error(f"several columns renamed to {', '.join(clashes)}", "mappings")
    items = ", ".join(f"{quote(o)} AS {quote(n)}" for o, n in mappings.items())
    # the from/to pair, so errors about it name `rename.from` / `rename.to` rather than `mappings`
    pair = {"from": args.required_text("from")} if args.has("from") else {}
    return OpCompiled(
        params={"mappings": mappings, **pair},
        sql=f"SELECT * RENAME ({items}) FROM {{input}}",
        creates=tuple(mappings.values()),
        reads=tuple(mappings),
    )


def compile_derive(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "sql", "sql_spark", "sql_duckdb"))
    field = args.required_text("field")
    sql = args.required_text("sql")
    sql_spark = args.text("sql_spark")
    sql_duckdb = args.text("sql_duckdb")
    node = parse_expression(args, "sql", sql)
    spark_node = parse_expression(args, "sql_spark", sql_spark) if sql_spark else node
    if sql_duckdb:
        parse_expression(args, "sql_duckdb", sql_duckdb, dialect="duckdb")
    params = {"field": field, "sql": sql, "sql_spark": sql_spark, "sql_duckdb": sql_duckdb}
    return OpCompiled(
        params=params,
        sql=select_with([(field, render(spark_node))]),
        creates=(field,),
        reads=expression_reads(spark_node),
    )


def compile_filter(args: OpArgs) -> OpCompiled:
    args.check_keys(("sql",))
    sql = args.required_text("sql")
    node = parse_expression(args, "sql", sql)
    return OpCompiled(
        params={"sql": sql},
        sql=f"SELECT * FROM {{input}} WHERE {render(node)}",
        row_effect="filter",
        reads=expression_reads(node),
    )


def compile_cast(args: OpArgs) -> OpCompiled:
    args.check_keys(("columns",))
    columns = args.mapping("columns", required=True)
    if not columns:
        raise args.error("`columns` must name at least one column", "columns")
    resolved: dict[str, str] = {}
    for name, type_text in columns.items():
        if not isinstance(type_text, str):
            raise args.error(f"type of `{name}` must be a string, got {type_text!r}", f"columns.{name}")
        resolved[name] = str(args.logical_type(f"columns.{name}", type_text))
    return OpCompiled(
        params={"columns": resolved},
        sql=select_with((c, f"CAST({quote(c)} AS {t.upper()})") for c, t in resolved.items()),
        creates=tuple(resolved),
        reads=tuple(resolved),
    )


def compile_select(args: OpArgs) -> OpCompiled:
    args.check_keys(("columns",))
    columns = args.names("columns", required=True, allow_empty=False)
    return OpCompiled(
        params={"columns": columns},
        sql=f"SELECT {', '.join(quote(c) for c in columns)} FROM {{input}}",
        reads=columns,
    )


def compile_drop(args: OpArgs) -> OpCompiled:
    args.check_keys(("columns",))
    columns = args.names("columns", required=True)
    return OpCompiled(
        params={"columns": columns},
        sql=f"SELECT * EXCEPT ({', '.join(quote(c) for c in columns)}) FROM {{input}}",
    )


def compile_trim(args: OpArgs) -> OpCompiled:
    args.check_keys(("fields", "side"))
    fields = args.names("fields", required=True, allow_empty=False)
    side = args.choice("side", TRIM_SIDES, "both")
    keyword = {"both": "BOTH", "left": "LEADING", "right": "TRAILING"}[side]
    chars = literal(ASCII_WHITESPACE)
    return OpCompiled(
        params={"fields": fields, "side": side},
        sql=select_with((f, f"trim({keyword} {chars} FROM {quote(f)})") for f in fields),
        creates=fields,
        reads=fields,
    )


def compile_case(args: OpArgs) -> OpCompiled:
    """``lower`` and ``upper``."""
    args.check_keys(("fields",))
    fields = args.names("fields", required=True, allow_empty=False)
    return OpCompiled(
        params={"fields": fields},
        sql=select_with((f, f"{args.op}({quote(f)})") for f in fields),
        creates=fields,
        reads=fields,
    )


def compile_coalesce(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "sources", "default", "output"))
    field = args.required_text("field")
    sources = args.names("sources")
    default = args.get("default")
    output = args.text("output") or field
    inputs = sources or (field,)
    parts = [quote(s) for s in inputs] + ([literal(default)] if default is not None else [])
    return OpCompiled(
        params={"field": field, "sources": sources, "default": default, "output": output},
        sql=select_with([(output, f"COALESCE({', '.join(parts)})")]),
        creates=(output,),
        reads=inputs,
    )


def compile_map_values(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "mapping", "default", "output"))
    field = args.required_text("field")
    mapping = {value_text(k): v for k, v in args.mapping("mapping", required=True).items()}
    default = args.get("default")
    output = args.text("output") or field
    whens = " ".join(f"WHEN {literal(k)} THEN {literal(v)}" for k, v in mapping.items())
    unchanged = (
        f"CAST({quote(field)} AS STRING)"
        if any(isinstance(v, str) for v in mapping.values())
        else quote(field)
    )
    fallback = literal(default) if default is not None else unchanged
    expr = f"CASE CAST({quote(field)} AS STRING) {whens} ELSE {fallback} END"
    return OpCompiled(
        params={"field": field, "mapping": mapping, "default": default, "output": output},
        sql=select_with([(output, expr)]),
        creates=(output,),
        reads=(field,),
    )


def compile_split(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "delimiter", "output"))
    field = args.required_text("field")
    delimiter = args.text("delimiter", ",")
    assert delimiter is not None
    if delimiter == "":
        raise args.error("`delimiter` must not be empty", "delimiter")
    output = args.text("output") or field
    pattern = literal(re.escape(delimiter))
    return OpCompiled(
        params={"field": field, "delimiter": delimiter, "output": output},
        sql=select_with([(output, f"to_json(split(CAST({quote(field)} AS STRING), {pattern}, -1))")]),
        creates=(output,),
        reads=(field,),
    )


_PATH_TOKEN = re.compile(
    r"""\.(?P<name>[^.\[\]'"]+)"""
    r"""|\[(?P<index>\d+)\]"""
    r"""|\['(?P<sq>(?:[^'\\]|\\.)*)'\]"""
    r"""|\["(?P<dq>(?:[^"\\]|\\.)*)"\]"""
)


def parse_json_path(args: OpArgs, path: str) -> tuple[str | int, ...]:
    """``$.a.b``, ``$.a[0]``, ``$['k']`` -> segments (str = object key, int = array index)."""
    if not path.startswith("$"):
        raise args.error(f"JSON path must start with `$`, got {path!r}", "path")
    segments: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        if match is None:
            raise args.error(
                f"unsupported JSON path {path!r} at position {pos}",
                "path",
                hint="use $.a.b, $.a[0] or $['key']",
            )
        if match.group("name") is not None:
            segments.append(match.group("name"))
        elif match.group("index") is not None:
            segments.append(int(match.group("index")))
        else:
            quoted = match.group("sq") if match.group("sq") is not None else match.group("dq")
            segments.append(re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    return tuple(segments)


def compile_json_extract(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "source", "path", "cast"))
    field = args.required_text("field")
    source = args.required_text("source")
    path = args.required_text("path")
    segments = parse_json_path(args, path)
    cast_text = args.text("cast")
    cast = str(args.logical_type("cast", cast_text)) if cast_text else None
    expr = f"get_json_object({quote(source)}, {literal(path)})"
    if cast:
        expr = f"TRY_CAST({expr} AS {cast.upper()})"
    return OpCompiled(
        params={"field": field, "source": source, "path": path, "segments": segments, "cast": cast},
        sql=select_with([(field, expr)]),
        creates=(field,),
        reads=(source,),
    )


BIN_CONDITIONS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "eq": "="}


def compile_bucket(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "source", "bins", "default"))
    field = args.required_text("field")
    source = args.required_text("source")
    raw_bins = args.get("bins", ())
    if not isinstance(raw_bins, (list, tuple)):
        raise args.error("`bins` must be a list of {label, lt, lte, gt, gte, eq}", "bins")
    bins: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_bins):
        item = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if not isinstance(item, dict):
            raise args.error("each bin must be a mapping", f"bins[{i}]")
        unknown = sorted(set(item) - {"label", *BIN_CONDITIONS})
        if unknown:
            raise args.error(f"unknown bin key(s) {', '.join(unknown)}", f"bins[{i}]")
        if item.get("label") is None:
            raise args.error("bin needs a `label`", f"bins[{i}].label")
        bins.append({k: item.get(k) for k in ("label", *BIN_CONDITIONS)})
    default = args.get("default")
    whens = []
    for b in bins:
        conds = [
            f"{quote(source)} {op} {literal(b[k])}" for k, op in BIN_CONDITIONS.items() if b[k] is not None
        ]
        whens.append(f"WHEN {' AND '.join(conds) or 'TRUE'} THEN {literal(b['label'])}")
    fallback = literal(default)
    expr = f"CASE WHEN {quote(source)} IS NULL THEN {fallback} {' '.join(whens)} ELSE {fallback} END"
    return OpCompiled(
        params={"field": field, "source": source, "bins": tuple(bins), "default": default},
        sql=select_with([(field, expr)]),
        creates=(field,),
        reads=(source,),
    )


def compile_date_diff(args: OpArgs) -> OpCompiled:
    args.check_keys(("field", "from_col", "to_col", "unit"))
    field = args.required_text("field")
    from_col = args.required_text("from_col")
    to_col = args.required_text("to_col")
    unit = args.choice("unit", DATE_DIFF_UNITS, "days")
    if unit == "days":
        expr = f"datediff(to_date({quote(to_col)}), to_date({quote(from_col)}))"
    elif unit in ("months", "years"):
        # Whole months: the largest n with add_months(from, n) <= to (time of day kept), toward zero.
        months = f"whole_months_between({quote(from_col)}, {quote(to_col)})"
        expr = months if unit == "months" else f"{months} div 12"
    else:
        expr = f"timestampdiff({unit[:-1].upper()}, {quote(from_col)}, {quote(to_col)})"
    return OpCompiled(
        params={"field": field, "from_col": from_col, "to_col": to_col, "unit": unit},
        sql=select_with([(field, expr)]),
        creates=(field,),
        reads=(from_col, to_col),
    )


def require_distinct(args: OpArgs, names: list[str], what: str) -> tuple[str, ...]:
    """Columns that must be distinct within one op (e.g. rollup outputs)."""
    seen = unique(names)
    if len(seen) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise args.error(f"{what} name {', '.join(dupes)} more than once")
    return seen
