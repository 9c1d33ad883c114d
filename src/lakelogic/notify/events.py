"""Which §16 events a finished run fires: each at most once, in a fixed order."""

from __future__ import annotations

from lakelogic.report import RunReport
from lakelogic.types import RunStatus

EVENT_ORDER = ("failure", "success", "quarantine", "dataset_rule_failure", "schema_drift", "slo_breach")


def fired_events(report: RunReport) -> list[str]:
    """The events of ``report``: ``failure`` on a failed run; ``success`` on succeeded/partial;
    ``quarantine`` when rows were quarantined; ``dataset_rule_failure`` when a dataset rule failed (any
    severity); ``schema_drift`` when the source differed from the model; ``slo_breach`` when an objective
    was measured and missed. A run with no new data or awaiting approval fires none of the first two."""
    fired: set[str] = set()
    if report.status == RunStatus.FAILED:
        fired.add("failure")
    elif report.status in (RunStatus.SUCCEEDED, RunStatus.PARTIAL):
        fired.add("success")
    if report.counts.quarantined > 0:
        fired.add("quarantine")
    if any(rule.passed is False for rule in report.dataset_rules):
        fired.add("dataset_rule_failure")
    drift = report.schema_drift
    if drift.unknown_fields or drift.missing_fields or drift.type_changes:
        fired.add("schema_drift")
    # an `info` miss (hierarchy row_count warn_only) is reported, never alerted
    if any(slo.passed is False and slo.severity != "info" for slo in report.service_levels):
        fired.add("slo_breach")
    return [event for event in EVENT_ORDER if event in fired]
