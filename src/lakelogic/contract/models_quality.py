"""The ``quality`` block (SEMANTICS §10): canonical rules, row-rule and dataset-rule shorthands.

Shorthand options (``name``, ``description``, ``category``, ``severity``, ``phase``) may be written
inside the shorthand object or beside the shorthand key (§1.5.1). They are normalised to live
*beside* it, i.e. as attributes of the rule model (``rule.severity``), and the shorthand's own
object keeps only its parameters. Writing the same option in both places is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import Flag, Identifier, OLCModel, PhaseValue, SeverityValue
from lakelogic.types import Phase, Severity

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


def _lower_or_none(cls: type, value: str | None) -> str | None:
    """Categories are free text, compared lower-cased (§10.4)."""
    return None if value is None else value.lower()


class _Shorthand(OLCModel):
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

    _lower_category = field_validator("category", check_fields=False)(_lower_or_none)


class _RowShorthand(_Shorthand):
    name: Identifier | None = None
    description: str | None = None
    category: str | None = None  # None: the shorthand's default category (§10.3)
    severity: SeverityValue = Severity.ERROR
    phase: PhaseValue | None = None


# --- row-rule shorthands ---------------------------------------------------------------------


@dataclass(frozen=True)
class NotNullTarget:
    """One generated ``<field>_not_null`` rule with its effective options."""

    field: str
    name: str | None
    description: str | None
    category: str | None
    severity: Severity
    phase: Phase | None


class NotNullItem(OLCModel):
    """``{field}`` or ``{fields}`` (with optional per-item options) inside ``not_null``."""

    field: str | None = None
    fields: list[str] | None = None
    name: Identifier | None = None
    description: str | None = None
    category: str | None = None
    severity: SeverityValue | None = None
    phase: PhaseValue | None = None

    _lower_category = field_validator("category")(_lower_or_none)

    @model_validator(mode="after")
    def _one_form(self) -> NotNullItem:
        if (self.field is None) == (self.fields is None):
            raise ValueError("not_null needs exactly one of 'field' or 'fields'")
        if self.fields is not None and len(self.fields) > 1 and self.name is not None:
            raise ValueError("'name' is not allowed on a multi-field not_null (one rule per field)")
        return self

    @property
    def field_names(self) -> list[str]:
        return [self.field] if self.field is not None else list(self.fields or [])


class RowRuleNotNull(_RowShorthand):
    KEY: ClassVar[str] = "not_null"

    not_null: str | NotNullItem | list[str | NotNullItem]

    @model_validator(mode="after")
    def _name_single_field(self) -> RowRuleNotNull:
        if self.name is not None and len(self.field_names) > 1:
            raise ValueError("'name' is not allowed on a multi-field not_null (one rule per field)")
        return self

    @property
    def field_names(self) -> list[str]:
        return [t.field for t in self.targets()]

    def targets(self) -> list[NotNullTarget]:
        """One entry per checked field; item options override the rule's options."""
        items = self.not_null if isinstance(self.not_null, list) else [self.not_null]
        out: list[NotNullTarget] = []
        for item in items:
            own: NotNullItem | None = None if isinstance(item, str) else item
            fields = [item] if isinstance(item, str) else item.field_names
            for f in fields:
                out.append(
                    NotNullTarget(
                        field=f,
                        name=(own.name if own and own.name else self.name),
                        description=(own.description if own and own.description else self.description),
                        category=(own.category if own and own.category else self.category),
                        severity=(own.severity if own and own.severity else self.severity),
                        phase=(own.phase if own and own.phase else self.phase),
                    )
                )
        return out


class AcceptedValuesSpec(OLCModel):
    field: str
    values: list[Any] = Field(min_length=1)


class RowRuleAcceptedValues(_RowShorthand):
    KEY: ClassVar[str] = "accepted_values"

    accepted_values: AcceptedValuesSpec


class RegexMatchSpec(OLCModel):
    field: str
    pattern: str


class RowRuleRegexMatch(_RowShorthand):
    KEY: ClassVar[str] = "regex_match"

    regex_match: RegexMatchSpec


