"""``{placeholder}`` substitution in the effective contract (DRIVER §2.5).

Only ``{identifier}`` tokens naming a known placeholder are replaced, so regular expressions such as
``\\d{3}`` pass untouched; ``{{`` and ``}}`` give literal braces; placeholder values may themselves hold
placeholders (resolved to a fixed point; a cycle is an error); notification templates are never
substituted; an unknown placeholder in a location key is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lakelogic.errors import ContractError, Problem

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
LOCATION_KEYS = frozenset({"path", "target_path", "location", "table", "archive_path", "manifest_path"})
_TEMPLATE_KEY = re.compile(r"_template(_file)?$")


def _expand_values(values: Mapping[str, str], file: str) -> dict[str, str]:
    """Resolve placeholders inside placeholder values to a fixed point; a cycle is an error."""
    resolved: dict[str, str] = {}

    def resolve(name: str, stack: tuple[str, ...]) -> str:
        if name in resolved:
            return resolved[name]
        if name in stack:
            cycle = " -> ".join((*stack[stack.index(name) :], name))
            raise ContractError(Problem(file=file, path="", message=f"placeholder cycle: {cycle}"))

        def sub(match: re.Match[str]) -> str:
            inner = match.group(1)
            if inner is None:
                return match.group(0)  # keep {{ }} escapes for the final pass
            if inner in values:
                return resolve(inner, (*stack, name))
            return match.group(0)

        resolved[name] = _TOKEN.sub(sub, str(values[name]))
        return resolved[name]

    for key in values:
        resolve(key, ())
    return resolved


def substitute(
    data: Any,
    values: Mapping[str, str],
    *,
    origin_of: Any = None,
    default_file: str = "<contract>",
) -> Any:
    """``data`` with placeholders replaced; ``origin_of(path)`` names the file a bad value came from."""
    expanded = _expand_values({k: v for k, v in values.items() if v is not None}, default_file)
    problems: list[Problem] = []

    def text(value: str, path: str, key: str) -> str:
        def sub(match: re.Match[str]) -> str:
            token = match.group(0)
            if token == "{{":
                return "{"
            if token == "}}":
                return "}"
            name = match.group(1)
            if name in expanded:
                return expanded[name]
            if key in LOCATION_KEYS:
                file = origin_of(path) if origin_of else default_file
                problems.append(
                    Problem(
                        file=file,
                        path=path,
                        message=f"unknown placeholder {{{name}}}",
                        allowed=", ".join(sorted(expanded)),
                    )
                )
            return token

        return _TOKEN.sub(sub, value)

    def walk(value: Any, path: str, key: str, in_notifications: bool) -> Any:
        if in_notifications and (_TEMPLATE_KEY.search(key) or key == "template_context"):
            return value  # notification templates keep their own {placeholders}
        if isinstance(value, dict):
            return {
                k: walk(
                    v, f"{path}.{k}" if path else str(k), str(k), in_notifications or k == "notifications"
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v, f"{path}[{i}]", key, in_notifications) for i, v in enumerate(value)]
        if isinstance(value, str) and ("{" in value or "}" in value):
            return text(value, path, key)
        return value

    result = walk(data, "", "", False)
    if problems:
        raise ContractError(problems)
    return result
