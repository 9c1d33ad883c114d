"""Contract wording for pydantic's own error types.

Pydantic says "Input should be a valid dictionary or instance of TransformationDerive": it names Python
types and not what the contract may hold there. :func:`rewrite` gives the message and the allowed values
in the words of the contract (text, a list of column names, a mapping with keys ...), from the declared
type of the key.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from lakelogic.contract.models_base import NAME_PATTERN, ClosedSet, OLCModel, closest, str_list

# Error types meaning "the value has the wrong type"; the message becomes "expected <declared type>".
TYPE_ERRORS = frozenset(
    {
        "string_type",
        "dict_type",
        "model_type",
        "model_attributes_type",
        "list_type",
        "tuple_type",
        "set_type",
        "bool_type",
        "bool_parsing",
        "float_type",
        "float_parsing",
        "int_type",
        "int_parsing",
        "int_from_float",
    }
)

_PLURALS = {
    "text": "text",
    "an integer": "integers",
    "a number": "numbers",
    "true or false": "true/false values",
    "a mapping": "mappings",
    "a column name or a list of column names": "column names",
}


def rewrite(
    kind: str, ctx: Mapping[str, Any], declared: Any, value: Any
) -> tuple[str, str | None, str | None] | None:
    """``(message, allowed, suggestion)`` for a pydantic error of type ``kind`` at a key declared as
    ``declared``; None to keep pydantic's message (custom errors already speak the contract's words)."""
    if kind in TYPE_ERRORS:
        what = describe(declared)
        return (f"expected {what}" if what else "wrong type of value"), mapping_keys(declared), None
    if kind == "string_too_short":
        return "must not be empty", None, None
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)", describe(declared), None
    if kind == "too_long":
        return f"takes at most {ctx.get('max_length')} item(s)", describe(declared), None
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NAME_PATTERN:
        return "is not a valid name", "letters, digits, '_', '.' and '-'", None
    if kind in ("literal_error", "enum"):
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        guess = closest(value.lower(), options) if isinstance(value, str) else None
        return "unknown value", ", ".join(options) or None, guess
    return None


def describe(tp: Any) -> str | None:
    """The declared type in the contract's words (None when it cannot be said shortly)."""
    tp, meta = unwrap(tp)
    for item in meta:
        if isinstance(item, ClosedSet):
            return "one of " + ", ".join(item.values)
        if getattr(item, "func", None) is str_list:
            return "a column name or a list of column names"
    members = [m for m in union_members(tp) if m is not type(None)]
    if members:
        parts = [describe(m) for m in members]
        known = [p for p in dict.fromkeys(parts) if p]
        return " or ".join(known) if len(known) == len(set(parts)) else None
    return _describe_plain(tp)


def mapping_keys(tp: Any) -> str | None:
    """The keys a mapping may hold where ``tp`` declares a model (so a list or text given instead is
    answered with what the mapping should contain)."""
    tp, _ = unwrap(tp)
    models = [m for m in (unwrap(x)[0] for x in (union_members(tp) or [tp])) if _is_model(m)]
    return ", ".join(model_keys(models[0])) if len(models) == 1 else None


def model_keys(model: type[BaseModel]) -> list[str]:
    """The YAML keys a model accepts, aliases included."""
    keys = [f.alias or name for name, f in model.model_fields.items()]
    if issubclass(model, OLCModel):
        keys += list(model.KEY_ALIASES)
    return keys


def _describe_plain(tp: Any) -> str | None:
    for plain, text in ((str, "text"), (bool, "true or false"), (int, "an integer"), (float, "a number")):
        if tp is plain:  # `is`, not a dict lookup: generic aliases with unhashable metadata cannot hash
            return text
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in tp)
    if _is_model(tp):
        return "a mapping"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, args))
    if origin in (list, set, frozenset):
        item = describe(args[0]) if args else None
        return f"a list of {_PLURALS[item]}" if item in _PLURALS else "a list"
    if origin is tuple and args and Ellipsis not in args:
        item = describe(args[0])
        if item in _PLURALS and all(a == args[0] for a in args):
            return f"a list of {len(args)} {_PLURALS[item]}"
        return f"a list of {len(args)} items"
    if origin in (dict, Mapping) or tp is dict:
        return "a mapping"
    return None


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def unwrap(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """Strip ``Annotated``; return (type, metadata)."""
    if typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        inner, meta = unwrap(args[0])
        return inner, (*args[1:], *meta)
    return tp, ()


def union_members(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return list(typing.get_args(tp))
    return []
