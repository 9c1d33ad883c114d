"""Pin the clock of a plan's SQL to the run's ``as_of`` instant.

A run evaluates its plan in more than one engine job (the good and the quarantine output, dataset rules).
Spark fixes ``current_timestamp()`` once per query, so two jobs of one run would see different "now"s and
a row could pass a rule in one job and fail it in the other: it would land in neither output. SEMANTICS §3.4
already makes ``as_of`` the run's single notion of now; replacing the clock functions with literals of it
makes every job agree (and lets the engine reuse generated code across runs).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import sqlglot
from sqlglot import exp

from lakelogic.plan.steps import Plan, Step

# Cheap pre-check so only SQL that mentions a clock function is parsed and re-generated.
_CLOCK_WORDS = re.compile(r"(?i)\b(current_timestamp|current_date|now|localtimestamp)\b")
_NOW_FUNCTIONS = {"NOW", "LOCALTIMESTAMP"}


def _literals(as_of: datetime) -> tuple[exp.Expression, exp.Expression]:
    utc = as_of.astimezone(UTC)
    stamp = exp.cast(exp.Literal.string(utc.strftime("%Y-%m-%d %H:%M:%S.%f")), "TIMESTAMP")
    day = exp.cast(exp.Literal.string(utc.strftime("%Y-%m-%d")), "DATE")
    return stamp, day


def pin_sql(sql: str, as_of: datetime) -> str:
    """``sql`` with ``current_timestamp()``, ``now()``, ``localtimestamp`` and ``current_date`` as literals.

    Text that does not parse as Spark SQL, or holds no clock call outside string literals, is returned
    unchanged (the compiler already validated contract SQL; this only rewrites what it understands).
    """
    if not _CLOCK_WORDS.search(sql):
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return sql
    stamp, day = _literals(as_of)
    changed = False

    def replace(node: exp.Expression) -> exp.Expression:
        nonlocal changed
        if isinstance(node, exp.CurrentTimestamp) or (
            isinstance(node, exp.Anonymous) and str(node.this).upper() in _NOW_FUNCTIONS
        ):
            changed = True
            return stamp.copy()
        if isinstance(node, exp.CurrentDate):
            changed = True
            return day.copy()
        return node

    pinned = tree.transform(replace)
    return pinned.sql(dialect="spark") if changed else sql


def _pin_value(value: Any, as_of: datetime) -> Any:
    if isinstance(value, str):
        return pin_sql(value, as_of)
    if isinstance(value, Mapping):
        return {k: _pin_value(v, as_of) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_pin_value(v, as_of) for v in value)
    if isinstance(value, list):
        return [_pin_value(v, as_of) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _pin_dataclass(value, as_of)
    return value


def _pin_dataclass(obj: Any, as_of: datetime) -> Any:
    changes = {}
    for f in dataclasses.fields(obj):
        if f.name in {"yaml_path", "name", "generated_name", "category", "description", "label"}:
            continue  # identity and documentation, never SQL
        old = getattr(obj, f.name)
        new = _pin_value(old, as_of)
        if new is not old and new != old:
            changes[f.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


def pin_clock(plan: Plan, as_of: datetime) -> Plan:
    """A copy of ``plan`` whose SQL reads ``as_of`` wherever it asked for the current time."""
    steps: tuple[Step, ...] = tuple(_pin_dataclass(step, as_of) for step in plan.steps)
    links = tuple(_pin_dataclass(link, as_of) for link in plan.links)
    return dataclasses.replace(plan, steps=steps, links=links)