class RangeSpec(OLCModel):
    field: str
    min: float | int | str | None = None
    max: float | int | str | None = None
    inclusive: Flag = True


class RowRuleRange(_RowShorthand):
    KEY: ClassVar[str] = "range"

    range: RangeSpec


class ReferentialIntegritySpec(OLCModel):
    KEY_ALIASES: ClassVar[Mapping[str, str]] = {"column": "field"}

    field: str
    reference: str
    key: str | None = None  # None: same as field

    @property
    def effective_key(self) -> str:
        return self.key or self.field


class RowRuleReferentialIntegrity(_RowShorthand):
    KEY: ClassVar[str] = "referential_integrity"

    referential_integrity: ReferentialIntegritySpec


class LifecycleWindowSpec(OLCModel):
    """Either the reference form (event_ts/event_key/reference/…) or the sliding form (field/window)."""

    KEY_ALIASES: ClassVar[Mapping[str, str]] = {"timestamp_field": "event_ts"}

    event_ts: str | None = None
    event_key: str | None = None
    reference: str | None = None
    reference_key: str | None = None
    start_field: str | None = None
    end_field: str | None = None
    end_default: Any = None
    field: str | None = None
    window: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> LifecycleWindowSpec:
        reference_form = self.event_ts is not None or self.reference is not None
        sliding_form = self.field is not None or self.window is not None
        if reference_form == sliding_form:
            raise ValueError(
                "lifecycle_window needs either {event_ts, event_key, reference, start_field, end_field} "
                "or {field, window}"
            )
        if reference_form:
            missing = [
                k for k in ("event_ts", "event_key", "reference", "start_field") if getattr(self, k) is None
            ]
        else:
            missing = [k for k in ("field", "window") if getattr(self, k) is None]
        if missing:
            raise ValueError(f"lifecycle_window is missing {', '.join(missing)}")
        return self

    @property
    def is_reference_form(self) -> bool:
        return self.reference is not None


class RowRuleLifecycleWindow(_RowShorthand):
    KEY: ClassVar[str] = "lifecycle_window"

    lifecycle_window: LifecycleWindowSpec


ROW_SHORTHANDS: dict[str, type[_RowShorthand]] = {
    cls.KEY: cls
    for cls in (
        RowRuleNotNull,
        RowRuleAcceptedValues,
        RowRuleRegexMatch,
        RowRuleRange,
        RowRuleReferentialIntegrity,
        RowRuleLifecycleWindow,
    )
}


def _rule_tag(shorthands: Mapping[str, type[_Shorthand]]) -> Any:
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
        if isinstance(value, _Shorthand):
            return f"<{value.KEY}>"
        return None

    return tag


_ROW_FORMS = "{name, sql} or one of " + ", ".join(ROW_SHORTHANDS)

RowRule = Annotated[
    Annotated[QualityRule, Tag(QualityRule.TAG)]
    | Annotated[RowRuleNotNull, Tag("<not_null>")]
    | Annotated[RowRuleAcceptedValues, Tag("<accepted_values>")]
    | Annotated[RowRuleRegexMatch, Tag("<regex_match>")]
    | Annotated[RowRuleRange, Tag("<range>")]
    | Annotated[RowRuleReferentialIntegrity, Tag("<referential_integrity>")]
    | Annotated[RowRuleLifecycleWindow, Tag("<lifecycle_window>")],
    Discriminator(
        _rule_tag(ROW_SHORTHANDS),
        custom_error_type="rule_shape",
        custom_error_message="a row rule needs " + _ROW_FORMS,
        custom_error_context={"allowed": "sql, " + ", ".join(ROW_SHORTHANDS)},
    ),
]


# --- dataset-rule shorthands -----------------------------------------------------------------


class _DatasetShorthand(_Shorthand):
    OPTIONS: ClassVar[tuple[str, ...]] = DATASET_OPTIONS

    name: Identifier | None = None
    description: str | None = None
    category: str | None = None
    severity: SeverityValue = Severity.ERROR


