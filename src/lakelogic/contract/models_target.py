"""Output-side blocks: ``materialization`` with typed ``scd2`` (§13) and ``lineage`` (§14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from lakelogic.contract.models_base import ClosedSet, Columns, Flag, OLCModel

STRATEGIES = ("append", "overwrite", "merge", "scd2")
# Formats of the Spark runtime; `ducklake`, `native`, `dlt` are rejected at validation (§13.1).
TARGET_FORMATS = ("iceberg", "delta", "parquet", "csv", "json")
FACT_TYPES = ("transaction", "periodic_snapshot", "accumulating_snapshot", "factless", "aggregate")

Strategy = Annotated[str, ClosedSet(STRATEGIES, what="strategy")]
TargetFormat = Annotated[str, ClosedSet(TARGET_FORMATS, what="materialization format")]
ReprocessPolicy = Annotated[
    str, ClosedSet(("overwrite_partition", "overwrite_partition_safe"), what="reprocess_policy")
]
SurrogateKeyStrategy = Annotated[str, ClosedSet(("hash", "uuid"), what="surrogate_key_strategy")]
FactType = Annotated[str, ClosedSet(FACT_TYPES, what="fact type")]
RunIdSource = Annotated[str, ClosedSet(("run_id", "pipeline_run_id"), what="run_id_source")]


class UnknownMember(OLCModel):
    """Placeholder dimension member inserted once (§13.3)."""

    enabled: Flag = True
    surrogate_key_value: Any = "-1"
    default_values: dict[str, Any] = Field(default_factory=dict)


class Scd2(OLCModel):
    """``materialization.scd2`` (§13.3); aliases of the table are renamed to canonical keys."""

    KEY_ALIASES: ClassVar[Mapping[str, str]] = {
        "change_date_field": "timestamp_field",
        "effective_from": "effective_from_field",
        "start_date_field": "effective_from_field",
        "effective_to": "effective_to_field",
        "end_date_field": "effective_to_field",
        "current_flag": "current_flag_field",
        "hash_columns": "track_columns",
        "start_date_default": "effective_from_default",
        "default_effective_from": "effective_from_default",
        "end_date_default": "effective_to_default",
    }

    business_key: Columns | None = None
    timestamp_field: str | None = None  # None: the run's as_of
    effective_from_field: str = "effective_from"
    effective_to_field: str = "effective_to"
    current_flag_field: str = "is_current"
    version_column: str | None = None
    track_columns: Columns | None = None  # None: all data columns (§13.3)
    effective_from_default: str = "1900-01-01"
    effective_to_default: str = "9999-12-31"
    surrogate_key: str | None = None
    surrogate_key_strategy: SurrogateKeyStrategy = "hash"
    change_reason_column: str | None = None
    unknown_member: UnknownMember | None = None


class Fact(OLCModel):
    """§13.6."""

    type: FactType
    milestone_dates: list[str] = Field(default_factory=list)


class Materialization(OLCModel):
    """§13: how (and whether) good rows are written."""

    strategy: Strategy = "append"
    partition_by: Columns = Field(default_factory=list)
    cluster_by: Columns = Field(default_factory=list)
    reprocess_policy: ReprocessPolicy = "overwrite_partition"
    reprocess_date_column: str | None = None
    target_path: str | None = None
    location: str | None = None
    format: TargetFormat | None = None
    scd2: Scd2 | None = None
    fact: Fact | None = None
    soft_delete_column: str | None = None
    soft_delete_value: Any = True
    soft_delete_time_column: str | None = None
    soft_delete_reason_column: str | None = None
    table_properties: dict[str, Any] = Field(default_factory=dict)  # free-form (§1.2)
    compaction: dict[str, Any] = Field(default_factory=dict)  # free-form
    unknown_member: dict[str, Any] | None = None  # free-form
    merge_dedup_guard: Flag = False

    @model_validator(mode="after")
    def _consistent(self) -> Materialization:
        if self.fact is not None and self.fact.type == "transaction" and self.strategy != "append":
            raise ValueError("fact type 'transaction' needs strategy 'append'")
        if self.format in ("csv", "json") and self.strategy not in ("append", "overwrite"):
            raise ValueError(f"format '{self.format}' supports only strategies append and overwrite")
        return self


class Lineage(OLCModel):
    """§14: lineage columns stamped on good and quarantined rows."""

    enabled: Flag = False
    capture_source_path: Flag = True
    capture_timestamp: Flag = True
    capture_run_id: Flag = True
    capture_contract_name: Flag = True
    capture_domain: Flag = True
    capture_system: Flag = True
    capture_created_at: Flag = True
    capture_created_by: Flag = True
    source_column_name: str = "_lakelogic_source"
    timestamp_column_name: str = "_lakelogic_processed_at"
    run_id_column_name: str = "_lakelogic_run_id"
    contract_name_column_name: str = "_lakelogic_contract_name"
    domain_column_name: str = "_lakelogic_domain"
    system_column_name: str = "_lakelogic_system"
    created_at_column_name: str = "_lakelogic_created_at"
    created_by_column_name: str = "_lakelogic_created_by"
    created_by_override: str | None = None
    preserve_upstream: list[str] = Field(default_factory=list)
    upstream_prefix: str = "_upstream"
    run_id_source: RunIdSource = "run_id"


__all__ = [
    "FACT_TYPES",
    "STRATEGIES",
    "TARGET_FORMATS",
    "Fact",
    "Lineage",
    "Materialization",
    "Scd2",
    "UnknownMember",
]
