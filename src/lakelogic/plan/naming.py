"""Rule names (SEMANTICS §10.4): explicit names first, generated names in order, `_2`, `_3` on clashes."""

from __future__ import annotations

import re

from lakelogic.errors import PlanError

_INVALID = re.compile(r"[^A-Za-z0-9_.-]")


def sanitize_name(name: str) -> str:
    """Generated names may only hold ``[A-Za-z0-9_.-]``; anything else becomes ``_``."""
    cleaned = _INVALID.sub("_", name)
    return cleaned or "rule"


class RuleNamer:
    """Hands out unique rule names within one rule family (row rules, or dataset rules).

    Call :meth:`reserve` for every explicit name first (a duplicate is a :class:`PlanError`), then
    :meth:`generate` for each generated name in declaration order.
    """

    def __init__(self, family: str) -> None:
        self._family = family
        self._taken: dict[str, str] = {}  # name -> YAML path that took it

    def reserve(self, name: str, yaml_path: str) -> str:
        if name in self._taken:
            raise PlanError(
                f"duplicate {self._family} name {name!r} (also used at {self._taken[name]})",
                yaml_path=yaml_path,
                hint="explicit rule names must be unique; rename one of them",
            )
        self._taken[name] = yaml_path
        return name

    def generate(self, base: str, yaml_path: str) -> str:
        name = sanitize_name(base)
        candidate, n = name, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{name}_{n}"
        self._taken[candidate] = yaml_path
        return candidate
