"""The ``model`` block (SEMANTICS §5): fields, their types, generated-rule keys and masking."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import ClosedSet, Flag, OLCModel, SeverityValue
from lakelogic.contract.models_rules import QualityRule
from lakelogic.types import LogicalType, TypeParseError, parse_type

MASKING_STRATEGIES = ("nullify", "hash", "redact", "partial", "encrypt")
MASKING_ALIASES = {"null": "nullify", "tokenize": "encrypt"}

# What the "allowed" part of a type error lists; aliases (§5.2) are accepted too.
CANONICAL_TYPES = (
    "string, integer, bigint, float, double, decimal(p,s), boolean, date, timestamp, timestamp_ntz, "
    "binary, json, array, array<T> (and the aliases of SEMANTICS §5.2: int, long, text, bool, ...)"
)

Masking = Annotated[str, ClosedSet(MASKING_STRATEGIES, aliases=MASKING_ALIASES, what="masking strategy")]


def check_type_name(value: str) -> str:
    """Validate a model/cast type name with :func:`lakelogic.types.parse_type` (§5.2)."""
    try:
        parse_type(value)
    except TypeParseError as exc:
        raise PydanticCustomError(
            "closed_value",
            "unknown type",
            {
                "what": "type",
                "value": value,
                "allowed": CANONICAL_TYPES,
                "suggestion": exc.suggestion,
            },
        ) from None
    return value


class ForeignKey(OLCModel):
    """Documentation/lineage only (§5.1); enforce with ``referential_integrity``."""

    contract: str
    column: str
    severity: SeverityValue | None = None


class ModelField(OLCModel):
    """One column of the model (§5.1)."""

    name: str = Field(min_length=1)
    type: str
    required: Flag = False
    nullable: Flag | None = None
    pii: Flag = False
    phi: Flag = False
    sensitive: Flag = False
    classification: str | None = None
    description: str | None = None
    rules: list[QualityRule] = Field(default_factory=list)
    accepted_values: list[Any] | None = None
    min: float | int | str | None = None
    max: float | int | str | None = None
    max_length: int | None = None
    foreign_key: ForeignKey | None = None
    milestone: Flag = False
    generated: Flag = False
    security_groups: list[str] | None = None
    masking: Masking | None = None
    masking_format: str | None = None
    pii_vault: str | None = None
    extraction_task: str | None = None
    extraction_examples: list[str] | None = None

    @field_validator("type")
    @classmethod
    def _check_type(cls, value: str) -> str:
        return check_type_name(value)

    @property
    def logical_type(self) -> LogicalType:
        return parse_type(self.type)

    @property
    def is_required(self) -> bool:
        """``required: true`` or ``nullable: false`` (§5.1)."""
        return self.required or self.nullable is False


class Model(OLCModel):
    """The ``model`` block: declared columns plus documentation keys."""

    fields: list[ModelField] = Field(default_factory=list)
    grain: str | None = None
    grain_key: list[str] | None = None

    @field_validator("fields")
    @classmethod
    def _unique_names(cls, value: list[ModelField]) -> list[ModelField]:
        seen: set[str] = set()
        for f in value:
            if f.name in seen:
                raise ValueError(f"duplicate field name {f.name!r}")
            seen.add(f.name)
        return value


__all__ = ["MASKING_STRATEGIES", "ForeignKey", "Model", "ModelField", "check_type_name"]
