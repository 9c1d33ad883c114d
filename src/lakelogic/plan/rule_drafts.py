"""The intermediate form of a row rule before it gets its final name and phase.

Shorthands, field keys and declared rules all become :class:`RuleDraft` objects; :mod:`lakelogic.plan.rules`
then names them (SEMANTICS §10.4) and infers their phase (§10.2).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lakelogic.errors import PlanError
from lakelogic.plan.access import opt, text
from lakelogic.plan.steps import FieldSpec, ReferenceProbe
from lakelogic.types import LogicalType, Phase, Severity

Origin = Literal["declared", "shorthand", "field", "implied", "schema"]


@dataclass
class RuleDraft:
    """One row rule with everything but its final name and (inferred) phase."""

    base_name: str  # generated name stem (or the explicit name)
    explicit: bool  # True when the contract wrote the name
    predicate: str
    category: str
    severity: Severity
    phase: Phase | None  # explicit phase, None = infer
    origin: Origin
    yaml_path: str
    reads: tuple[str, ...]
    description: str | None = None
    detail: str | None = None
    probes: tuple[ReferenceProbe, ...] = field(default_factory=tuple)


def explicitly_set(obj: Any, key: str) -> bool:
    """True when the contract itself wrote ``key`` (not a model default)."""
    if obj is None:
        return False
    if isinstance(obj, Mapping):
        return obj.get(key) is not None
    fields_set = getattr(obj, "model_fields_set", None)
    if fields_set is not None:
        return key in fields_set and getattr(obj, key, None) is not None
    return getattr(obj, key, None) is not None


def rule_option(item: Any, body: Any, key: str) -> Any:
    """A shorthand option written inside its object or beside it (SEMANTICS §1.5.1)."""
    is_object = isinstance(body, Mapping) or hasattr(body, "model_fields_set")
    if is_object and explicitly_set(body, key):
        return opt(body, key)
    if body is not item and explicitly_set(item, key):
        return opt(item, key)
    return None


def parse_severity(value: Any, yaml_path: str) -> Severity:
    if value is None:
        return Severity.ERROR
    try:
        return Severity(str(text(value)).strip().lower())
    except ValueError:
        raise PlanError(
            f"unknown severity {value!r}",
            yaml_path=f"{yaml_path}.severity",
            hint="allowed: error, warning, info",
        ) from None


def parse_phase(value: Any, yaml_path: str) -> Phase | None:
    if value is None:
        return None
    try:
        return Phase(str(text(value)).strip().lower())
    except ValueError:
        raise PlanError(
            f"unknown phase {value!r}", yaml_path=f"{yaml_path}.phase", hint="allowed: pre, post"
        ) from None


def category_of(value: Any, default: str) -> str:
    """Categories are free text, lower-cased (SEMANTICS §10.4)."""
    cat = text(value)
    return cat.strip().lower() if cat and cat.strip() else default


@dataclass
class RuleContext:
    """What rule compilation needs to know beyond the rule itself."""

    fields: tuple[FieldSpec, ...]
    links: frozenset[str]
    enforce_required: bool = True
    cast_to_string: bool = False
    key_columns: tuple[str, ...] = ()  # merge/SCD2 keys: always checked non-NULL (§6)
    key_path: str = "primary_key"  # where the key columns were declared
    # Columns the runtime fills after the rules run (``generated`` fields, SCD2 bookkeeping, surrogate
    # keys): a required check on them would quarantine every row, so none is generated.
    write_only: frozenset[str] = frozenset()
    _probes: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def type_of(self, column: str) -> LogicalType | None:
        if self.cast_to_string:
            return LogicalType("string") if column in self.field_names else None
        for spec in self.fields:
            if spec.name == column:
                return spec.type
        return None

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def new_probe_column(self) -> str:
        return f"__lakelogic_probe_{next(self._probes)}"


# --- field rules ------------------------------------------------------------------------------
