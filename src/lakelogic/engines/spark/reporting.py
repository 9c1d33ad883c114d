"""Filling the run report from the plan and from the observations of a finished evaluation (§12, §22)."""

from __future__ import annotations

from typing import Any

from lakelogic.engines.spark.executor import Evaluation
from lakelogic.engines.spark.quarantine import MALFORMED_RULE
from lakelogic.report import Counts, RuleResult, RunReport


def fill_identity(report: RunReport, plan: Any, contract: Any) -> None:
    report.contract = plan.contract_name
    report.title = plan.title
    report.table_name = plan.table_name
    report.dataset = (
        getattr(contract, "dataset", None) if isinstance(getattr(contract, "dataset", None), str) else None
    )
    report.contract_version = plan.version
    compliance = getattr(contract, "compliance", None)
    report.compliance = dict(compliance) if isinstance(compliance, dict) else {}
    report.layer = plan.layer
    report.domain = plan.domain
    report.system = plan.system
    if report.environment is None:  # no --env / LAKELOGIC_ENV: metadata.environment (SEMANTICS §21)
        metadata = getattr(contract, "metadata", None)
        value = metadata.get("environment") if isinstance(metadata, dict) else None
        report.environment = str(value) if value else None


def fill_identity_from_contract(report: RunReport, contract: Any) -> None:
    """The identity of a run that failed before its plan existed, from the contract model itself."""
    info = getattr(contract, "info", None)
    report.title = report.title or getattr(info, "title", None)
    for key in ("table_name", "layer", "domain", "system"):
        value = getattr(contract, key, None)
        if getattr(report, key) is None and isinstance(value, str):
            setattr(report, key, value)
    dataset = getattr(contract, "dataset", None)
    report.dataset = report.dataset or (dataset if isinstance(dataset, str) else None)
    version = getattr(info, "version", None)
    report.contract_version = report.contract_version or (version if isinstance(version, str) else None)


def fill_counts(report: RunReport, ev: Evaluation, plan: Any) -> None:
    obs = ev.observations
    if ev.fanout is not None and ev.fanout.ran:  # one job wrote both outputs: one observation
        rows, bad = ev.fanout.counts["rows"], ev.fanout.counts["bad"]
        malformed = ev.fanout.counts.get("malformed", 0)  # never staged: the source counted them
        counts = Counts(source=obs.rows("source"), good=rows - bad, quarantined=bad + malformed)
    else:
        counts = Counts(source=obs.rows("source"), good=obs.rows("good"), quarantined=obs.rows("quarantined"))
    for point in ev.row_effects:
        before, after = obs.rows(point.before), obs.rows(point.after)
        removed, added = max(before - after, 0), max(after - before, 0)
        if point.empty_label is not None:
            removed = int(obs.value(point.empty_label, "empty") or 0)
            counts.filtered += removed
            counts.expanded += after - (before - removed)
        elif point.effect in ("filter", "dedup"):
            counts.filtered += removed
            if point.effect == "dedup":
                counts.deduplicated += removed
        elif point.effect == "expand":
            counts.expanded += added
        else:  # any: net change
            counts.filtered += removed
            counts.expanded += added
    report.counts = counts
    report.rules = rule_results(ev, plan)


def _malformed_rows(ev: Evaluation) -> int:
    """The unparseable records: counted by the source observation under the one-job split (its
    malformed branch runs only when there are some), else by the branch's own observation."""
    if ev.fanout is not None and ev.fanout.ran and "malformed" in ev.fanout.counts:
        return ev.fanout.counts["malformed"]
    assert ev.malformed_label is not None
    return ev.observations.rows(ev.malformed_label)


def rule_results(ev: Evaluation, plan: Any) -> list[RuleResult]:
    """One entry per rule name (schema checks included), failures summed over phases (e.g. ``<f>_type``)."""
    obs = ev.observations
    results: dict[str, RuleResult] = {}
    if ev.malformed_label is not None:
        results[MALFORMED_RULE] = RuleResult(
            name=MALFORMED_RULE,
            category="schema",
            severity="error",
            phase="pre",
            origin="schema",
            sql="record parses",
            failed=_malformed_rows(ev),
        )
    for label, checks in ev.checks.items():
        values = obs.collect_one(label)
        for i, check in enumerate(checks):
            failed = int(values.get(f"c{i}") or 0)
            if check.name in results:
                results[check.name].failed += failed
                continue
            results[check.name] = RuleResult(
                name=check.name,
                category=check.category.lower(),
                severity=str(check.severity),
                phase=str(check.phase),
                origin=check.origin,
                sql=check.sql,
                failed=failed,
            )
    for rule in getattr(plan, "row_rules", ()):
        if rule.name not in results:  # declared but never evaluated (e.g. no rows reached the phase)
            results[rule.name] = RuleResult(
                name=rule.name,
                category=rule.category,
                severity=str(rule.severity),
                phase=str(rule.phase),
                origin=rule.origin,
                sql=rule.message_detail,
                failed=0,
            )
    return list(results.values())
