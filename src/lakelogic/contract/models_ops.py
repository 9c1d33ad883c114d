"""Parameter models of the structured transformation ops (SEMANTICS §9.2).

One model per op, named ``Transformation<Op>`` after the schema ``$defs``. Aliases (§9.2, e.g.
``deduplicate.by`` → ``on``, ``pivot.pivot_values`` → ``values``) are renamed to canonical keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from lakelogic.contract.models_base import ClosedSet, Columns, Flag, OLCModel
from lakelogic.contract.models_fields import check_type_name

TRIM_SIDES = ("both", "left", "right")
DEDUP_ORDERS = ("desc", "asc")
JOIN_TYPES = ("left", "inner", "right", "full")
DATE_DIFF_UNITS = ("days", "hours", "minutes", "seconds", "weeks", "months", "years")
PIVOT_AGGS = ("sum", "avg", "min", "max", "count", "first", "last")

TrimSide = Annotated[str, ClosedSet(TRIM_SIDES, what="trim side")]
DedupOrder = Annotated[str, ClosedSet(DEDUP_ORDERS, what="deduplicate order")]
JoinType = Annotated[str, ClosedSet(JOIN_TYPES, what="join type")]
DateDiffUnit = Annotated[str, ClosedSet(DATE_DIFF_UNITS, what="date_diff unit")]
PivotAgg = Annotated[str, ClosedSet(PIVOT_AGGS, what="pivot agg")]


class OpParams(OLCModel):
    """Base of the op parameter models. The JSON Schema allows an explicit ``null`` for optional op
    parameters and means the default by it, so a ``null`` value is read as an absent key."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = {f.alias or name for name, f in cls.model_fields.items()} | set(cls.model_fields)
        known |= set(getattr(cls, "KEY_ALIASES", {}))
        # an unknown key stays, null or not, so its typo is still reported
        return {k: v for k, v in data.items() if v is not None or k not in known}


class TransformationRename(OpParams):
    """``from``+``to`` or ``mappings {old: new}``; applied simultaneously."""

    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    mappings: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> TransformationRename:
        pair = self.from_ is not None or self.to is not None
        if pair and (self.from_ is None or self.to is None):
            raise ValueError("rename needs both 'from' and 'to'")
        if pair == (self.mappings is not None):
            raise ValueError("rename needs either 'from'+'to' or 'mappings'")
        return self

    @property
    def renames(self) -> dict[str, str]:
        """All renames as ``{old: new}``."""
        if self.mappings is not None:
            return dict(self.mappings)
        assert self.from_ is not None and self.to is not None  # guaranteed by _one_form
        return {self.from_: self.to}


class TransformationDerive(OpParams):
    field: str
    sql: str = Field(min_length=1)
    sql_spark: str | None = None
    sql_duckdb: str | None = None


class TransformationFilter(OpParams):
    sql: str = Field(min_length=1)


class TransformationCast(OpParams):
    columns: dict[str, str] = Field(min_length=1)

    @field_validator("columns")
    @classmethod
    def _types(cls, value: dict[str, str]) -> dict[str, str]:
        for type_name in value.values():
            check_type_name(type_name)
        return value


class TransformationSelect(OpParams):
    columns: Columns = Field(min_length=1)


class TransformationDrop(OpParams):
    columns: Columns


class TransformationTrim(OpParams):
    fields: Columns
    side: TrimSide = "both"


class TransformationLower(OpParams):
    fields: Columns


class TransformationUpper(OpParams):
    fields: Columns


class TransformationCoalesce(OpParams):
    field: str
    sources: list[str] = Field(default_factory=list)
    default: Any = None
    output: str | None = None  # None: same as field


class TransformationMapValues(OpParams):
    field: str
    mapping: dict[str, Any]
    default: Any = None
    output: str | None = None

    @field_validator("mapping", mode="before")
    @classmethod
    def _text_keys(cls, value: Any) -> Any:
        # Keys are matched against the value's text (§9.2); YAML may give ints/bools as keys.
        if isinstance(value, Mapping):
            return {_key_text(k): v for k, v in value.items()}
        return value


