"""Dataset rules (SEMANTICS §10.5) compiled to aggregate expressions over the final good frame.

Every rule yields ``observed`` from one aggregate expression (``aggregate_sql``; all of them run in one
aggregation) or, for a full ``SELECT``, from its own ``query``; ``check_sql`` then decides ``passed`` from
``observed``. NULL never passes (``COALESCE(…, FALSE)``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlglot import exp

from lakelogic.errors import PlanError
from lakelogic.plan.access import as_list, opt
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.naming import RuleNamer, sanitize_name
from lakelogic.plan.rule_drafts import category_of, parse_severity, rule_option
from lakelogic.plan.sqlutil import (
    columns_read,
    is_query,
    parse_sql,
    query_source_columns,
    quote_ident,
    sql_literal,
)
from lakelogic.plan.steps import DatasetRule
from lakelogic.types import Severity

_SHORTHANDS = ("unique", "null_ratio", "row_count_between")


@dataclass
class _Draft:
    explicit_name: str | None
    generated: str
    yaml_path: str
    category: str
    severity: Severity
    description: str | None
    aggregate_sql: str | None
    query: str | None
    check_sql: str
    expected: Any
    columns: tuple[str, ...]
    unique_set: frozenset[str] | None = None


def compile_dataset_rules(
    contract: Any,
    *,
    implied_unique: tuple[str, ...] = (),
    materialization_columns: Collection[str] = (),
    problems: PlanProblems | None = None,
) -> tuple[DatasetRule, ...]:
    """``implied_unique``: primary-key columns (+ SCD2 ``timestamp_field`` or CDC ``cdc_timestamp_field``)
    for the implied rule;
    ``materialization_columns``: columns only the write adds (rules reading them report ``passed: null``)."""
    collect = problems or PlanProblems()
    drafts: list[_Draft] = []
    quality = opt(contract, "quality")
    for i, item in enumerate(as_list(opt(quality, "dataset_rules"))):
        draft = collect.attempt(partial(_draft, item, f"quality.dataset_rules[{i}]"), None)
        if draft is not None:
            drafts.append(draft)
    if implied_unique:
        key_set = frozenset(implied_unique)
        if not any(d.unique_set == key_set for d in drafts):
            drafts.append(_unique_draft(list(implied_unique), None, "primary_key", implied=True))
    namer = RuleNamer("dataset rule")
    for d in drafts:
        if d.explicit_name:
            namer.reserve(d.explicit_name, d.yaml_path)
    rules = []
    for d in drafts:
        name = d.explicit_name or namer.generate(d.generated, d.yaml_path)
        rule = collect.attempt(partial(_dataset_rule, d, name, materialization_columns), None)
        if rule is not None:
            rules.append(rule)
    if problems is None:
        collect.raise_if_any()
    return tuple(rules)


def _dataset_rule(d: _Draft, name: str, materialization_columns: Collection[str]) -> DatasetRule:
    for sql in (d.aggregate_sql, d.check_sql):
        if sql is not None:  # generated SQL is held to the same standard as contract SQL
            parse_sql(sql, what=f"dataset rule {name!r}", yaml_path=d.yaml_path)
    return DatasetRule(
        name=name,
        generated_name=sanitize_name(d.generated),  # never suffixed: tools match it (§10.5)
        category=d.category,
        severity=d.severity,
        yaml_path=d.yaml_path,
        aggregate_sql=d.aggregate_sql,
        query=d.query,
        check_sql=d.check_sql,
        expected=d.expected,
        columns=d.columns,
        description=d.description,
        materialization_columns=tuple(c for c in d.columns if c in materialization_columns),
        unique_columns=d.columns if d.unique_set is not None else (),
    )


def _draft(item: Any, path: str) -> _Draft:
    kind = next((k for k in _SHORTHANDS if opt(item, k) is not None), None)
    if kind is None:
        if opt(item, "sql") is None:
            raise PlanError(
                "dataset rule needs 'sql' or one shorthand key",
                yaml_path=path,
                hint="shorthands: " + ", ".join(_SHORTHANDS),
            )
        return _declared(item, path)
    body = opt(item, kind)
    if kind == "unique":
        return _unique_draft(_unique_columns(body, f"{path}.unique"), item, path)
    if kind == "null_ratio":
        return _null_ratio(item, body, path)
    return _row_count(item, body, path)


# --- shorthands -------------------------------------------------------------------------------


def _unique_columns(body: Any, path: str) -> list[str]:
    if isinstance(body, str):
        return [body]
    if isinstance(body, (list, tuple)):
        cols = [str(c) for c in body]
    else:
        cols = [str(c) for key in ("field", "fields", "columns") for c in as_list(opt(body, key))]
    if not cols:
        raise PlanError("unique needs a column, a list of columns, or {field|fields|columns}", yaml_path=path)
    return cols


def _unique_draft(cols: list[str], item: Any, path: str, *, implied: bool = False) -> _Draft:
    body = opt(item, "unique") if item is not None else None
    quoted = [quote_ident(c) for c in cols]
    if len(cols) == 1:
        aggregate = f"COUNT({quoted[0]}) - COUNT(DISTINCT {quoted[0]})"
    else:
        non_null = " AND ".join(f"{q} IS NOT NULL" for q in quoted)
        aggregate = f"COUNT_IF({non_null}) - COUNT(DISTINCT {', '.join(quoted)})"
    return _Draft(
        explicit_name=None if implied else _name(item, body),
        generated="_".join(cols) + "_unique",
        yaml_path=path,
        category=category_of(_opt(item, body, "category"), "uniqueness"),
        severity=Severity.ERROR if implied else parse_severity(_opt(item, body, "severity"), path),
        description=_opt(item, body, "description"),
        aggregate_sql=aggregate,
        query=None,
        check_sql="observed = 0",
        expected=0,
        columns=tuple(cols),
        unique_set=frozenset(cols),
    )


def _null_ratio(item: Any, body: Any, path: str) -> _Draft:
    column = opt(body, "field") or opt(body, "column")
    if not column:
        raise PlanError("null_ratio needs 'field'", yaml_path=f"{path}.null_ratio.field")
    limit = opt(body, "max")
    if limit is None:
        raise PlanError(
            "null_ratio needs 'max' (the largest allowed NULL share, 0..1)",
            yaml_path=f"{path}.null_ratio.max",
        )
    col = quote_ident(str(column))
    return _Draft(
        explicit_name=_name(item, body),
        generated=f"{column}_null_ratio",
        yaml_path=path,
        category=category_of(_opt(item, body, "category"), "completeness"),
        severity=parse_severity(_opt(item, body, "severity"), path),
        description=_opt(item, body, "description"),
        aggregate_sql=f"COALESCE(COUNT_IF({col} IS NULL) / NULLIF(COUNT(*), 0), 0.0)",
        query=None,
        check_sql=f"COALESCE(observed <= {_number(limit, f'{path}.null_ratio.max')}, FALSE)",
        expected=limit,
        columns=(str(column),),
    )


def _row_count(item: Any, body: Any, path: str) -> _Draft:
    low, high = opt(body, "min"), opt(body, "max")
    if low is None and high is None:
        raise PlanError("row_count_between needs 'min', 'max' or both", yaml_path=f"{path}.row_count_between")
    checks = []
    if low is not None:
        checks.append(f"observed >= {_number(low, f'{path}.row_count_between.min')}")
    if high is not None:
        checks.append(f"observed <= {_number(high, f'{path}.row_count_between.max')}")
    return _Draft(
        explicit_name=_name(item, body),
        generated="row_count_between",
        yaml_path=path,
        category=category_of(_opt(item, body, "category"), "completeness"),
        severity=parse_severity(_opt(item, body, "severity"), path),
        description=_opt(item, body, "description"),
        aggregate_sql="COUNT(*)",
        query=None,
        check_sql=" AND ".join(checks),
        expected={k: v for k, v in (("min", low), ("max", high)) if v is not None},
        columns=(),
    )


# --- declared {name, sql} ---------------------------------------------------------------------

_BOOLEAN_NODES = (
    exp.Predicate,
    exp.Connector,
    exp.Not,
    exp.Boolean,
    exp.RegexpLike,
)
_NUMBER_NODES = (
    exp.Count,
    exp.CountIf,
    exp.ApproxDistinct,
    exp.Sum,
    exp.Avg,
    exp.Binary,
    exp.Stddev,
    exp.Variance,
    exp.Length,
)


def _declared(item: Any, path: str) -> _Draft:
    name = str(opt(item, "name") or "")
    if not name:
        raise PlanError("a dataset rule with 'sql' needs a 'name'", yaml_path=f"{path}.name")
    what = f"dataset rule {name!r}"
    tree = parse_sql(str(opt(item, "sql")), what=what, yaml_path=f"{path}.sql")
    sql = str(opt(item, "sql")).strip()
    between = opt(item, "must_be_between")
    greater, less = opt(item, "must_be_greater_than"), opt(item, "must_be_less_than")
    bounded = between is not None or greater is not None or less is not None
    kind = _value_kind(tree)
    if bounded and kind == "boolean":
        raise PlanError(
            f"{what}: the SQL yields a boolean, so must_be_* bounds do not apply",
            yaml_path=path,
            hint="drop the bounds, or make the SQL return a number",
        )
    if not bounded and kind == "number":
        raise PlanError(
            f"{what}: the SQL yields a number; say what is acceptable with must_be_between, "
            "must_be_greater_than or must_be_less_than",
            yaml_path=path,
        )
    query: str | None = None
    aggregate: str | None = None
    if is_query(tree) or tree.find(exp.Subquery, exp.Query) is not None:
        # §10.5: a bare expression becomes SELECT <expr> FROM source (its aggregates run over the rows)
        query = sql if is_query(tree) else f"SELECT {sql} AS observed FROM source"
    else:
        _check_aggregated(tree, what, path)
        aggregate = sql
    check, expected = (
        _bounds_check(between, greater, less, path) if bounded else ("COALESCE(observed, FALSE)", True)
    )
    return _Draft(
        explicit_name=name,
        generated=name,
        yaml_path=path,
        category=category_of(opt(item, "category"), "correctness"),
        severity=parse_severity(opt(item, "severity"), path),
        description=opt(item, "description"),
        aggregate_sql=aggregate,
        query=query,
        check_sql=check,
        expected=expected,
        columns=query_source_columns(tree) if is_query(tree) else columns_read(tree),
    )


def _value_kind(tree: exp.Expr) -> str:
    """``boolean``, ``number`` or ``unknown`` for the rule's value (a query's single projection)."""
    node = tree
    if isinstance(node, exp.Query):
        selects = node.selects
        if len(selects) != 1:
            return "unknown"
        node = selects[0]
    node = node.unalias() if isinstance(node, exp.Alias) else node
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, _BOOLEAN_NODES):
        return "boolean"
    if isinstance(node, _NUMBER_NODES) or (isinstance(node, exp.Literal) and not node.is_string):
        return "number"
    return "unknown"


def _check_aggregated(tree: exp.Expr, what: str, path: str) -> None:
    """A bare expression runs as ``SELECT <expr> FROM source``: every column must sit in an aggregate."""
    for col in tree.find_all(exp.Column):
        parent = col.parent
        while parent is not None and not isinstance(parent, (exp.AggFunc, exp.Anonymous, exp.Window)):
            parent = parent.parent
        if parent is None:
            raise PlanError(
                f"{what}: column {col.sql(dialect='spark')} is not inside an aggregate",
                yaml_path=f"{path}.sql",
                hint="a dataset rule yields one value for the whole frame, e.g. COUNT_IF(amount < 0) = 0",
            )


def _bounds_check(between: Any, greater: Any, less: Any, path: str) -> tuple[str, dict[str, Any]]:
    checks: list[str] = []
    expected: dict[str, Any] = {}
    if between is not None:
        values = list(between)
        if len(values) != 2:
            raise PlanError("must_be_between needs [low, high]", yaml_path=f"{path}.must_be_between")
        low, high = (_number(v, f"{path}.must_be_between") for v in values)
        checks.append(f"observed BETWEEN {low} AND {high}")
        expected["between"] = values
    if greater is not None:
        checks.append(f"observed > {_number(greater, f'{path}.must_be_greater_than')}")
        expected["greater_than"] = greater
    if less is not None:
        checks.append(f"observed < {_number(less, f'{path}.must_be_less_than')}")
        expected["less_than"] = less
    return f"COALESCE({' AND '.join(checks)}, FALSE)", expected


# --- helpers ----------------------------------------------------------------------------------


def _number(value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanError(f"expected a number, got {value!r}", yaml_path=path)
    return sql_literal(value)


def _name(item: Any, body: Any) -> str | None:
    name = _opt(item, body, "name")
    return str(name) if name else None


def _opt(item: Any, body: Any, key: str) -> Any:
    if item is None:
        return None
    holder = body if (body is not None and not isinstance(body, (str, list, tuple))) else item
    return rule_option(item, holder, key)
