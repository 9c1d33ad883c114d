"""Compilers of the reshaping ops (SEMANTICS §9.2): rollup, pivot, unpivot."""

from __future__ import annotations

from typing import Any

from lakelogic.plan.ops_columns import require_distinct
from lakelogic.plan.ops_common import OpArgs, OpCompiled, literal, plain, quote, unique, value_text
from lakelogic.plan.ops_sql import expression_reads, parse_expression, render
from lakelogic.plan.steps import RowEffect

PIVOT_AGGS = ("sum", "avg", "min", "max", "count", "first", "last")
DEFAULT_RUN_ID_COLUMN = "_lakelogic_run_id"


def compile_rollup(args: OpArgs) -> OpCompiled:
    args.check_keys(
        (
            "group_by",
            "aggregations",
            "keys",
            "key_expr",
            "rollup_keys_column",
            "rollup_keys_count_column",
            "upstream_run_id_column",
            "upstream_run_ids_column",
            "distinct",
        )
    )
    group_by = args.names("group_by")
    aggregations = args.mapping("aggregations")
    keys = args.names("keys")
    key_expr = args.text("key_expr")
    if keys and key_expr:
        raise args.error("give `keys` or `key_expr`, not both", "key_expr")
    rendered: dict[str, str] = {}
    reads: list[str] = list(group_by) + list(keys)
    for out, sql in aggregations.items():
        if not isinstance(sql, str):
            raise args.error(f"aggregation `{out}` must be a SQL aggregate", f"aggregations.{out}")
        node = parse_expression(args, f"aggregations.{out}", sql)
        rendered[out] = render(node)
        reads.extend(expression_reads(node))
    if key_expr:
        key_node = parse_expression(args, "key_expr", key_expr)
        reads.extend(expression_reads(key_node))
    if not (group_by or aggregations or keys or key_expr):
        raise args.error("nothing to compute: give group_by, aggregations, keys or key_expr")
    keys_column = args.text("rollup_keys_column", "_lakelogic_rollup_keys")
    count_column = args.text("rollup_keys_count_column", "_lakelogic_rollup_keys_count")
    run_id_column = args.text("upstream_run_id_column", "_upstream_lakelogic_run_id")
    run_ids_column = args.text("upstream_run_ids_column", "_upstream_lakelogic_run_ids")
    outputs = [*group_by, *aggregations]
    if keys or key_expr:
        outputs += [c for c in (keys_column, count_column) if c]
    if run_ids_column:
        outputs.append(run_ids_column)
    creates = require_distinct(args, outputs, "the rollup output columns")
    items = [*(quote(g) for g in group_by), *(f"{e} AS {quote(o)}" for o, e in rendered.items())]
    if keys or key_expr:
        key_sql = key_expr or " || '|' || ".join(f"CAST({quote(k)} AS STRING)" for k in keys)
        collect = "collect_set" if args.boolean("distinct", True) else "collect_list"
        key_list = f"array_sort({collect}({key_sql}))"
        items.append(f"{key_list} AS {quote(keys_column or '')}")
        if count_column:
            items.append(f"size({key_list}) AS {quote(count_column)}")
    if run_ids_column:
        source = (
            f"{quote(run_id_column or '')} /* else {DEFAULT_RUN_ID_COLUMN}; omitted when neither exists */"
        )
        items.append(f"array_sort(collect_set(CAST({source} AS STRING))) AS {quote(run_ids_column)}")
    group = f" GROUP BY {', '.join(quote(g) for g in group_by)}" if group_by else ""
    # A global aggregation (no group_by) yields one row even for an empty frame: it may add a row.
    effect: RowEffect = "filter" if group_by else "any"
    return OpCompiled(
        params={
            "group_by": group_by,
            "aggregations": aggregations,
            "keys": keys,
            "key_expr": key_expr,
            "rollup_keys_column": keys_column,
            "rollup_keys_count_column": count_column,
            "upstream_run_id_column": run_id_column,
            "upstream_run_ids_column": run_ids_column,
            "fallback_run_id_column": DEFAULT_RUN_ID_COLUMN,
            "distinct": args.boolean("distinct", True),
        },
        sql=f"SELECT {', '.join(items)} FROM {{input}}{group}",
        row_effect=effect,
        creates=creates,
        reads=unique(reads),
    )


def _one_or_many(args: OpArgs, single: str, many: str) -> tuple[str, ...]:
    one = args.text(single)
    several = args.names(many)
    if one and several and several != (one,):
        raise args.error(f"give `{single}` or `{many}`, not both", many)
    return several or ((one,) if one else ())


def _pivot_value(value: Any, width: int, args: OpArgs, i: int) -> tuple[Any, ...]:
    if width == 1:
        if isinstance(value, (list, tuple)):
            raise args.error("with one pivot column each value is a scalar", f"values[{i}]")
        value = (value,)
    elif not isinstance(value, (list, tuple)) or len(value) != width:
        raise args.error(f"with {width} pivot columns each value is a list of {width}", f"values[{i}]")
    if any(v is None for v in value):
        # NULL never matches a pivot value (rows with a NULL pivot column fill no cell).
        raise args.error("a pivot value cannot be null", f"values[{i}]")
    return tuple(value)


def pivot_column_name(
    template: str, value_texts: tuple[str, ...], alias: str, value_col: str, agg: str, separator: str
) -> str:
    """The output column of one pivot value x value column (``name_template`` placeholders)."""
    return template.format(
        pivot_value=separator.join(value_texts), pivot_alias=alias, value_col=value_col, agg=agg
    )


