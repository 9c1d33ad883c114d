"""Spark SQL predicates of the generated row rules (SEMANTICS §10.3).

Each builder returns the predicate text; values are rendered with :func:`sql_literal` (cast to the field
type when the field is a model field), names with :func:`quote_ident`. Predicates are written so a NULL
value passes unless the rule is about nullness.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.sqlutil import quote_ident, sql_literal, sql_string
from lakelogic.types import LogicalType


def not_null(column: str) -> str:
    return f"{quote_ident(column)} IS NOT NULL"


def accepted_values(column: str, values: Sequence[Any], type_: LogicalType | None, *, yaml_path: str) -> str:
    if not values:
        raise PlanError("accepted_values needs at least one value", yaml_path=yaml_path)
    rendered = [_literal(v, type_, yaml_path) for v in values]
    col = quote_ident(column)
    return f"{col} IS NULL OR {col} IN ({', '.join(rendered)})"


def value_range(
    column: str,
    minimum: Any,
    maximum: Any,
    type_: LogicalType | None,
    *,
    inclusive: bool = True,
    as_double: bool = False,
    yaml_path: str,
) -> str:
    """``f IS NULL OR (f >= min AND f <= max)``; either bound optional, strict when not inclusive.

    ``as_double`` compares ``TRY_CAST(f AS DOUBLE)`` (``server.cast_to_string``, SEMANTICS §7.2).
    """
    if minimum is None and maximum is None:
        raise PlanError("a range needs min, max or both", yaml_path=yaml_path)
    col = quote_ident(column)
    subject = f"TRY_CAST({col} AS DOUBLE)" if as_double else col
    bound_type = None if as_double else _bound_type(type_)
    low_op, high_op = (">=", "<=") if inclusive else (">", "<")
    parts = []
    if minimum is not None:
        parts.append(f"{subject} {low_op} {_literal(minimum, bound_type, yaml_path)}")
    if maximum is not None:
        parts.append(f"{subject} {high_op} {_literal(maximum, bound_type, yaml_path)}")
    body = parts[0] if len(parts) == 1 else f"({' AND '.join(parts)})"
    return f"{col} IS NULL OR {body}"


def max_length(column: str, length: int) -> str:
    col = quote_ident(column)
    return f"{col} IS NULL OR char_length({col}) <= {int(length)}"


def regex_match(column: str, pattern: str) -> str:
    """Search semantics (``RLIKE``): anchor with ``^…$`` for a full match (SEMANTICS §10.3)."""
    col = quote_ident(column)
    return f"{col} IS NULL OR {col} RLIKE {sql_string(pattern)}"


def recent_window(column: str, window: Any, *, yaml_path: str) -> str:
    """``field IS NULL OR field >= current_timestamp() - INTERVAL …`` (lifecycle_window, simple form)."""
    col = quote_ident(column)
    return f"{col} IS NULL OR {col} >= current_timestamp() - {interval_sql(window, yaml_path=yaml_path)}"


def with_bounds(sql: str, between: Sequence[Any] | None, greater: Any, less: Any, *, yaml_path: str) -> str:
    """Apply ``must_be_*`` bounds to a declared rule's SQL (SEMANTICS §10.2)."""
    parts: list[str] = []
    if between is not None:
        if len(between) != 2:
            raise PlanError(
                "must_be_between needs exactly two values [low, high]",
                yaml_path=f"{yaml_path}.must_be_between",
            )
        low, high = (_literal(v, None, yaml_path) for v in between)
        parts.append(f"({sql}) BETWEEN {low} AND {high}")
    if greater is not None:
        parts.append(f"({sql}) > {_literal(greater, None, yaml_path)}")
    if less is not None:
        parts.append(f"({sql}) < {_literal(less, None, yaml_path)}")
    if not parts:
        return sql
    return " AND ".join(parts)


def has_bounds(between: Any, greater: Any, less: Any) -> bool:
    return between is not None or greater is not None or less is not None


# --- helpers ----------------------------------------------------------------------------------


def _bound_type(type_: LogicalType | None) -> LogicalType | None:
    """Numeric bounds stay plain numbers (an integer column may have a 0.5 bound), except on a float
    column: it is compared as a float, or 0.1 stored as a float would exceed a 0.1 bound."""
    if type_ is None or (type_.is_numeric and type_.kind != "float"):
        return None
    return type_


def _literal(value: Any, type_: LogicalType | None, yaml_path: str) -> str:
    try:
        return sql_literal(value, type_)
    except ValueError as err:
        raise PlanError(
            f"value {value!r} does not fit the field type {type_}: {err}", yaml_path=yaml_path
        ) from None


_UNIT_WORDS = {
    "s": "SECONDS",
    "sec": "SECONDS",
    "second": "SECONDS",
    "seconds": "SECONDS",
    "m": "MINUTES",
    "min": "MINUTES",
    "minute": "MINUTES",
    "minutes": "MINUTES",
    "h": "HOURS",
    "hr": "HOURS",
    "hour": "HOURS",
    "hours": "HOURS",
    "d": "DAYS",
    "day": "DAYS",
    "days": "DAYS",
    "w": "WEEKS",
    "week": "WEEKS",
    "weeks": "WEEKS",
    "mo": "MONTHS",
    "month": "MONTHS",
    "months": "MONTHS",
    "y": "YEARS",
    "year": "YEARS",
    "years": "YEARS",
}
_DURATION = re.compile(r"^\s*(\d+)\s*([A-Za-z]+)\s*$")
_ISO_DURATION = re.compile(
    r"^P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)


def interval_sql(window: Any, *, yaml_path: str) -> str:
    """A duration (``30d``, ``6h``, ``2w``, ``3 months``, ISO 8601 ``P30D``; bare number = hours, as the
    durations of SEMANTICS §15) as a Spark ``INTERVAL`` literal."""
    if isinstance(window, bool):
        raise PlanError(f"invalid duration {window!r}", yaml_path=yaml_path)
    if isinstance(window, (int, float)):
        return (
            f"INTERVAL {int(window)} HOURS"
            if float(window).is_integer()
            else _bad_duration(window, yaml_path)
        )
    text_value = str(window).strip()
    if re.fullmatch(r"\d+", text_value):
        return f"INTERVAL {int(text_value)} HOURS"
    if m := _DURATION.match(text_value):
        unit = _UNIT_WORDS.get(m.group(2).lower())
        if unit is not None:
            return f"INTERVAL {int(m.group(1))} {unit}"
    if (iso := _ISO_DURATION.match(text_value.upper())) and any(iso.groupdict().values()):
        parts = [f"{int(v)} {k.upper()}" for k, v in iso.groupdict().items() if v is not None]
        return "INTERVAL " + " ".join(parts)
    return _bad_duration(window, yaml_path)


def _bad_duration(window: Any, yaml_path: str) -> str:
    raise PlanError(
        f"invalid duration {window!r}",
        yaml_path=yaml_path,
        hint="use e.g. 30d, 6h, 15m, 2w, 3mo, 1y or ISO 8601 (P30D); a bare number means hours",
    )
