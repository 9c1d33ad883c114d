"""The hierarchy's ``slo.alerting`` (DRIVER §2.2): how service-level breaches become alerts.

``emit_events`` (true): breaches raise ``slo_breach`` at all; ``min_severity`` (medium): only breaches at
least this severe (a ``warning`` result is medium, ``critical`` is critical; order low < medium < high <
critical); ``suppress_duplicate_alerts_minutes`` (30): a channel that got this contract's ``slo_breach``
within that many minutes is not sent another; ``notify_on_recovery`` (true): the first run without a
breach after a run with one sends ``slo_recovery`` to the channels subscribed to ``slo_breach``.

Only contracts whose hierarchy declares ``slo.alerting`` get this; elsewhere §16 applies as it is (each
event once per run). History comes from the run log the contract records to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lakelogic.report import RunReport

SEVERITY_RANK = {"low": 0, "info": 0, "medium": 1, "warning": 1, "high": 2, "error": 2, "critical": 3}
RECOVERY = "slo_recovery"


@dataclass(frozen=True)
class Alerting:
    emit_events: bool = True
    min_severity: str = "medium"
    suppress_minutes: float = 30.0
    notify_on_recovery: bool = True

    @classmethod
    def of(cls, contract: Any) -> Alerting | None:
        settings = (getattr(contract, "hierarchy_slo", None) or {}).get("alerting")
        if not isinstance(settings, dict):
            return None
        return cls(
            emit_events=settings.get("emit_events", True) is not False,
            min_severity=str(settings.get("min_severity", "medium")).lower(),
            suppress_minutes=float(settings.get("suppress_duplicate_alerts_minutes", 30) or 0),
            notify_on_recovery=settings.get("notify_on_recovery", True) is not False,
        )

    def breached(self, levels: list[dict[str, Any]] | list[Any]) -> bool:
        """True when a service level missed at least ``min_severity``."""
        floor = SEVERITY_RANK.get(self.min_severity, 1)
        for level in levels:
            passed = level.get("passed") if isinstance(level, dict) else level.passed
            severity = level.get("severity") if isinstance(level, dict) else level.severity
            if str(severity) == "info":
                continue  # a warn_only miss (hierarchy row_count) is reported, never alerted
            if passed is False and SEVERITY_RANK.get(str(severity or "warning"), 1) >= floor:
                return True
        return False


def earlier_reports(contract: Any, report: RunReport) -> list[dict[str, Any]]:
    """The contract's earlier run reports in its run log, newest first ([] without a run log)."""
    from lakelogic.runlog import store_for_contract

    store = store_for_contract(contract)
    if not store.exists():
        return []
    out = []
    for row in store.query(contract=report.contract, last=200):
        if row.get("run_id") == report.run_id:
            continue
        raw = row.get("report_json") or row.get("report")
        data = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(data, dict):
            data["_started_at"] = row.get("started_at")
            out.append(data)
    return out


def adjust_events(
    alerting: Alerting, report: RunReport, events: list[str], history: list[dict[str, Any]]
) -> list[str]:
    """The run's events after ``alerting``: ``slo_breach`` kept only for breaches it alerts on; an
    ``slo_recovery`` added when the last earlier run breached and this one does not."""
    breached = alerting.emit_events and alerting.breached(list(report.service_levels))
    out = [e for e in events if e != "slo_breach"] + (["slo_breach"] if breached else [])
    if alerting.emit_events and alerting.notify_on_recovery and not breached and report.service_levels:
        last = next((h for h in history if h.get("service_levels")), None)
        if last is not None and alerting.breached(last["service_levels"]):
            out.append(RECOVERY)
    return out


def recently_alerted(alerting: Alerting, history: list[dict[str, Any]], channel: str, now: datetime) -> bool:
    """True when ``channel`` got an ``slo_breach`` of this contract within the suppression window."""
    if alerting.suppress_minutes <= 0:
        return False
    since = now - timedelta(minutes=alerting.suppress_minutes)
    for earlier in history:
        started = earlier.get("_started_at")
        if isinstance(started, datetime) and started.tzinfo is None:
            started = started.replace(tzinfo=now.tzinfo)
        if not isinstance(started, datetime) or started < since:
            continue
        for note in earlier.get("notifications") or []:
            if note.get("event") == "slo_breach" and note.get("channel") == channel and note.get("delivered"):
                return True
    return False
