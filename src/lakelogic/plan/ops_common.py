"""Shared pieces of the op compilers: reading an op's parameters and describing what it compiled to.

Op parameters arrive either as the contract's params model (pydantic) or as a plain mapping (tests,
programmatic callers). :class:`OpArgs` reads both the same way and raises :class:`PlanError` with the
YAML path of the offending key (``transformations[3].trim.fields``) when a value is missing or wrong.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.steps import RowEffect
from lakelogic.types import LogicalType, TypeParseError, parse_type


@dataclass(frozen=True)
class OpCompiled:
    """What one op compiles to, before it becomes a :class:`~lakelogic.plan.steps.Transform`."""

    params: dict[str, Any]
    sql: str
    row_effect: RowEffect = "none"
    creates: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()


def params_as_dict(op: Any) -> dict[str, Any]:
    """Plain dict of an op's parameters, keyed by YAML key (``from_`` -> ``from``), ``None`` kept."""
    if op is None:
        return {}
    dump = getattr(op, "model_dump", None)
    if callable(dump):
        raw = dump()
    elif isinstance(op, Mapping):
        raw = dict(op)
    else:
        raise TypeError(f"op parameters must be a mapping or a model, got {type(op).__name__}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key)
        # Python keywords (from, in...) become `from_` attributes on models; the YAML key has no underscore.
        if name.endswith("_") and keyword.iskeyword(name[:-1]):
            name = name[:-1]
        out[name] = value
    return out


def plain(value: Any) -> Any:
    """Deep copy into plain Python values: models -> dicts, lists -> tuples, mappings -> dicts."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(params_as_dict(value))
    if isinstance(value, Mapping):
        return {value_text(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    return value


@dataclass
class OpArgs:
    """The raw parameters of one op plus where they came from (for error messages)."""

    op: str
    index: int
    yaml_path: str  # the item, e.g. ``transformations[3]``
    raw: dict[str, Any]

    def path(self, key: str | None = None) -> str:
        base = f"{self.yaml_path}.{self.op}"
        return base if key is None else f"{base}.{key}"

    def error(self, message: str, key: str | None = None, *, hint: str | None = None) -> PlanError:
        return PlanError(f"op #{self.index} ({self.op}): {message}", yaml_path=self.path(key), hint=hint)

    def check_keys(self, allowed: Iterable[str]) -> None:
        allowed_set = set(allowed)
        unknown = sorted(k for k, v in self.raw.items() if k not in allowed_set and v is not None)
        if unknown:
            raise self.error(
                f"unknown parameter(s) {', '.join(unknown)}",
                hint=f"allowed: {', '.join(sorted(allowed_set))}",
            )

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        value = self.raw.get(key)
        return default if value is None else value

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise self.error(f"`{key}` is required", key)
            return default
        if not isinstance(value, str):
            raise self.error(f"`{key}` must be a string, got {value!r}", key)
        if required and not value.strip():
            raise self.error(f"`{key}` must not be empty", key)
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key, required=True)
        assert value is not None  # required=True raised otherwise
        return value

    def names(self, key: str, *, required: bool = False, allow_empty: bool = True) -> tuple[str, ...]:
        """A list of column names; a single string is accepted as a one-element list."""
        value = self.raw.get(key)
        if value is None:
            if required:
                raise self.error(f"`{key}` is required", key)
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
            raise self.error(f"`{key}` must be a list of column names, got {value!r}", key)
        if not value and not allow_empty:
            raise self.error(f"`{key}` must name at least one column", key)
        duplicates = sorted({v for v in value if list(value).count(v) > 1})
        if duplicates:
            raise self.error(f"`{key}` names {', '.join(duplicates)} more than once", key)
        return tuple(value)

    def mapping(self, key: str, *, required: bool = False) -> dict[str, Any]:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise self.error(f"`{key}` is required", key)
            return {}
        if not isinstance(value, Mapping):
            raise self.error(f"`{key}` must be a mapping, got {value!r}", key)
        return {value_text(k): plain(v) for k, v in value.items()}

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"`{key}` must be true or false, got {value!r}", key)
        return value

    def choice(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.text(key, default)
        assert value is not None
        if value not in allowed:
            raise self.error(f"`{key}` must be one of {', '.join(allowed)}, got {value!r}", key)
        return value

    def logical_type(self, key: str, text: str) -> LogicalType:
        try:
            return parse_type(text)
        except TypeParseError as exc:
            hint = f"did you mean '{exc.suggestion}'?" if exc.suggestion else None
            raise self.error(f"unknown type {text!r}", key, hint=hint) from exc


def value_text(value: Any) -> str:
    """The text form a value has in Spark (``CAST(v AS STRING)``): booleans in lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def quote(name: str) -> str:
    """Spark SQL identifier quoting (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def literal(value: Any) -> str:
    """A Spark SQL literal for a YAML scalar (for the plan rendering)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + "".join(_escape_char(ch) for ch in str(value)) + "'"


_SHORT_ESCAPES = {"\\": "\\\\", "'": "\\'", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(ch: str) -> str:
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    return f"\\u{ord(ch):04X}" if ord(ch) < 0x20 else ch


def select_with(assignments: Iterable[tuple[str, str]]) -> str:
    """Rendering of a column-writing op: ``SELECT *, <expr> AS <col> FROM {input}`` (same-named
    columns are replaced in place by the engine)."""
    items = ", ".join(f"{expr} AS {quote(col)}" for col, expr in assignments)
    return f"SELECT *, {items} FROM {{input}}"


def unique(names: Iterable[str]) -> tuple[str, ...]:
    """Names in first-seen order without repeats."""
    return tuple(dict.fromkeys(names))
