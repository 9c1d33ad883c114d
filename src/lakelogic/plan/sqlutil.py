"""Small, pure helpers for the Spark SQL the compiler writes and checks (via sqlglot).

Every SQL string a contract supplies is parsed here once with ``read="spark"``; a parse failure becomes a
:class:`~lakelogic.errors.PlanError` that names the rule/op and its YAML path. Generated SQL uses
:func:`quote_ident` and :func:`sql_literal` so column names and values are always safe to splice.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

from lakelogic.errors import PlanError
from lakelogic.types import LogicalType

_PLAIN_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Words Spark's parser would not read as a column name when bare.
_RESERVED = frozenset(
    {
        "all", "and", "any", "as", "between", "both", "case", "cast", "check", "collate", "column",
        "constraint", "create", "cross", "current", "current_date", "current_time", "current_timestamp",
        "current_user", "distinct", "else", "end", "except", "false", "fetch", "for", "foreign", "from",
        "full", "grant", "group", "having", "in", "inner", "intersect", "interval", "into", "is", "join",
        "leading", "left", "like", "limit", "natural", "not", "null", "of", "on", "only", "or", "order",
        "outer", "overlaps", "primary", "references", "right", "rlike", "select", "session_user", "some",
        "table", "then", "to", "trailing", "true", "union", "unique", "unknown", "user", "using", "when",
        "where", "with", "window", "exists", "regexp",
    }
)  # fmt: skip


def quote_ident(name: str) -> str:
    """A column name as Spark SQL: bare when it is a plain, non-reserved identifier, else backticked."""
    if _PLAIN_IDENT.match(name) and name.lower() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """A Spark SQL string literal. Backslashes are escape characters in Spark literals, so they double."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_literal(value: Any, type_: LogicalType | None = None) -> str:
    """Render a YAML scalar as a Spark SQL literal, cast to ``type_`` when given (SEMANTICS §10.3).

    Raises ``ValueError`` when the value cannot represent the type (the caller adds the YAML path).
    """
    if value is None:
        return "NULL"
    kind = type_.kind if type_ is not None else None
    if kind is None:
        return _untyped_literal(value)
    if kind in {"string", "json"}:
        return sql_string(_as_text(value))
    if kind in {"integer", "bigint"}:
        return str(_as_int(value))
    if kind == "float":
        # a float column compared with a double literal would be widened: 0.1f != 0.1
        return f"CAST({_as_number_text(value)} AS FLOAT)"
    if kind in {"double", "decimal"}:
        return _as_number_text(value)
    if kind == "boolean":
        return "TRUE" if _as_bool(value) else "FALSE"
    if kind == "date":
        text = _as_text(value).strip()
        if len(text) == 8 and text.isdigit():  # YYYYMMDD, a date form casting accepts too (§5.3)
            text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        return f"DATE {sql_string(text)}"
    if kind in {"timestamp", "timestamp_ntz"}:
        word = "TIMESTAMP" if kind == "timestamp" else "TIMESTAMP_NTZ"
        return f"{word} {sql_string(_as_text(value))}"
    # binary/array values have no sensible literal form in rules: compare as text.
    return sql_string(_as_text(value))


def _untyped_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # YAML/pydantic may hand integral bounds over as floats; `100` reads better than `100.0`.
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else _as_number_text(value)
    return sql_string(_as_text(value))


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if re.fullmatch(r"[+-]?\d+\.0*", text):
            return int(float(text))
    raise ValueError(f"{value!r} is not an integer")


