"""The run report (SEMANTICS §22): one JSON-serialisable record per contract run.

Shared by the engines (which fill it), the CLI (which renders it), the run log (which stores it) and the
driver (which gates on it). Pure data: imports nothing but pydantic and ``types``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from lakelogic.types import RunStatus

# The §8 steps the report times, in execution order (SEMANTICS §22 `timings`).
TIMING_STEPS = (
    "read",
    "extraction",
    "external_logic",
    "pre_transform",
    "schema",
    "pre_quality",
    "post_transform",
    "post_quality",
    "dataset_rules",
    "mask_lineage",
    "write_target",
    "write_quarantine",
    "lifecycle",
    "slo",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Counts(_Model):
    source: int = 0
    good: int = 0
    quarantined: int = 0
    filtered: int = 0
    deduplicated: int = 0
    expanded: int = 0

    @model_validator(mode="before")
    @classmethod
    def _derived_ratio_is_not_input(cls, data: Any) -> Any:
        """A dumped report validates again: its ``quarantine_ratio`` is derived, not a field."""
        if isinstance(data, dict) and "quarantine_ratio" in data:
            data = {k: v for k, v in data.items() if k != "quarantine_ratio"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def quarantine_ratio(self) -> float:
        """Serialised with the counts wherever the report is (SEMANTICS §22)."""
        total = self.good + self.quarantined
        return self.quarantined / total if total else 0.0

    def reconciles(self) -> bool:
        """``source + expanded = good + quarantined + filtered`` (SEMANTICS §12)."""
        return self.source + self.expanded == self.good + self.quarantined + self.filtered


class RuleResult(_Model):
    name: str
    category: str
    severity: str
    phase: str
    origin: str
    sql: str
    failed: int = 0


class DatasetRuleResult(_Model):
    name: str
    generated_name: str
    category: str
    severity: str
    passed: bool | None
    observed: Any = None
    expected: Any = None
    sql: str = ""


class ErrorBlock(_Model):
    type: str
    message: str
    step: str | None = None
    traceback: str | None = None


class SchemaDrift(_Model):
    unknown_fields: list[str] = Field(default_factory=list)
    missing_fields: list[str] = Field(default_factory=list)
    type_changes: list[dict[str, str]] = Field(default_factory=list)
    policy: str = "allow"


class SourceInfo(_Model):
    type: str | None = None
    path: str | None = None
    files_count: int | None = None
    files: list[str] = Field(default_factory=list)
    max_source_mtime: datetime | None = None


class WindowInfo(_Model):
    label: str = "full"
    start: datetime | None = None
    end: datetime | None = None
    reason: str | None = None


class WatermarkInfo(_Model):
    field: str | None = None
    previous: Any = None
    current: Any = None


class MaterializationInfo(_Model):
    target: str | None = None
    format: str | None = None
    strategy: str | None = None
    committed: bool = False
    already_committed: bool = False
    snapshot: str | None = None
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    versions_closed: int = 0
    quarantine_target: str | None = None
    quarantine_rows_written: int = 0


class ApprovalInfo(_Model):
    """The approval gate of a materialized run (DRIVER §11)."""

    required: bool = False
    # why the gate fired: quarantine_ratio:<ratio>><threshold>, schema_drift:<columns>
    reasons: list[str] = Field(default_factory=list)
    decision: str = "not_triggered"  # not_triggered | approved | staged | rejected
    approved_by: str | None = None
    approval_file: str | None = None
    staged_at: str | None = None  # where the batch waits for approval
    staged_status: str | None = None  # the run's status once published (succeeded / partial)


class ServiceLevelResult(_Model):
    objective: str
    passed: bool | None
    observed: Any = None
    threshold: Any = None
    severity: str = "warning"


class NotificationResult(_Model):
    event: str
    channel: str
    delivered: bool
    error: str | None = None


def _now() -> datetime:
    return datetime.now(UTC)


class RunReport(_Model):
    run_id: str
    pipeline_run_id: str | None = None
    contract: str
    title: str | None = None
    table_name: str | None = None
    dataset: str | None = None
    contract_version: str | None = None
    layer: str | None = None
    domain: str | None = None
    system: str | None = None
    environment: str | None = None
    engine: str = "spark"
    lakelogic_version: str = ""
    status: RunStatus = RunStatus.SUCCEEDED
    error: ErrorBlock | None = None
    started_at: datetime = Field(default_factory=_now)
    finished_at: datetime | None = None
    duration_seconds: float | None = None
    # every TIMING_STEPS key (0.0 for a step that did not run), plus `evaluate` when a run writes no
    # output and its fused evaluation job is driven by a counting action (docs/decisions.md)
    timings: dict[str, float] = Field(default_factory=lambda: dict.fromkeys(TIMING_STEPS, 0.0))
    counts: Counts = Field(default_factory=Counts)
    rules: list[RuleResult] = Field(default_factory=list)
    dataset_rules: list[DatasetRuleResult] = Field(default_factory=list)
    schema_drift: SchemaDrift = Field(default_factory=SchemaDrift)
    source: SourceInfo = Field(default_factory=SourceInfo)
    window: WindowInfo = Field(default_factory=WindowInfo)
    watermark: WatermarkInfo = Field(default_factory=WatermarkInfo)
    materialization: MaterializationInfo | None = None
    approval: ApprovalInfo | None = None
    service_levels: list[ServiceLevelResult] = Field(default_factory=list)
    notifications: list[NotificationResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # the contract's free-form `compliance` block, carried as written (SEMANTICS §18)
    compliance: dict[str, Any] = Field(default_factory=dict)

    @property
    def quarantine_ratio(self) -> float:
        return self.counts.quarantine_ratio

    def add_seconds(self, step: str, seconds: float) -> None:
        """Add time to a step's timing (a step may be timed in several places, e.g. two writes)."""
        self.timings[step] = round(self.timings.get(step, 0.0) + seconds, 4)

    def failed_dataset_rules(self, severity: str = "error") -> list[DatasetRuleResult]:
        return [r for r in self.dataset_rules if r.passed is False and r.severity == severity]

    def finish(self, status: RunStatus | None = None) -> None:
        if status is not None:
            self.status = status
        self.finished_at = _now()
        self.duration_seconds = (self.finished_at - self.started_at).total_seconds()

    def model_dump(self, *, mode: Literal["json", "python"] | str = "json", **kwargs: Any) -> dict[str, Any]:
        """JSON-ready by default (SEMANTICS §22: "JSON-serialisable (`model_dump()`)"): timestamps as ISO
        text, enums as their values; ``mode="python"`` gives Python objects."""
        return super().model_dump(mode=mode, **kwargs)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def note_landed_commit(report: RunReport) -> None:
    """A run failing after its target commit: the next window starts after the committed rows (the run
    log counts a committed failure, so an append target does not get them twice); the rows it quarantined
    are written only if the run is resumed under its run id or pipeline run and window."""
    mat = report.materialization
    if mat is None or not (mat.committed or mat.already_committed):
        return
    note = "the target commit landed before the run failed: the next window starts after its rows"
    if report.counts.quarantined and not mat.quarantine_rows_written:
        note += (
            f"; its {report.counts.quarantined} quarantined row(s) were not written: resume the run (the "
            "same run id, or the same pipeline run and window) to write them"
        )
    if note not in report.warnings:
        report.warnings.append(note)
