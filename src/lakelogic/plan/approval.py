"""Approval gates (DRIVER §11): when a materialized run must wait for a person before it publishes.

Pure policy, no engine: whether approval is required and when it triggers (from ``--approval-required``
and the effective ``metadata``), and what an approval file grants. The Spark runtime stages a triggered,
unapproved batch (:mod:`lakelogic.engines.spark.approval`); ``lakelogic approve`` publishes it later.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakelogic.contract.yaml_io import not_utf8, parse_yaml_text
from lakelogic.errors import ApprovalError, ContractError

DEFAULT_RATIO_THRESHOLD = 0.05
FILE_KEYS = ("approved_by", "contracts", "pipeline_run_id", "expires_at")


def _ratio(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ApprovalError(
            f"{where} must be a non-negative number (got {value!r})",
            hint="a fraction such as 0.05, or a percentage above 1 such as 5",
        )
    return float(value) / 100.0 if value > 1 else float(value)


def _flag(value: Any, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApprovalError(f"{where} must be true or false (got {value!r})")
    return value


@dataclass(frozen=True)
class ApprovalPolicy:
    """When a contract's publish needs approval."""

    required: bool = False
    ratio_threshold: float = DEFAULT_RATIO_THRESHOLD
    on_schema_drift: bool = True

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None, *, required: bool = False) -> ApprovalPolicy:
        """``required``: ``--approval-required``; else the effective ``metadata.approval_required``."""
        meta = metadata or {}
        threshold = meta.get("approval_quarantine_ratio_threshold")
        return cls(
            required=required or _flag(meta.get("approval_required"), "metadata.approval_required", False),
            ratio_threshold=(
                DEFAULT_RATIO_THRESHOLD
                if threshold is None
                else _ratio(threshold, "metadata.approval_quarantine_ratio_threshold")
            ),
            on_schema_drift=_flag(meta.get("approval_schema_drift"), "metadata.approval_schema_drift", True),
        )

    def reasons(self, quarantine_ratio: float, drifted_columns: Iterable[str]) -> list[str]:
        """Why this batch needs approval (empty: it does not). Nothing triggers unless required."""
        if not self.required:
            return []
        found: list[str] = []
        if quarantine_ratio > self.ratio_threshold:
            found.append(f"quarantine_ratio:{quarantine_ratio:.4g}>{self.ratio_threshold:.4g}")
        drifted = sorted(set(drifted_columns))
        if self.on_schema_drift and drifted:
            found.append("schema_drift:" + ",".join(drifted))
        return found


@dataclass(frozen=True)
class ApprovalFile:
    """An approval file: empty (approves every contract of the run) or a YAML mapping
    ``{approved_by, contracts: [names] | "*", pipeline_run_id?, expires_at?}``."""

    path: str
    approved_by: str
    contracts: frozenset[str] | None = None  # None: every contract
    pipeline_run_id: str | None = None
    expires_at: datetime | None = None

    def covers(self, names: Iterable[str], *, pipeline_run_id: str | None, now: datetime) -> bool:
        """True when this file approves a contract known by any of ``names`` (node id, contract name,
        file stem) in pipeline run ``pipeline_run_id`` at ``now``."""
        if self.expires_at is not None and now >= self.expires_at:
            return False
        if self.pipeline_run_id is not None and self.pipeline_run_id != pipeline_run_id:
            return False
        return self.contracts is None or any(n in self.contracts for n in names)


def _owner(path: Path) -> str:
    """Who approved with an empty file: the file's owner, else the current user."""
    try:
        import pwd

        return pwd.getpwuid(path.stat().st_uid).pw_name
    except (ImportError, KeyError, OSError):
        return os.environ.get("USER") or getpass.getuser()


def _expiry(value: Any, where: str) -> datetime:
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    except ValueError as exc:
        raise ApprovalError(
            f"{where}: expires_at is not an ISO-8601 timestamp (got {value!r})",
            hint="e.g. expires_at: 2026-12-31T18:00:00Z",
        ) from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def load_approval_file(path: str | Path) -> ApprovalFile | None:
    """Parse an approval file. None when it does not exist (yet): DRIVER §11 approves only with a file
    that exists, so a scheduled run given the path of an approval nobody wrote stages its batches."""
    file = Path(path)
    if not file.exists():
        return None
    if not file.is_file():
        raise ApprovalError(f"approval file {file} is not a file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ApprovalError(f"approval file {file}: {not_utf8(exc)}") from None
    if not text.strip():
        return ApprovalFile(path=str(file), approved_by=_owner(file))
    try:
        data, _positions = parse_yaml_text(text, file=str(file))
    except ContractError as exc:
        raise ApprovalError(f"approval file {file} is not valid YAML: {exc}") from exc
    if data is None:
        return ApprovalFile(path=str(file), approved_by=_owner(file))
    if not isinstance(data, Mapping):
        raise ApprovalError(
            f"approval file {file}: expected a mapping of {', '.join(FILE_KEYS)} (got {type(data).__name__})"
        )
    unknown = sorted(set(map(str, data)) - set(FILE_KEYS))
    if unknown:
        raise ApprovalError(
            f"approval file {file}: unknown key(s) {', '.join(unknown)}",
            hint="allowed: " + ", ".join(FILE_KEYS),
        )
    approved_by = data.get("approved_by")
    if approved_by is not None and (not isinstance(approved_by, str) or not approved_by.strip()):
        raise ApprovalError(f"approval file {file}: approved_by must be a non-empty name")
    contracts = data.get("contracts", "*")
    chosen: frozenset[str] | None
    if contracts == "*" or (isinstance(contracts, list) and "*" in contracts):
        chosen = None
    elif isinstance(contracts, list) and contracts and all(isinstance(c, str) and c for c in contracts):
        chosen = frozenset(contracts)
    else:
        raise ApprovalError(
            f'approval file {file}: contracts must be "*" or a non-empty list of contract names '
            f"(got {contracts!r})"
        )
    run = data.get("pipeline_run_id")
    if run is not None and not isinstance(run, str):
        raise ApprovalError(f"approval file {file}: pipeline_run_id must be text (got {run!r})")
    expires = data.get("expires_at")
    return ApprovalFile(
        path=str(file),
        approved_by=(approved_by or _owner(file)).strip(),
        contracts=chosen,
        pipeline_run_id=run,
        expires_at=_expiry(expires, str(file)) if expires is not None else None,
    )


@dataclass(frozen=True)
class ApprovalGate:
    """What a run is told about approval: the policy, and the grant that applies to it (if any)."""

    policy: ApprovalPolicy
    approved_by: str | None = None
    approval_file: str | None = None
    names: tuple[str, ...] = ()  # the names an approval may use for this contract (node id, ...)

    @property
    def approved(self) -> bool:
        return self.approved_by is not None


def gate_for(
    metadata: Mapping[str, Any] | None,
    *,
    required: bool,
    approval: ApprovalFile | None,
    names: Iterable[str],
    pipeline_run_id: str | None,
    now: datetime | None = None,
) -> ApprovalGate:
    """The gate of one contract run: its policy and, when ``approval`` covers it, the grant."""
    policy = ApprovalPolicy.of(metadata, required=required)
    known = tuple(dict.fromkeys(n for n in names if n))
    when = now or datetime.now(UTC)
    if approval is not None and approval.covers(known, pipeline_run_id=pipeline_run_id, now=when):
        return ApprovalGate(policy, approval.approved_by, approval.path, known)
    return ApprovalGate(policy, names=known)
