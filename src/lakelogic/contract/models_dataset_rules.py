"""Dataset-rule shorthands (SEMANTICS §10.5): unique, null_ratio, row_count_between, and the
``DatasetRule`` union with canonical rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import Identifier, OLCModel, SeverityValue
from lakelogic.contract.models_rules import DATASET_OPTIONS, QualityRule, ShorthandRule, rule_tag
from lakelogic.types import Severity

# --- dataset-rule shorthands -----------------------------------------------------------------


class _DatasetShorthand(ShorthandRule):
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
        rule_tag(DATASET_SHORTHANDS),
        custom_error_type="rule_shape",
        custom_error_message="a dataset rule needs {name, sql} or one of " + ", ".join(DATASET_SHORTHANDS),
        custom_error_context={"allowed": "sql, " + ", ".join(DATASET_SHORTHANDS)},
    ),
]
