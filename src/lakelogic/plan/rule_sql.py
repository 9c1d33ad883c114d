"""Checking and normalising the SQL of declared row rules.

* Every rule's SQL is parsed with sqlglot (Spark dialect); a failure names the rule and YAML path.
* ``regexp_matches(x, p)`` (DuckDB spelling, accepted by SEMANTICS) becomes ``x RLIKE p``.
* Spark cannot evaluate subqueries inside a projection, and all row rules of a phase run in one
  projection. So the one subquery shape a row rule may use, ``<expr> IN (SELECT <col> FROM <link>)``, is
  rewritten into a :class:`ReferenceProbe` (a join the engine evaluates once) plus a probe column; other
  subqueries are a plan error pointing at ``referential_integrity``/``lifecycle_window``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from sqlglot import exp

from lakelogic.errors import PlanError
from lakelogic.plan.sqlutil import columns_read, parse_sql, to_spark
from lakelogic.plan.steps import ReferenceProbe


@dataclass(frozen=True)
class CompiledSql:
    predicate: str
    reads: tuple[str, ...]
    probes: tuple[ReferenceProbe, ...] = ()
    detail: str | None = None  # the original SQL when ``predicate`` was rewritten around probes


def compile_row_sql(
    sql: str,
    *,
    what: str,
    yaml_path: str,
    links: Collection[str],
    new_probe_column: Callable[[], str],
) -> CompiledSql:
    tree = parse_sql(sql, what=what, yaml_path=yaml_path)
    if isinstance(tree, exp.Query):
        raise PlanError(
            f"{what}: a row rule is a boolean expression, not a query",
            yaml_path=yaml_path,
            hint="write the condition a row must satisfy, e.g. amount >= 0",
        )
    original = sql.strip()
    reads = columns_read(tree)
    changed = False

    def rewrite_regexp(node: exp.Expr) -> exp.Expr:
        nonlocal changed
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == "regexp_matches":
            args = node.expressions
            if len(args) != 2:
                raise PlanError(f"{what}: regexp_matches takes (value, pattern)", yaml_path=yaml_path)
            changed = True
            return exp.RegexpLike(this=args[0].copy(), expression=args[1].copy())
        return node

    tree = tree.transform(rewrite_regexp)
    aggregate = next((a for a in tree.find_all(exp.AggFunc) if not a.find_ancestor(exp.Window)), None)
    if aggregate is not None:
        raise PlanError(
            f"{what}: a row rule is checked on each row and cannot aggregate ({to_spark(aggregate)})",
            yaml_path=yaml_path,
            hint="checks over the whole batch belong in quality.dataset_rules (e.g. sql: 'sum(amount) > 0'); "
            "a row may be compared with a window, e.g. amount <= 10 * avg(amount) OVER ()",
        )

    probes: list[ReferenceProbe] = []

    def rewrite_in(node: exp.Expr) -> exp.Expr:
        nonlocal changed
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            probe, replacement = _membership_probe(node, what, yaml_path, links, new_probe_column)
            probes.append(probe)
            changed = True
            return replacement
        return node

    tree = tree.transform(rewrite_in)
    # EXISTS(array, x -> ...) is Spark's higher-order function, not a subquery
    leftover = next(
        (
            node
            for node in tree.find_all(exp.Subquery, exp.Exists, exp.Query)
            if not (isinstance(node, exp.Exists) and isinstance(node.args.get("expression"), exp.Lambda))
        ),
        None,
    )
    if leftover is not None:
        raise PlanError(
            f"{what}: row rules cannot use this subquery ({to_spark(leftover)})",
            yaml_path=yaml_path,
            hint="a row rule may use '<column> IN (SELECT <key> FROM <link>)'; for other lookups use "
            "the referential_integrity or lifecycle_window shorthand, or a lookup/join op",
        )
    if not changed:
        return CompiledSql(predicate=original, reads=reads)
    return CompiledSql(
        predicate=to_spark(tree), reads=reads, probes=tuple(probes), detail=original if probes else None
    )


def _membership_probe(
    node: exp.In,
    what: str,
    yaml_path: str,
    links: Collection[str],
    new_probe_column: Callable[[], str],
) -> tuple[ReferenceProbe, exp.Expr]:
    query = node.args["query"]
    select = query.this if isinstance(query, exp.Subquery) else query
    unsupported = PlanError(
        f"{what}: only '<expr> IN (SELECT <column> FROM <link>)' subqueries are supported in row rules",
        yaml_path=yaml_path,
        hint="filter the link at load time (links[].filter) instead of in the subquery",
    )
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        raise unsupported
    source = select.args.get("from_") or select.args.get("from")
    extra = ("where", "joins", "group", "having", "limit", "order", "qualify", "distinct")
    if source is None or any(select.args.get(k) for k in extra if k != "distinct"):
        raise unsupported
    table = source.this
    key = select.expressions[0]
    if not isinstance(table, exp.Table) or not isinstance(key, exp.Column):
        raise unsupported
    link = table.name
    if link not in links:
        raise PlanError(
            f"{what}: subquery reads {link!r}, which is not a declared link",
            yaml_path=yaml_path,
            hint=f"declared links: {', '.join(sorted(links)) or '(none)'}",
        )
    subject = node.this
    column = new_probe_column()
    probe = ReferenceProbe(
        column=column, link=link, key=(key.name,), frame_expr=(to_spark(subject),), sql_in_semantics=True
    )
    # The engine computes the probe with SQL's three-valued IN (NULL subject, NULL keys in the link).
    return probe, exp.column(column)
