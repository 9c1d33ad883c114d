"""Contract SQL that names tables: the ``sql`` op and expressions with subqueries over links.

Temp views are session-global and the driver runs several contracts concurrently on one session, so a
plain ``source`` view would be overwritten by another run. The query is rewritten with sqlglot so its
references to ``source`` (and the ``{dataset}``/dataset-name synonyms) and to links point at views
named per run and per op (``__ll_<run>_<op>_source``). Spark resolves views while it analyses the
query (``spark.sql`` analyses eagerly), so the views are dropped again right after: the returned
DataFrame keeps the analysed plan and does not need them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import op_error, safe_identifier
from lakelogic.plan.steps import Transform

SOURCE = "source"


def _view_name(ctx: SparkRunContext, step: Transform, name: str) -> str:
    return f"__ll_{safe_identifier(ctx.run_id)}_{step.index}_{safe_identifier(name)}"


def _dataset_name(step: Transform, ctx: SparkRunContext) -> str | None:
    name = step.params.get("dataset") or getattr(ctx, "dataset", None) or getattr(ctx, "contract_name", None)
    return str(name) if name else None


def bind_tables(sql: exp.Expr, names: Mapping[str, str]) -> exp.Expr:
    """Point unqualified table references (outside same-named CTEs) at ``names[lower(name)]``.

    A rewritten reference keeps its old name as alias so ``source.col`` still resolves.
    """
    ctes = {cte.alias_or_name.lower() for cte in sql.find_all(exp.CTE)}

    def rewrite(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Table) or node.args.get("db") or node.args.get("catalog"):
            return node
        if isinstance(node.this, exp.Placeholder):
            key, shown = "{" + node.this.name.lower() + "}", node.this.name
        else:
            key, shown = node.name.lower(), node.name
        if key in ctes or key not in names:
            return node
        new = exp.Table(this=exp.to_identifier(names[key], quoted=True))
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(shown, quoted=True))
        new.set("alias", alias)
        return new

    return sql.transform(rewrite)


@contextmanager
def _views(ctx: SparkRunContext, frames: Mapping[str, DataFrame]) -> Iterator[None]:
    for view, frame in frames.items():
        frame.createOrReplaceTempView(view)
    try:
        yield
    finally:
        for view in frames:
            ctx.spark.catalog.dropTempView(view)


def _referenced_names(node: exp.Expr) -> set[str]:
    ctes = {cte.alias_or_name.lower() for cte in node.find_all(exp.CTE)}
    names: set[str] = set()
    for table in node.find_all(exp.Table):
        if table.args.get("db") or table.args.get("catalog"):
            continue
        if isinstance(table.this, exp.Placeholder):
            names.add("{" + table.this.name.lower() + "}")
        elif table.name.lower() not in ctes:
            names.add(table.name.lower())
    return names


def _bindings(
    step: Transform, ctx: SparkRunContext, node: exp.Expr, frame: DataFrame | None
) -> tuple[dict[str, str], dict[str, DataFrame]]:
    """(table name -> view name, view name -> frame) for the tables the SQL references."""
    wanted = _referenced_names(node)
    candidates: dict[str, DataFrame] = {name.lower(): df for name, df in ctx.links.items()}
    if frame is not None:
        # `source`, `{dataset}`, `{source}` and the dataset's own name all mean the previous frame; a
        # link declared under the dataset's name keeps that name (links are named for sql ops, §4)
        for synonym in (SOURCE, "{dataset}", "{source}", (_dataset_name(step, ctx) or "").lower()):
            if synonym and (synonym.startswith("{") or synonym == SOURCE or synonym not in candidates):
                candidates[synonym] = frame
    names: dict[str, str] = {}
    views: dict[str, DataFrame] = {}
    for name in sorted(wanted & set(candidates)):
        view = _view_name(ctx, step, name.strip("{}"))
        names[name] = view
        views[view] = candidates[name]
    unresolved = sorted(n for n in wanted - set(candidates) if n.startswith("{"))
    if unresolved:
        raise op_error(step, f"unknown placeholder(s) {', '.join(unresolved)}", "sql", hint="use `source`")
    return names, views


def run_query(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    """The ``sql`` op: the SELECT over ``source`` (the previous frame) and links, as a new frame."""
    query = step.params["query"]
    node = sqlglot.parse_one(query, read="spark")
    names, views = _bindings(step, ctx, node, frame)
    bound = bind_tables(node, names).sql(dialect="spark")
    with _views(ctx, views):
        return _last_of_each_name(ctx.spark.sql(bound))


def _last_of_each_name(frame: DataFrame) -> DataFrame:
    """§9.1: an op writing an output column replaces a same-named column in place. ``SELECT *, x AS c``
    over a frame that has ``c`` (e.g. a model column NULL-filled at step 5) yields ``c`` twice: the
    later one wins, at the earlier one's position."""
    names = frame.columns
    if len(set(names)) == len(names):
        return frame
    positional = frame.toDF(*[f"__ll_sql_out_{i}" for i in range(len(names))])
    last = {name: i for i, name in enumerate(names)}
    return positional.select(*[F.col(f"__ll_sql_out_{last[n]}").alias(n) for n in dict.fromkeys(names)])


@contextmanager
def bound_expression(step: Transform, sql: str, ctx: SparkRunContext) -> Iterator[Column]:
    """A row expression as a Column; subqueries over links are bound to per-run views.

    Use the Column inside the ``with`` block: DataFrame methods analyse their plan eagerly, so the
    views are resolved by the time the block exits and drops them. Plain expressions (the common
    case) go to Spark untouched.
    """
    node = sqlglot.parse_one(sql, read="spark")
    if not any(True for _ in node.find_all(exp.Table)):
        yield F.expr(sql)
        return
    names, views = _bindings(step, ctx, node, None)
    bound = bind_tables(node, names).sql(dialect="spark")
    with _views(ctx, views):
        yield F.expr(bound)
