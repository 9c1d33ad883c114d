"""One item of ``transformations`` (SEMANTICS §9.1): exactly one op key (or ``sql``) + optional ``phase``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import OLCModel, PhaseValue, closest
from lakelogic.contract.models_ops import (
    TransformationBucket,
    TransformationCast,
    TransformationCoalesce,
    TransformationDateDiff,
    TransformationDateRangeExplode,
    TransformationDeduplicate,
    TransformationDeduplicateByLatest,
    TransformationDerive,
    TransformationDrop,
    TransformationExplode,
    TransformationFilter,
    TransformationJoin,
    TransformationJsonExtract,
    TransformationLookup,
    TransformationLower,
    TransformationMapValues,
    TransformationPivot,
    TransformationRename,
    TransformationRollup,
    TransformationSelect,
    TransformationSplit,
    TransformationTrim,
    TransformationUnpivot,
    TransformationUpper,
)
from lakelogic.types import Phase

# Default phase of each op when the item has no explicit ``phase`` (§9.2): normalising ops
# run pre, enriching ops post.
OP_DEFAULT_PHASE: dict[str, Phase] = {
    "sql": Phase.POST,
    "rename": Phase.PRE,
    "derive": Phase.POST,
    "filter": Phase.PRE,
    "cast": Phase.PRE,
    "select": Phase.PRE,
    "drop": Phase.PRE,
    "trim": Phase.PRE,
    "lower": Phase.PRE,
    "upper": Phase.PRE,
    "coalesce": Phase.PRE,
    "map_values": Phase.PRE,
    "deduplicate": Phase.PRE,
    "deduplicate_by_latest": Phase.PRE,
    "split": Phase.PRE,
    "explode": Phase.PRE,
    "json_extract": Phase.POST,
    "bucket": Phase.POST,
    "date_diff": Phase.POST,
    "date_range_explode": Phase.POST,
    "lookup": Phase.POST,
    "join": Phase.POST,
    "rollup": Phase.POST,
    "pivot": Phase.POST,
    "unpivot": Phase.POST,
}

OP_NAMES: tuple[str, ...] = tuple(OP_DEFAULT_PHASE)

OpParams = (
    TransformationRename
    | TransformationDerive
    | TransformationLookup
    | TransformationFilter
    | TransformationDeduplicate
    | TransformationDeduplicateByLatest
    | TransformationSelect
    | TransformationDrop
    | TransformationCast
    | TransformationTrim
    | TransformationLower
    | TransformationUpper
    | TransformationCoalesce
    | TransformationSplit
    | TransformationExplode
    | TransformationMapValues
    | TransformationRollup
    | TransformationJoin
    | TransformationPivot
    | TransformationUnpivot
    | TransformationJsonExtract
    | TransformationDateRangeExplode
    | TransformationBucket
    | TransformationDateDiff
)


class Transformation(OLCModel):
    """One transformation step. Exactly one op attribute is set; see :attr:`op_name` / :attr:`op`."""

    rename: TransformationRename | None = None
    derive: TransformationDerive | None = None
    lookup: TransformationLookup | None = None
    filter: TransformationFilter | None = None
    deduplicate: TransformationDeduplicate | None = None
    deduplicate_by_latest: TransformationDeduplicateByLatest | None = None
    select: TransformationSelect | None = None
    drop: TransformationDrop | None = None
    cast: TransformationCast | None = None
    trim: TransformationTrim | None = None
    lower: TransformationLower | None = None
    upper: TransformationUpper | None = None
    coalesce: TransformationCoalesce | None = None
    split: TransformationSplit | None = None
    explode: TransformationExplode | None = None
    map_values: TransformationMapValues | None = None
    rollup: TransformationRollup | None = None
    join: TransformationJoin | None = None
    pivot: TransformationPivot | None = None
    unpivot: TransformationUnpivot | None = None
    json_extract: TransformationJsonExtract | None = None
    date_range_explode: TransformationDateRangeExplode | None = None
    bucket: TransformationBucket | None = None
    date_diff: TransformationDateDiff | None = None
    sql: str | None = Field(default=None, min_length=1)
    phase: PhaseValue | None = None

    @model_validator(mode="before")
    @classmethod
    def _exactly_one_op(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        keys = [k for k in data if k != "phase"]
        unknown = [k for k in keys if k not in OP_DEFAULT_PHASE]
        if unknown:
            key = str(unknown[0])
            raise PydanticCustomError(
                "unknown_op",
                "unknown transformation op",
                {
                    "key": key,
                    "allowed": ", ".join(OP_NAMES) + " (plus 'phase')",
                    "suggestion": closest(key, (*OP_NAMES, "phase")),
                },
            )
        empty = [k for k in keys if data[k] is None]
        if empty and len(keys) == 1:
            raise PydanticCustomError(
                "op_empty",
                "op '{key}' has no parameters",
                {"key": str(empty[0]), "allowed": "the op's parameters (SEMANTICS §9.2)"},
            )
        if len(keys) != 1:
            raise PydanticCustomError(
                "op_count",
                "a transformation item needs exactly one op key (or sql) besides 'phase'; found {found}",
                {"found": ", ".join(map(str, keys)) or "none", "allowed": ", ".join(OP_NAMES)},
            )
        return data

    @property
    def op_name(self) -> str:
        """The op key of this item (``derive``, ``sql``, …)."""
        for name in OP_NAMES:
            if getattr(self, name) is not None:
                return name
        raise AssertionError("validated Transformation without an op")  # pragma: no cover

    @property
    def op(self) -> OpParams | str:
        """The op's parameter model, or the SQL text for ``sql``."""
        value: OpParams | str = getattr(self, self.op_name)
        return value

    @property
    def effective_phase(self) -> Phase:
        """Explicit ``phase``, else the op's default (§9.1)."""
        return self.phase if self.phase is not None else OP_DEFAULT_PHASE[self.op_name]


__all__ = ["OP_DEFAULT_PHASE", "OP_NAMES", "OpParams", "Transformation"]
