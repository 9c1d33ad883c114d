"""Gates and skips (DRIVER §6, §7): what a finished contract means for its downstream.

Pure functions over outcomes and run-log rows, so every rule is testable without running anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from lakelogic.report import RunReport

DEFAULT_MAX_QUARANTINE_RATIO = 0.5


@dataclass
class Outcome:
    """What happened to one node in this pipeline run."""

    node_id: str
    status: str  # RunStatus value
    report: RunReport | None = None
    gated: bool = False
    gate_reason: str | None = None
    skip_reason: str | None = None
    skip_detail: str | None = None
    upstream_cause: str | None = None
    root_cause: str | None = None
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def duration_seconds(self) -> float:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return 0.0


@dataclass(frozen=True)
class Block:
    """Why a downstream must not run: the §6/§7 reason, the direct upstream and the root of the chain."""

    reason: str
    upstream_cause: str
    root_cause: str
    detail: str | None = None

    def describe(self) -> str:
        text = f"{self.reason}, root_cause {self.root_cause}"
        return text + (f" ({self.detail})" if self.detail else "")


def normalise_ratio(value: float) -> float:
    """Fractions stay; values above 1 are percentages (DRIVER §6)."""
    return value / 100.0 if value > 1 else value


def quarantine_threshold(cli: float | None, entry: float | None, metadata: Any) -> float:
    """First set wins: ``--max-quarantine-ratio`` → entry → ``metadata.max_quarantine_ratio`` → 0.5."""
    for value in (cli, entry, metadata):
        if value is not None:
            return normalise_ratio(float(value))
    return DEFAULT_MAX_QUARANTINE_RATIO


def evaluate_gates(report: RunReport, threshold: float) -> str | None:
    """The gate reason a finished report breaches, or None. Warning/info dataset rules never gate."""
    failed = report.failed_dataset_rules("error")
    if failed:
        return f"dataset_rule:{failed[0].name}"
    ratio = report.quarantine_ratio
    if ratio > threshold:
        return f"quarantine_ratio:{ratio:.4g}>{threshold:.4g}"
    return None


def block_from_outcome(upstream: Outcome) -> Block | None:
    """§6: the block an upstream that ran (or was skipped) in this pipeline run puts on its downstream."""
    if upstream.status == "failed":
        return Block("upstream_failed", upstream.node_id, upstream.node_id, upstream.error)
    if upstream.skip_reason == "already_succeeded":  # resumed: its earlier outcome (and gate) stands
        return (
            Block("upstream_gated", upstream.node_id, upstream.node_id, upstream.gate_reason)
            if upstream.gated
            else None
        )
    if upstream.status == "skipped":
        return Block(
            "upstream_skipped",
            upstream.node_id,
            upstream.root_cause or upstream.node_id,
            upstream.skip_detail or upstream.skip_reason,
        )
    if upstream.status == "awaiting_approval":
        return Block("upstream_awaiting_approval", upstream.node_id, upstream.node_id)
    if upstream.status == "rejected":
        return Block("upstream_rejected", upstream.node_id, upstream.node_id)
    if upstream.gated:
        return Block("upstream_gated", upstream.node_id, upstream.node_id, upstream.gate_reason)
    return None


class LatestRunLookup(Protocol):
    def exists(self) -> bool: ...

    def latest_run(self, contract: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class FreshnessPolicy:
    """The downstream's §7 relaxations."""

    strict: bool = True  # metadata.upstream_policy != warn
    grace_hours: float | None = None
    critical: bool = True


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def check_unscheduled(
    upstream_id: str,
    upstream_contract: str,
    *,
    store: LatestRunLookup | None,
    window_start: datetime | None,
    policy: FreshnessPolicy,
) -> tuple[Block | None, str | None]:
    """§7 for an upstream not scheduled in this pipeline run: (block, warning)."""
    row = store.latest_run(upstream_contract) if store is not None and store.exists() else None
    reason: str | None = None
    detail: str | None = None
    if row is None:
        reason = "missing_upstream"
    elif row.get("status") == "failed":
        return Block("upstream_failed", upstream_id, upstream_id, "latest run failed"), None
    elif row.get("status") == "awaiting_approval":
        return Block("upstream_awaiting_approval", upstream_id, upstream_id), None
    elif row.get("status") == "rejected":
        return Block("upstream_rejected", upstream_id, upstream_id), None
    elif row.get("gated"):
        return Block("upstream_gated", upstream_id, upstream_id, row.get("gate_reason")), None
    elif window_start is not None and row.get("finished_at") is not None:
        finished = _aware(row["finished_at"])
        if finished < window_start:
            lag = window_start - finished
            if policy.grace_hours is not None and lag <= timedelta(hours=policy.grace_hours):
                return None, f"stale_within_grace:{upstream_id}"
            reason, detail = "stale_upstream", f"finished {finished.isoformat()}"
    if reason is None:
        return None, None
    if not policy.critical or not policy.strict:
        return None, f"{reason}:{upstream_id}"
    return Block(reason, upstream_id, upstream_id, detail), None
