"""SQL parameters of ops: validation with sqlglot (Spark dialect) and what they read.

Contract SQL is Spark SQL (SEMANTICS §0). A parameter that does not parse is a :class:`PlanError`
naming the op and the YAML path of the parameter, so the contract author sees the problem at plan
time, not on a cluster.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from lakelogic.plan.ops_common import OpArgs, unique

# Statements that are never a row expression even though sqlglot parses them.
_STATEMENTS: tuple[type[exp.Expr], ...] = (exp.DDL, exp.DML, exp.Command, exp.Drop, exp.Use)


def _parse_one(args: OpArgs, key: str, sql: str, dialect: str) -> exp.Expr:
    try:
        parsed = [node for node in sqlglot.parse(sql, read=dialect) if node is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        raise args.error(f"SQL does not parse ({dialect}){where}: {sql!r}", key) from exc
    if len(parsed) != 1:
        raise args.error(
            f"expected one SQL {'statement' if key == 'sql' else 'expression'}, got {sql!r}", key
        )
    return parsed[0]


def parse_expression(args: OpArgs, key: str, sql: str, *, dialect: str = "spark") -> exp.Expr:
    """A row (or aggregate) expression such as ``gross - fee``; a statement is rejected."""
    if not sql.strip():
        raise args.error("SQL expression is empty", key)
    node = _parse_one(args, key, sql, dialect)
    if isinstance(node, _STATEMENTS) or (isinstance(node, exp.Query) and not isinstance(node, exp.Subquery)):
        raise args.error(f"expected an expression, got a statement: {sql!r}", key)
    return node


def parse_query(args: OpArgs, key: str, sql: str) -> exp.Query:
    """A full ``SELECT`` (CTEs and set operations allowed) for the ``sql`` op."""
    if not sql.strip():
        raise args.error("SQL query is empty", key)
    node = _parse_one(args, key, sql, "spark")
    if not isinstance(node, exp.Query):
        raise args.error(f"the `sql` op needs a SELECT query, got {sql!r}", key)
    return node


def expression_reads(node: exp.Expr) -> tuple[str, ...]:
    """Frame columns an expression reads: the root name of every column reference outside subqueries.

    ``a.b`` on one frame is field ``b`` of struct column ``a``, so the root (``a``) is what is read.
    Best effort: used for plan display and checks, never to decide semantics.
    """
    names: list[str] = []
    for column in node.find_all(exp.Column):
        if column.find_ancestor(exp.Subquery, exp.Select) is not None:
            continue
        parts = [p.name for p in column.parts]
        if parts:
            names.append(parts[0])
    return unique(names)


def query_tables(query: exp.Query) -> tuple[str, ...]:
    """Unqualified table names a query reads that are not its own CTEs (``source``, links...)."""
    ctes = {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    names: list[str] = []
    for table in query.find_all(exp.Table):
        if table.args.get("db") or table.args.get("catalog"):
            continue
        if isinstance(table.this, exp.Placeholder):
            names.append("{" + table.this.name + "}")
            continue
        if table.name and table.name not in ctes:
            names.append(table.name)
    return unique(names)


def render(node: exp.Expr) -> str:
    """Canonical Spark SQL text of a parsed expression."""
    return node.sql(dialect="spark")
