"""Input-side blocks: ``source`` (§3), ``links`` (§4), ``server``/``environments``/``schema_policy`` (§7)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from lakelogic.contract.models_base import ClosedSet, Flag, Identifier, OLCModel

SOURCE_TYPES = ("landing", "table", "delta", "iceberg", "database", "stream", "api", "dlt", "sftp")
SOURCE_FORMATS = (
    "csv",
    "tsv",
    "json",
    "jsonl",
    "ndjson",
    "parquet",
    "avro",
    "orc",
    "xml",
    "excel",
    "xlsx",
    "xls",
    "fixed_width",
    "delta",
    "iceberg",
)
LOAD_MODES = ("full", "incremental", "cdc")
WATERMARK_STRATEGIES = ("max_target", "pipeline_log", "lookback", "date_range", "manifest", "delta_version")
LINK_TYPES = ("parquet", "csv", "json", "jsonl", "delta", "iceberg", "table")

SourceType = Annotated[str, ClosedSet(SOURCE_TYPES, what="source type")]
SourceFormat = Annotated[str, ClosedSet(SOURCE_FORMATS, what="source format")]
LoadMode = Annotated[str, ClosedSet(LOAD_MODES, what="load_mode")]
WatermarkStrategy = Annotated[str, ClosedSet(WATERMARK_STRATEGIES, what="watermark_strategy")]
PostIngestionAction = Annotated[str, ClosedSet(("retain", "delete", "archive"), what="post_ingestion action")]
EmptyBehavior = Annotated[str, ClosedSet(("skip", "fail"), what="empty_behavior")]
Evolution = Annotated[
    str, ClosedSet(("strict", "append", "compatible", "merge", "allow", "overwrite"), what="evolution")
]
UnknownFields = Annotated[str, ClosedSet(("allow", "drop", "quarantine"), what="unknown_fields")]
ServerMode = Annotated[str, ClosedSet(("validate", "ingest"), what="server mode")]
LinkType = Annotated[str, ClosedSet(LINK_TYPES, what="link type")]


class PostIngestion(OLCModel):
    """§17: what happens to source files after a committed run."""

    action: PostIngestionAction = "retain"
    cleanup_is_blocking: Flag = False
    archive_path: str | None = None

    @model_validator(mode="after")
    def _archive_needs_path(self) -> PostIngestion:
        if self.action == "archive" and not self.archive_path:
            raise ValueError("action 'archive' needs archive_path")
        return self


class SourcePartition(OLCModel):
    """Date-folder listing window (§3.1 ``partition``)."""

    format: str
    lookback_days: int | None = None
    start_date: str | None = None
    end_date: str | None = None
    file_pattern: str | None = None


class DltEndpoint(OLCModel):
    name: str
    path: str
    params: dict[str, Any] | None = None
    paginator: str | None = None


class DltSource(OLCModel):
    source: str | None = None
    resource: str | None = None
    base_url: str | None = None
    endpoints: list[DltEndpoint] | None = None
    credentials: dict[str, str] | None = None  # free-form; values must be secret references (§1.3)
    write_disposition: str = "replace"
    max_table_nesting: int = 1

    @model_validator(mode="after")
    def _needs_source_or_url(self) -> DltSource:
        if not self.source and not self.base_url:
            raise ValueError("dlt needs 'source' or 'base_url'")
        return self


class Source(OLCModel):
    """§3: where rows come from and how much of it a run reads."""

    type: SourceType
    path: str | None = None
    query: str | None = None
    format: SourceFormat | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    pattern: str | None = None
    load_mode: LoadMode = "full"
    watermark_field: str | None = None
    watermark_strategy: WatermarkStrategy = "max_target"
    target_path: str | None = None
    lookback: str | None = None
    from_date: str | None = None
    to_date: str | None = None
    pipeline_log_table: str | None = None
    pipeline_name: str | None = None
    manifest_path: str | None = None
    watermark_date_parts: list[str] | dict[str, str] | None = None
    partition: SourcePartition | None = None
    partition_filters: dict[str, Any] = Field(default_factory=dict)
    cdc_op_field: str | None = None
    cdc_delete_values: list[str] = Field(default_factory=list)
    cdc_timestamp_field: str | None = None
    dlt: DltSource | None = None
    empty_behavior: EmptyBehavior | None = None  # None = skip for incremental/cdc, fail for full
    flatten_nested: Flag | list[str] = False
    post_ingestion: PostIngestion | None = None

    @property
    def effective_empty_behavior(self) -> str:
        """§3.3 default: ``skip`` for incremental/cdc, ``fail`` for full loads."""
        if self.empty_behavior is not None:
            return self.empty_behavior
        return "fail" if self.load_mode == "full" else "skip"


class Link(OLCModel):
    """§4: a reference data set loaded once per run, usable by name."""

    name: Identifier
    path: str | None = None
    table: str | None = None
    type: LinkType | None = None  # None: recognised path extension, else parquet
    columns: list[str] = Field(default_factory=list)
    filter: str | None = None
    query: str | None = None
    broadcast: Flag = False

    @model_validator(mode="after")
    def _check(self) -> Link:
        if self.name.lower() == "source":  # SQL table names ignore case
            raise ValueError("a link may not be named 'source' (that name is the contract's own frame)")
        if not self.path and not self.table:
            raise ValueError("a link needs 'path' or 'table'")
        return self


class SchemaPolicy(OLCModel):
    """§7.1: unknown source columns and schema evolution."""

    evolution: Evolution = "allow"
    unknown_fields: UnknownFields = "allow"


class Server(OLCModel):
    """§7.2: target fallbacks, recorded mode, schema policy override."""

    path: str
    type: str | None = None
    format: str = "parquet"
    mode: ServerMode = "validate"
    cast_to_string: Flag = False
    schema_policy: SchemaPolicy | None = None
    post_ingestion: PostIngestion | None = None


class Environment(OLCModel):
    """§7.3: per-environment target location/format."""

    path: str
    format: str | None = None


__all__ = [
    "LOAD_MODES",
    "SOURCE_FORMATS",
    "SOURCE_TYPES",
    "WATERMARK_STRATEGIES",
    "DltEndpoint",
    "DltSource",
    "Environment",
    "Link",
    "PostIngestion",
    "SchemaPolicy",
    "Server",
    "Source",
    "SourcePartition",
]
