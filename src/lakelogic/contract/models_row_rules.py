"""Row-rule shorthands (SEMANTICS §10.3): not_null, accepted_values, regex_match, range,
referential_integrity, lifecycle_window, and the ``RowRule`` union with canonical rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from lakelogic.contract.models_base import Flag, Identifier, OLCModel, PhaseValue, SeverityValue
from lakelogic.contract.models_rules import QualityRule, ShorthandRule, lower_or_none, rule_tag
from lakelogic.types import Phase, Severity


class _RowShorthand(ShorthandRule):
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

    _lower_category = field_validator("category")(lower_or_none)

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
        rule_tag(ROW_SHORTHANDS),
        custom_error_type="rule_shape",
        custom_error_message="a row rule needs " + _ROW_FORMS,
        custom_error_context={"allowed": "sql, " + ", ".join(ROW_SHORTHANDS)},
    ),
]