def _key_text(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


class TransformationDeduplicate(OpParams):
    KEY_ALIASES: ClassVar[Mapping[str, str]] = {"by": "on"}

    on: Columns = Field(default_factory=list)  # empty: all columns
    sort_by: Columns = Field(default_factory=list)
    order: DedupOrder = "desc"


class TransformationDeduplicateByLatest(OpParams):
    key_columns: Columns = Field(min_length=1)
    timestamp_column: str


class TransformationSplit(OpParams):
    field: str
    delimiter: str = Field(default=",", min_length=1)
    output: str | None = None


class TransformationExplode(OpParams):
    field: str
    output: str | None = None


class TransformationJsonExtract(OpParams):
    field: str
    source: str
    path: str
    cast: str | None = None

    @field_validator("cast")
    @classmethod
    def _cast_type(cls, value: str | None) -> str | None:
        return None if value is None else check_type_name(value)


class BucketBin(OLCModel):
    label: Any
    lt: float | int | None = None
    lte: float | int | None = None
    gt: float | int | None = None
    gte: float | int | None = None
    eq: Any = None


class TransformationBucket(OpParams):
    field: str
    source: str
    bins: list[BucketBin] = Field(default_factory=list)
    default: Any = None


class TransformationDateDiff(OpParams):
    field: str
    from_col: str
    to_col: str
    unit: DateDiffUnit = "days"


class TransformationDateRangeExplode(OpParams):
    output: str
    start_col: str
    end_col: str | None = None
    interval: str = Field(default="1d", pattern=r"^\d+(d|w|mo|h)$")


class TransformationLookup(OpParams):
    field: str
    reference: str
    on: str
    key: str
    value: str
    default_value: Any = None


class TransformationJoin(OpParams):
    reference: str
    on: str
    key: str
    fields: Columns = Field(min_length=1)
    type: JoinType = "left"
    prefix: str = ""
    defaults: dict[str, Any] = Field(default_factory=dict)


class TransformationRollup(OpParams):
    group_by: Columns = Field(default_factory=list)
    aggregations: dict[str, str] = Field(default_factory=dict)
    keys: Columns | None = None
    key_expr: str | None = None
    rollup_keys_column: str = "_lakelogic_rollup_keys"
    rollup_keys_count_column: str = "_lakelogic_rollup_keys_count"
    upstream_run_id_column: str = "_upstream_lakelogic_run_id"
    upstream_run_ids_column: str = "_upstream_lakelogic_run_ids"
    distinct: Flag = True

    @model_validator(mode="after")
    def _keys_or_expr(self) -> TransformationRollup:
        if self.keys is not None and self.key_expr is not None:
            raise ValueError("rollup takes 'keys' or 'key_expr', not both")
        return self


class TransformationPivot(OpParams):
    KEY_ALIASES: ClassVar[Mapping[str, str]] = {"pivot_values": "values"}

    id_vars: Columns = Field(default_factory=list)
    pivot_col: str | None = None
    pivot_cols: Columns | None = None
    value_col: str | None = None
    value_cols: Columns | None = None
    values: list[Any] = Field(default_factory=list)  # empty: distinct values sorted as text
    agg: PivotAgg = "first"
    aggs: dict[str, str] | None = None
    fill_value: Any = None
    separator: str = "_"
    name_template: str | None = None
    value_aliases: dict[str, str] | None = None

    @model_validator(mode="after")
    def _columns_given(self) -> TransformationPivot:
        if self.pivot_col is None and not self.pivot_cols:
            raise ValueError("pivot needs 'pivot_col' or 'pivot_cols'")
        if self.value_col is None and not self.value_cols:
            raise ValueError("pivot needs 'value_col' or 'value_cols'")
        return self


class TransformationUnpivot(OpParams):
    KEY_ALIASES: ClassVar[Mapping[str, str]] = {"value_cols": "value_vars"}

    id_vars: Columns = Field(default_factory=list)
    value_vars: Columns = Field(default_factory=list)
    key_field: str = "key"
    value_field: str = "value"
    include_nulls: Flag = False
    value_aliases: dict[str, str] | None = None


__all__ = [
    "DATE_DIFF_UNITS",
    "DEDUP_ORDERS",
    "JOIN_TYPES",
    "TRIM_SIDES",
    "BucketBin",
    "TransformationBucket",
    "TransformationCast",
    "TransformationCoalesce",
    "TransformationDateDiff",
    "TransformationDateRangeExplode",
    "TransformationDeduplicate",
    "TransformationDeduplicateByLatest",
    "TransformationDerive",
    "TransformationDrop",
    "TransformationExplode",
    "TransformationFilter",
    "TransformationJoin",
    "TransformationJsonExtract",
    "TransformationLookup",
    "TransformationLower",
    "TransformationMapValues",
    "TransformationPivot",
    "TransformationRename",
    "TransformationRollup",
    "TransformationSelect",
    "TransformationSplit",
    "TransformationTrim",
    "TransformationUnpivot",
    "TransformationUpper",
]
