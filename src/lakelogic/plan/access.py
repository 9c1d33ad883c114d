"""Uniform read access to contract blocks.

Typed blocks are frozen Pydantic models, while free-form shorthand bodies (``regex_match: {...}``) may be
plain mappings. The compiler reads both through :func:`opt` so it does not depend on which is which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def opt(obj: Any, key: str, default: Any = None) -> Any:
    """``obj.key`` or ``obj[key]``; ``default`` when absent or ``None``."""
    if obj is None:
        return default
    value = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
    return default if value is None else value


def has(obj: Any, key: str) -> bool:
    """True when ``key`` is present with a non-``None`` value."""
    return opt(obj, key) is not None


def as_list(value: Any) -> list[Any]:
    """``None`` → ``[]``; a scalar → ``[scalar]``; a sequence → list."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def plain(value: Any) -> Any:
    """Plain Python data (dicts/lists/scalars) from models, enums and mappings, for step settings."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    enum_value = getattr(value, "value", None)
    if enum_value is not None and not isinstance(value, (int, float, str, bool)):
        return enum_value
    if isinstance(value, str):
        return str(value)
    return value


def text(value: Any) -> str | None:
    """A string value (enum members become their value); ``None`` stays ``None``."""
    if value is None:
        return None
    return str(getattr(value, "value", value))
