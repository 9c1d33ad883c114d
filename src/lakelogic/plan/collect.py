"""Collect every plan problem of a contract instead of stopping at the first (``lakelogic validate``
lists them all; a run reports them all).

Each independent item (a field, an op, a rule) is compiled through :meth:`PlanProblems.attempt`; a
failing item is left out and later checks that could only fail because of it are relaxed by the
caller (see ``compiler._compile_parts``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lakelogic.errors import PlanError, PlanErrors

T = TypeVar("T")


class PlanProblems:
    def __init__(self) -> None:
        self.errors: list[PlanError] = []

    def attempt(self, build: Callable[[], T], default: T) -> T:
        """``build()``, or ``default`` after recording the :class:`PlanError` it raised."""
        try:
            return build()
        except PlanErrors as exc:
            self.errors.extend(exc.errors)
        except PlanError as exc:
            self.errors.append(exc)
        return default

    def raise_if_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise PlanErrors(list(self.errors))
