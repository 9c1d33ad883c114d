"""§16 notifications: after a run, every channel subscribed to an event the run fired gets one message.

:func:`notify_run` is called once per finished run (API, CLI, driver); :func:`contract_problems` lists what
makes a contract's channels unusable or its templates unparseable (a load error, SEMANTICS §16)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from lakelogic.contract.models import Contract
from lakelogic.errors import Problem
from lakelogic.notify.alerting import RECOVERY, Alerting, adjust_events, earlier_reports, recently_alerted
from lakelogic.notify.channels import Channel, Subscription, check_channels, entry_templates, resolve_channels
from lakelogic.notify.deliver import Message, deliver
from lakelogic.notify.events import fired_events
from lakelogic.notify.render import render_message, run_context, template_problem
from lakelogic.report import NotificationResult, RunReport

__all__ = ["Channel", "check_channels", "contract_problems", "notify_run", "resolve_channels"]


def contract_problems(contract: Contract, *, file: str | None = None) -> list[Problem]:
    """Unusable channels of a strict contract, and template syntax errors of every entry (strict or not)."""
    problems = check_channels(contract, file=file)
    quarantine = contract.quarantine
    where = file or (str(contract.source_file) if contract.source_file else "<contract>")
    if quarantine is None or not quarantine.notifications_enabled:
        return problems
    for i, note in enumerate(quarantine.notifications):
        templates = entry_templates(note, contract.contract_dir, f"quarantine.notifications[{i}]", [])
        for key, text in (
            ("subject_template", templates.subject),
            ("message_template", templates.message),
            ("body_template", templates.body),
        ):
            reason = template_problem(text) if text else None
            if reason is not None:
                problems.append(
                    Problem(file=where, path=f"quarantine.notifications[{i}].{key}", message=reason)
                )
    return problems


def notify_run(contract: Contract, report: RunReport) -> list[NotificationResult]:
    """Deliver the run's events to the subscribed channels; results (and unusable channels of a
    non-strict contract, as warnings) go into ``report``. Never raises: a notification problem must not
    change the outcome of a run whose data may already be committed."""
    try:
        return _notify(contract, report)
    except Exception as exc:  # noqa: BLE001 - reported on the run, never raised (SEMANTICS §16)
        report.warnings.append(f"notifications failed: {type(exc).__name__}")
        return []


def _notify(contract: Contract, report: RunReport) -> list[NotificationResult]:
    channels, problems = resolve_channels(contract)
    for problem in problems:
        if problem.path.endswith("_file"):
            report.warnings.append(
                f"notification template not used (the default is): {problem.path}: {problem.message}"
            )
        else:
            report.warnings.append(f"notification channel not used: {problem.path}: {problem.message}")
    events = fired_events(report)
    alerting = Alerting.of(contract)
    history: list[dict[str, Any]] = []
    if alerting is not None and channels and report.service_levels:
        try:
            history = earlier_reports(contract, report)
        except Exception as exc:  # noqa: BLE001 - an unreadable log must not cost the run its alerts
            # without history nothing is suppressed and no recovery is told: an alert too many, never
            # one too few (a `failure` must still reach its channels)
            report.warnings.append(
                f"notifications: the run log could not be read for alert history ({type(exc).__name__}: "
                f"{exc}); duplicate breaches are not suppressed this run"
            )
        events = adjust_events(alerting, report, events, history)
    if not channels or not events:
        return []
    base = run_context(contract, report)
    facts = {
        k: base[k]
        for k in ("contract", "status", "run_id", "pipeline_run_id", "counts", "layer", "domain", "system")
    }
    results: list[NotificationResult] = []
    now = datetime.now(UTC)
    for event in events:
        for channel in channels:
            # a recovery goes where the breach went
            subscription = channel.subscriptions.get("slo_breach" if event == RECOVERY else event)
            if subscription is None:
                continue
            if (
                alerting is not None
                and event == "slo_breach"
                and recently_alerted(alerting, history, channel.label, now)
            ):
                minutes = f"{alerting.suppress_minutes:g}"
                results.append(
                    NotificationResult(
                        event=event,
                        channel=channel.label,
                        delivered=False,
                        error=f"suppressed: this channel got slo_breach within {minutes} minutes",
                    )
                )
                continue
            error = _deliver_one(channel, subscription, event, base, facts)
            results.append(
                NotificationResult(event=event, channel=channel.label, delivered=error is None, error=error)
            )
    report.notifications.extend(results)
    return results


def _deliver_one(
    channel: Channel, subscription: Subscription, event: str, base: dict[str, Any], facts: dict[str, Any]
) -> str | None:
    context = {**base, "event": event, "template_context": subscription.template_context}
    try:
        subject, text, body = render_message(subscription.templates, context)
    except Exception as exc:  # noqa: BLE001 - a template that fails to render is a failed delivery
        return f"template: {type(exc).__name__}: {exc}"
    try:
        destination = channel.resolved_destination()
    except Exception as exc:  # noqa: BLE001 - e.g. a secret that disappeared since load
        return f"destination: {type(exc).__name__}"
    error = deliver(channel.type, destination, Message(event, subject, text, body, facts))
    return scrub(error, destination) if error is not None else None


def scrub(text: str, destination: str) -> str:
    """``text`` without any part of the resolved destination that may be secret (a webhook's path and
    query, user info, the whole value): error messages of HTTP libraries quote the URL they called."""
    parts = urlsplit(destination)
    secrets = [
        destination,
        parts.path if len(parts.path) > 1 else "",
        parts.query,
        parts.netloc.split("@")[0] if "@" in parts.netloc else "",  # user:password
    ]
    if parts.scheme.lower() not in ("http", "https"):
        secrets.append(parts.netloc)
    for secret in sorted((s for s in secrets if s and len(s) > 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