def compile_pivot(args: OpArgs) -> OpCompiled:
    args.check_keys(
        (
            "id_vars",
            "pivot_col",
            "pivot_cols",
            "value_col",
            "value_cols",
            "values",
            "pivot_values",
            "agg",
            "aggs",
            "fill_value",
            "separator",
            "name_template",
            "value_aliases",
        )
    )
    id_vars = args.names("id_vars")
    pivot_cols = _one_or_many(args, "pivot_col", "pivot_cols")
    value_cols = _one_or_many(args, "value_col", "value_cols")
    if not pivot_cols:
        raise args.error("`pivot_col` (or `pivot_cols`) is required", "pivot_col")
    if not value_cols:
        raise args.error("`value_col` (or `value_cols`) is required", "value_col")
    values_key = "values" if args.get("values") else "pivot_values"
    raw_values = plain(args.get("values") or args.get("pivot_values") or ())
    if not isinstance(raw_values, tuple):
        raise args.error("`values` must be a list", values_key)
    values = tuple(_pivot_value(v, len(pivot_cols), args, i) for i, v in enumerate(raw_values))
    agg = args.choice("agg", PIVOT_AGGS, "first")
    aggs = {str(k): str(v) for k, v in args.mapping("aggs").items()}
    for col, name in aggs.items():
        if col not in value_cols:
            raise args.error(f"`aggs` names `{col}`, which is not a value column", f"aggs.{col}")
        if name not in PIVOT_AGGS:
            raise args.error(f"aggregate must be one of {', '.join(PIVOT_AGGS)}, got {name!r}", f"aggs.{col}")
    separator = args.text("separator", "_") or ""
    default_template = (
        "{pivot_alias}" if len(value_cols) == 1 else "{value_col}" + separator + "{pivot_alias}"
    )
    template = args.text("name_template") or default_template
    aliases = {str(k): str(v) for k, v in args.mapping("value_aliases").items()}
    try:
        pivot_column_name(template, ("v",), "v", "c", "a", separator)
    except (KeyError, IndexError, ValueError) as exc:
        raise args.error(
            f"bad name_template {template!r}",
            "name_template",
            hint="placeholders: {pivot_value}, {pivot_alias}, {value_col}, {agg}",
        ) from exc
    columns: list[str] = []
    cells: list[str] = []
    for value in values:
        texts = tuple(value_text(v) for v in value)
        alias = aliases.get(separator.join(texts), separator.join(texts))
        match = " AND ".join(
            f"CAST({quote(p)} AS STRING) = {literal(t)}" for p, t in zip(pivot_cols, texts, strict=True)
        )
        for col in value_cols:
            fn = aggs.get(col, agg)
            name = pivot_column_name(template, texts, alias, col, fn, separator)
            columns.append(name)
            spark_fn = {"first": "min", "last": "max"}.get(fn, fn)
            cells.append(f"{spark_fn}(CASE WHEN {match} THEN {quote(col)} END) AS {quote(name)}")
    if values:
        require_distinct(args, [*id_vars, *columns], "pivot output columns")
    group = f" GROUP BY {', '.join(quote(c) for c in id_vars)}" if id_vars else ""
    select = ", ".join([*(quote(c) for c in id_vars), *cells]) or "<one column per distinct pivot value>"
    return OpCompiled(
        params={
            "id_vars": id_vars,
            "pivot_cols": pivot_cols,
            "value_cols": value_cols,
            "values": values,
            "agg": agg,
            "aggs": aggs,
            "fill_value": args.get("fill_value"),
            "separator": separator,
            "name_template": template,
            "value_aliases": aliases,
        },
        sql=f"SELECT {select} FROM {{input}}{group}",
        row_effect="filter" if id_vars else "any",
        creates=(*id_vars, *columns),
        reads=unique([*id_vars, *pivot_cols, *value_cols]),
    )


def compile_unpivot(args: OpArgs) -> OpCompiled:
    args.check_keys(
        ("id_vars", "value_vars", "value_cols", "key_field", "value_field", "include_nulls", "value_aliases")
    )
    id_vars = args.names("id_vars")
    value_vars = args.names("value_vars")
    value_cols = args.names("value_cols")
    if value_vars and value_cols and value_vars != value_cols:
        raise args.error("`value_cols` is an alias of `value_vars`; give one of them", "value_cols")
    value_vars = value_vars or value_cols
    overlap = sorted(set(id_vars) & set(value_vars))
    if overlap:
        raise args.error(f"column(s) both id and value: {', '.join(overlap)}", "value_vars")
    key_field = args.text("key_field", "key") or "key"
    value_field = args.text("value_field", "value") or "value"
    require_distinct(args, [*id_vars, key_field, value_field], "unpivot output columns")
    aliases = {str(k): str(v) for k, v in args.mapping("value_aliases").items()}
    include_nulls = args.boolean("include_nulls", False)
    stack_items = (
        ", ".join(f"'{aliases.get(c, c)}', {quote(c)}" for c in value_vars) or "<every non-id column>"
    )
    ids = "".join(f"{quote(c)}, " for c in id_vars)
    where = "" if include_nulls else f" WHERE {quote(value_field)} IS NOT NULL"
    sql = (
        f"SELECT * FROM (SELECT {ids}stack({len(value_vars)}, {stack_items}) AS "
        f"({quote(key_field)}, {quote(value_field)}) FROM {{input}}){where}"
    )
    return OpCompiled(
        params={
            "id_vars": id_vars,
            "value_vars": value_vars,
            "key_field": key_field,
            "value_field": value_field,
            "include_nulls": include_nulls,
            "value_aliases": aliases,
        },
        sql=sql,
        row_effect="any",
        creates=(*id_vars, key_field, value_field),
        reads=unique([*id_vars, *value_vars]),
    )