def _unique_json_schema(schema: dict[str, Any]) -> None:
    """Advertise the forms YAML may use (the model stores the normalised column list)."""
    columns = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    options = {k: {"type": "string"} for k in DATASET_OPTIONS}
    as_object = {
        "type": "object",
        "properties": {"field": {"type": "string"}, "fields": columns, "columns": columns, **options},
        "additionalProperties": False,
    }
    schema.clear()
    schema["anyOf"] = [*columns["anyOf"], as_object]


class DatasetRuleUnique(_DatasetShorthand):
    """``unique: col`` / ``[cols]`` / ``{field | fields | columns}``; normalised to a column list."""

    KEY: ClassVar[str] = "unique"

    unique: list[str] = Field(min_length=1, json_schema_extra=_unique_json_schema)

    @field_validator("unique", mode="before")
    @classmethod
    def _to_columns(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        if isinstance(value, Mapping):
            forms = [k for k in ("field", "fields", "columns") if k in value]
            extra = sorted(set(value) - {"field", "fields", "columns"})
            if extra:
                raise PydanticCustomError(
                    "unknown_key_in",
                    "unknown key(s) {keys} in unique",
                    {
                        "keys": ", ".join(extra),
                        "allowed": "field, fields, columns, " + ", ".join(DATASET_OPTIONS),
                    },
                )
            if len(forms) != 1:
                raise ValueError("unique needs exactly one of 'field', 'fields', 'columns'")
            cols = value[forms[0]]
            return [cols] if isinstance(cols, str) else cols
        return value


class NullRatioSpec(OLCModel):
    field: str
    max: float = Field(ge=0, le=1)


class DatasetRuleNullRatio(_DatasetShorthand):
    KEY: ClassVar[str] = "null_ratio"

    null_ratio: NullRatioSpec


class RowCountSpec(OLCModel):
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> RowCountSpec:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("row_count_between needs min <= max")
        return self


class DatasetRuleRowCountBetween(_DatasetShorthand):
    KEY: ClassVar[str] = "row_count_between"

    row_count_between: RowCountSpec


DATASET_SHORTHANDS: dict[str, type[_DatasetShorthand]] = {
    cls.KEY: cls for cls in (DatasetRuleUnique, DatasetRuleNullRatio, DatasetRuleRowCountBetween)
}

DatasetRule = Annotated[
    Annotated[QualityRule, Tag(QualityRule.TAG)]
    | Annotated[DatasetRuleUnique, Tag("<unique>")]
    | Annotated[DatasetRuleNullRatio, Tag("<null_ratio>")]
    | Annotated[DatasetRuleRowCountBetween, Tag("<row_count_between>")],
    Discriminator(
        _rule_tag(DATASET_SHORTHANDS),
        custom_error_type="rule_shape",
        custom_error_message="a dataset rule needs {name, sql} or one of " + ", ".join(DATASET_SHORTHANDS),
        custom_error_context={"allowed": "sql, " + ", ".join(DATASET_SHORTHANDS)},
    ),
]


class Quality(OLCModel):
    """§10.1."""

    enforce_required: Flag = True
    fail_pipeline_on_dataset_error: Flag = False
    row_rules: list[RowRule] = Field(default_factory=list)
    dataset_rules: list[DatasetRule] = Field(default_factory=list)


__all__ = [
    "DATASET_SHORTHANDS",
    "ROW_SHORTHANDS",
    "AcceptedValuesSpec",
    "DatasetRule",
    "DatasetRuleNullRatio",
    "DatasetRuleRowCountBetween",
    "DatasetRuleUnique",
    "LifecycleWindowSpec",
    "NotNullItem",
    "NotNullTarget",
    "NullRatioSpec",
    "Quality",
    "QualityRule",
    "RangeSpec",
    "ReferentialIntegritySpec",
    "RegexMatchSpec",
    "RowCountSpec",
    "RowRule",
    "RowRuleAcceptedValues",
    "RowRuleLifecycleWindow",
    "RowRuleNotNull",
    "RowRuleRange",
    "RowRuleReferentialIntegrity",
    "RowRuleRegexMatch",
]
