"""The ``quality`` block (SEMANTICS §10) and every rule model, re-exported from the rule modules."""

from __future__ import annotations

from pydantic import Field

from lakelogic.contract.models_base import Flag, OLCModel
from lakelogic.contract.models_dataset_rules import (
    DATASET_SHORTHANDS,
    DatasetRule,
    DatasetRuleNullRatio,
    DatasetRuleRowCountBetween,
    DatasetRuleUnique,
    NullRatioSpec,
    RowCountSpec,
)
from lakelogic.contract.models_row_rules import (
    ROW_SHORTHANDS,
    AcceptedValuesSpec,
    LifecycleWindowSpec,
    NotNullItem,
    NotNullTarget,
    RangeSpec,
    ReferentialIntegritySpec,
    RegexMatchSpec,
    RowRule,
    RowRuleAcceptedValues,
    RowRuleLifecycleWindow,
    RowRuleNotNull,
    RowRuleRange,
    RowRuleReferentialIntegrity,
    RowRuleRegexMatch,
)
from lakelogic.contract.models_rules import DATASET_OPTIONS, ROW_OPTIONS, QualityRule


class Quality(OLCModel):
    """§10.1."""

    enforce_required: Flag = True
    fail_pipeline_on_dataset_error: Flag = False
    row_rules: list[RowRule] = Field(default_factory=list)
    dataset_rules: list[DatasetRule] = Field(default_factory=list)


__all__ = [
    "DATASET_OPTIONS",
    "DATASET_SHORTHANDS",
    "ROW_OPTIONS",
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
