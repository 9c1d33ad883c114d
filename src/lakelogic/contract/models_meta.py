"""Identity and run-policy blocks: ``info`` (§2), ``quarantine`` + notifications (§11, §16),
``service_levels`` (§15), ``external_logic`` (§19), ``extraction`` (§20), DAG references."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import ClosedSet, Flag, OLCModel
from lakelogic.contract.models_fields import ModelField

NOTIFICATION_EVENTS = (
    "failure",
    "success",
    "quarantine",
    "dataset_rule_failure",
    "schema_drift",
    "slo_breach",
)
NOTIFICATION_EVENT_ALIASES = {
    "run_failure": "failure",
    "pipeline_failure": "failure",
    "run_success": "success",
    "quarantined": "quarantine",
    "dataset_quality_check": "dataset_rule_failure",
    "schema_change": "schema_drift",
    "drift": "schema_drift",
    "sla_breach": "slo_breach",
}
NOTIFICATION_TYPES = ("apprise", "slack", "teams", "email", "smtp", "sendgrid", "webhook", "console")
SINK_FORMATS = ("parquet", "delta", "iceberg", "csv", "json")

NotificationEvent = Annotated[
    str, ClosedSet(NOTIFICATION_EVENTS, aliases=NOTIFICATION_EVENT_ALIASES, what="notification event")
]
NotificationType = Annotated[str, ClosedSet(NOTIFICATION_TYPES, what="notification type")]
SinkFormat = Annotated[str, ClosedSet(SINK_FORMATS, what="quarantine format")]
WriteMode = Annotated[str, ClosedSet(("append", "overwrite"), what="write_mode")]
ExternalLogicType = Annotated[str, ClosedSet(("python", "notebook"), what="external_logic type")]


class Info(OLCModel):
    """§2. ``dataset``/``upstream`` written here are moved to the root by :class:`Contract` (§1.5.4)."""

    title: str = Field(min_length=1)
    table_name: str | None = None
    version: str = "1.0.0"
    description: str | None = None
    owner: str | None = None
    contact: str | dict[str, str] | None = None
    target_layer: str | None = None
    status: str | None = None
    classification: str | None = None
    domain: str | None = None
    system: str | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _quoted_version(cls, value: Any) -> Any:
        # An unquoted 1.10 would silently become "1.1": refuse numbers, as for the root version.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise PydanticCustomError(
                "version_number",
                'info.version must be text; quote it, e.g. version: "{value}"',
                {"value": value, "allowed": 'text such as "1.0.0"'},
            )
        return value


class Notification(OLCModel):
    """§16: one channel."""

    type: NotificationType = "apprise"
    target: str | None = None
    targets: list[str] = Field(default_factory=list)
    to: str | None = None
    channel: str | None = None
    url: str | None = None
    on_events: list[NotificationEvent] = Field(default_factory=lambda: ["quarantine", "failure"])
    subject_template: str | None = None
    subject_template_file: str | None = None
    message_template: str | None = None
    message_template_file: str | None = None
    body_template: str | None = None
    body_template_file: str | None = None
    template_context: dict[str, Any] = Field(default_factory=dict)  # free-form

    @field_validator("targets", mode="before")
    @classmethod
    def _null_targets(cls, value: Any) -> Any:
        return [] if value is None else value  # the JSON Schema allows null

    @model_validator(mode="after")
    def _inline_or_file(self) -> Notification:
        for base in ("subject_template", "message_template", "body_template"):
            if getattr(self, base) is not None and getattr(self, f"{base}_file") is not None:
                raise ValueError(f"write '{base}' or '{base}_file', not both")
        return self

    @property
    def destinations(self) -> list[str]:
        """Every destination written (``target``, ``targets``, ``to``, ``channel``, ``url``) combined."""
        out = [d for d in (self.target, self.to, self.channel, self.url) if d]
        return out + [t for t in self.targets if t not in out]


class Quarantine(OLCModel):
    """§11."""

    enabled: Flag = True
    target: str | None = None
    table: str | None = None
    location: str | None = None
    format: SinkFormat | None = None
    write_mode: WriteMode = "append"
    include_error_reason: Flag = True
    fail_on_quarantine: Flag = False
    notifications_enabled: Flag = True
    strict_notifications: Flag = True
    notifications: list[Notification] = Field(default_factory=list)


class ServiceLevelObjective(OLCModel):
    description: str | None = None
    threshold: str | float | None = None
    field: str | None = None


class RowCountSLO(OLCModel):
    min_rows: int | None = None
    max_rows: int | None = None
    check_field: str = "counts_good"
    skip_reprocess_days: int = 3
    description: str | None = None


class ServiceLevels(OLCModel):
    """§15. Durations stay text here (``6h``, ``PT6H``; bare numbers are hours)."""

    freshness: str | float | ServiceLevelObjective | None = None
    availability: float | ServiceLevelObjective | None = None
    row_count: RowCountSLO | None = None


class ExternalLogic(OLCModel):
    """§19."""

    type: ExternalLogicType
    path: str
    engine: str
    entrypoint: str = "run"
    args: dict[str, Any] = Field(default_factory=dict)  # free-form
    handles_output: Flag = False
    output_path: str | None = None
    output_format: str | None = None
    kernel_name: str | None = None

    @field_validator("args")
    @classmethod
    def _reserved_args(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted({"links", "engine", "contract"} & set(value))
        if reserved:
            raise ValueError(f"args may not use the reserved name(s) {', '.join(reserved)}")
        return value

    @model_validator(mode="after")
    def _output_path(self) -> ExternalLogic:
        if (self.handles_output or self.type == "notebook") and not self.output_path:
            raise ValueError("output_path is required when handles_output is true or type is notebook")
        return self


class Preprocessing(OLCModel):
    content_type: str
    ocr: dict[str, Any] | None = None
    transcription: dict[str, Any] | None = None
    frame_extraction: dict[str, Any] | None = None
    chunking: dict[str, Any] | None = None
    file_column: str | None = None
    text_output_column: str = "_extracted_text"


class Retry(OLCModel):
    max_attempts: int = 3
    backoff: str = "exponential"
    initial_delay: float = 1.0


class Confidence(OLCModel):
    enabled: Flag = True
    method: str = "field_completeness"
    column: str = "_lakelogic_extraction_confidence"
    consistency_runs: int = 3


class Extraction(OLCModel):
    """§20."""

    provider: str
    model: str = "auto"
    temperature: float = 0.1
    max_tokens: int = 1000
    response_format: str = "json"
    prompt_template: str | None = None
    system_prompt: str | None = None
    text_column: str | None = None
    context_columns: list[str] | None = None
    preprocessing: Preprocessing | None = None
    output_schema: list[ModelField] | None = None
    patterns: dict[str, str] | None = None
    batch_size: int = 50
    concurrency: int = 5
    retry: Retry | None = None
    confidence: Confidence | None = None
    max_cost_per_run: float | None = None
    max_rows_per_run: int | None = None
    fallback_model: str | None = None
    fallback_provider: str | None = None
    redact_pii_before_llm: Flag = False
    pii_fields: list[str] | None = None

    @model_validator(mode="after")
    def _regex_needs_patterns(self) -> Extraction:
        if self.provider == "regex" and (not self.patterns or not self.text_column):
            raise ValueError("provider 'regex' needs 'text_column' and 'patterns'")
        return self


class UpstreamContractRef(OLCModel):
    contract: str
    layer: str | None = None
    domain: str | None = None
    system: str | None = None
    note: str | None = None


class DownstreamConsumer(OLCModel):
    type: str
    name: str
    platform: str | None = None
    url: str | None = None
    owner: str | None = None
    description: str | None = None
    refresh: str | None = None
    columns_used: list[str] | None = None
    sla: str | None = None
    managed: Flag | None = None
    consumers: list[DownstreamConsumer] | None = None


__all__ = [
    "NOTIFICATION_EVENTS",
    "Confidence",
    "DownstreamConsumer",
    "ExternalLogic",
    "Extraction",
    "Info",
    "Notification",
    "Preprocessing",
    "Quarantine",
    "Retry",
    "RowCountSLO",
    "ServiceLevelObjective",
    "ServiceLevels",
    "UpstreamContractRef",
]