def _as_number_text(value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
        return str(int(value.strip()))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return repr(number)


_TRUE_TEXT = {"true", "t", "yes", "y", "1"}
_FALSE_TEXT = {"false", "f", "no", "n", "0"}


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE_TEXT | _FALSE_TEXT:
        return value.strip().lower() in _TRUE_TEXT
    raise ValueError(f"{value!r} is not a boolean")


# --- parsing ----------------------------------------------------------------------------------


def parse_sql(sql: str, *, what: str, yaml_path: str) -> exp.Expr:
    """Parse one Spark SQL expression or statement; errors name ``what`` (rule/op) and ``yaml_path``."""
    if not isinstance(sql, str) or not sql.strip():
        raise PlanError(f"{what}: SQL is empty", yaml_path=yaml_path)
    try:
        parsed = sqlglot.parse(sql, read="spark")
    except (ParseError, TokenError) as err:
        raise PlanError(
            f"{what}: SQL does not parse as Spark SQL: {first_line(err)}",
            yaml_path=yaml_path,
            hint=f"the SQL was: {sql.strip()}",
        ) from err
    statements = [p for p in parsed if p is not None]
    if len(statements) != 1:
        raise PlanError(f"{what}: expected one SQL expression, got {len(statements)}", yaml_path=yaml_path)
    tree = statements[0]
    if isinstance(tree, exp.Command):
        # sqlglot falls back to an opaque Command for text it cannot parse as SQL.
        raise PlanError(f"{what}: SQL does not parse as Spark SQL", yaml_path=yaml_path, hint=sql.strip())
    return tree


def first_line(err: BaseException) -> str:
    """The first line of an error's message (Spark's analysis errors add plans and stack traces below),
    else its type's name."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def is_query(tree: exp.Expr) -> bool:
    """True for a full query (SELECT, set operation, CTE) rather than a bare expression."""
    return isinstance(tree, exp.Query)


def columns_read(tree: exp.Expr) -> tuple[str, ...]:
    """Columns of the current frame an expression reads, in first-appearance order.

    Columns inside subqueries belong to the subquery's tables (links), and lambda parameters of
    higher-order functions are not columns, so both are left out. ``a.b`` reads column ``a``.
    """
    lambda_params: set[str] = set()
    for lam in tree.find_all(exp.Lambda):
        for param in lam.expressions:
            lambda_params.add(param.name)
    seen: dict[str, None] = {}
    for col in tree.find_all(exp.Column, bfs=False):
        if _inside_subquery(col, tree):
            continue
        # `a.b` outside a subquery is a struct field of column `a` (no other table is in scope), except
        # `source.x`, which names the frame itself.
        parts = [p.name for p in col.parts]
        if len(parts) > 1 and parts[0].lower() == "source":
            parts = parts[1:]
        name = parts[0] if parts else ""
        if not name or name in lambda_params:
            continue
        seen.setdefault(name, None)
    return tuple(seen)


def query_source_columns(tree: exp.Expr) -> tuple[str, ...]:
    """Columns a full ``SELECT`` reads from ``source`` (the good frame), in first-appearance order.

    A column qualified with ``source`` or one of its aliases is one; an unqualified column is one only
    when ``source`` is the only table the query reads (with links joined, it may be theirs)."""
    tables = list(tree.find_all(exp.Table))
    source_names = {"source"} | {t.alias_or_name.lower() for t in tables if t.name.lower() == "source"}
    only_source = bool(tables) and all(t.name.lower() == "source" for t in tables)
    seen: dict[str, None] = {}
    for col in tree.find_all(exp.Column, bfs=False):
        qualifier = col.table.lower()
        if (qualifier in source_names) or (not qualifier and only_source):
            seen.setdefault(col.name, None)
    return tuple(seen)


def _inside_subquery(node: exp.Expr, root: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, (exp.Subquery, exp.Query)):
            return True
        parent = parent.parent
    return False


def tables_read(tree: exp.Expr) -> tuple[str, ...]:
    """Table names referenced anywhere (``FROM``/``JOIN`` of subqueries and queries), CTE names excluded."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    names: dict[str, None] = {}
    for table in tree.find_all(exp.Table, bfs=False):
        if table.name and table.name not in ctes:
            names.setdefault(table.name, None)
    return tuple(names)


def to_spark(tree: exp.Expr) -> str:
    """Render a tree back to Spark SQL (single line)."""
    return tree.sql(dialect=Spark)
