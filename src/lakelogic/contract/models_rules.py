"""Rule building blocks (SEMANTICS §10.1, §1.5.1): the canonical ``{name, sql}`` rule and the base of
every shorthand rule.

Shorthand options (``name``, ``description``, ``category``, ``severity``, ``phase``) may be written
inside the shorthand object or beside the shorthand key. They are normalised to live *beside* it,
i.e. as attributes of the rule model (``rule.severity``), and the shorthand's own object keeps only
its parameters. Writing the same option in both places is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import Identifier, OLCModel, PhaseValue, SeverityValue
from lakelogic.types import Severity

ROW_OPTIONS = ("name", "description", "category", "severity", "phase")
DATASET_OPTIONS = ("name", "description", "category", "severity")


class QualityRule(OLCModel):
    """A canonical ``{name, sql}`` rule (row or dataset level, §10.1)."""

    TAG: ClassVar[str] = "<sql rule>"

    name: Identifier
    sql: str = Field(min_length=1)
    category: str = "correctness"
    description: str | None = None
    severity: SeverityValue = Severity.ERROR
    phase: PhaseValue | None = None  # None: inferred by the compiler (§10.2)
    must_be_between: tuple[float, float] | None = None
    must_be_less_than: float | None = None
    must_be_greater_than: float | None = None

    @field_validator("category")
    @classmethod
    def _lower_category(cls, value: str) -> str:
        return value.lower()

    @model_validator(mode="after")
    def _check_bounds(self) -> QualityRule:
        if self.must_be_between is not None and self.must_be_between[0] > self.must_be_between[1]:
            raise ValueError("must_be_between needs [low, high] with low <= high")
        return self


def lower_or_none(cls: type, value: str | None) -> str | None:
    """Categories are free text, compared lower-cased (§10.4)."""
    return None if value is None else value.lower()


class ShorthandRule(OLCModel):
    """Common behaviour of shorthand rules: lift options out of the shorthand object."""

    KEY: ClassVar[str] = ""
    OPTIONS: ClassVar[tuple[str, ...]] = ROW_OPTIONS

    @model_validator(mode="before")
    @classmethod
    def _lift_options(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        inner = data.get(cls.KEY)
        if not isinstance(inner, Mapping):
            return data
        out = dict(data)
        params = dict(inner)
        for option in cls.OPTIONS:
            if option not in params:
                continue
            if option in out:
                raise PydanticCustomError(
                    "option_twice",
                    "'{option}' is written both inside '{key}' and beside it; write it once",
                    {"option": option, "key": cls.KEY},
                )
            out[option] = params.pop(option)
        out[cls.KEY] = params
        return out

    _lower_category = field_validator("category", check_fields=False)(lower_or_none)


def rule_tag(shorthands: Mapping[str, type[ShorthandRule]]) -> Any:
    def tag(value: Any) -> str | None:
        if isinstance(value, Mapping):
            if "sql" in value:
                return QualityRule.TAG
            for key in shorthands:
                if key in value:
                    return f"<{key}>"
            return None
        if isinstance(value, QualityRule):
            return QualityRule.TAG
        if isinstance(value, ShorthandRule):
            return f"<{value.KEY}>"
        return None

    return tag
