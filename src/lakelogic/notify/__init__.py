"""§16 notifications: after a run, every channel subscribed to an event the run fired gets one message.

:func:`notify_run` is called once per finished run (API, CLI, driver); :func:`check_channels` lists what
makes a strict contract's channels unusable (a load error, SEMANTICS §16)."""

from __future__ import annotations

from lakelogic.contract.models import Contract
from lakelogic.errors import Problem
from lakelogic.notify.channels import Channel, check_channels, resolve_channels
from lakelogic.notify.deliver import Message, deliver
from lakelogic.notify.events import fired_events
from lakelogic.notify.render import render_message, run_context, template_problem
from lakelogic.report import NotificationResult, RunReport

__all__ = ["Channel", "check_channels", "contract_problems", "notify_run", "resolve_channels"]


def contract_problems(contract: Contract, *, file: str | None = None) -> list[Problem]:
    """Unusable channels of a strict contract and template syntax errors of any contract."""
    problems = check_channels(contract, file=file)
    quarantine = contract.quarantine
    where = file or (str(contract.source_file) if contract.source_file else "<contract>")
    if quarantine is not None and quarantine.notifications_enabled:
        channels, _ = resolve_channels(contract)
        seen: set[str] = set()
        for channel in channels:
            for key, text in (
                ("subject_template", channel.templates.subject),
                ("message_template", channel.templates.message),
                ("body_template", channel.templates.body),
            ):
                reason = template_problem(text) if text else None
                path = f"{channel.yaml_path}.{key}"
                if reason is not None and path not in seen:
                    seen.add(path)
                    problems.append(Problem(file=where, path=path, message=reason))
    return problems


def notify_run(contract: Contract, report: RunReport) -> list[NotificationResult]:
    """Deliver the run's events to the subscribed channels; results (and unusable channels of a
    non-strict contract, as warnings) go into ``report``. Never raises for a delivery problem."""
    channels, problems = resolve_channels(contract)
    for problem in problems:
        report.warnings.append(f"notification channel not used: {problem.path}: {problem.message}")
    events = fired_events(report)
    if not channels or not events:
        return []
    base = run_context(contract, report)
    facts = {
        k: base[k]
        for k in ("contract", "status", "run_id", "pipeline_run_id", "counts", "layer", "domain", "system")
    }
    results: list[NotificationResult] = []
    for event in events:
        for channel in channels:
            if event not in channel.events:
                continue
            context = {**base, "event": event, "template_context": channel.template_context}
            error: str | None
            try:
                subject, text, body = render_message(channel.templates, context)
            except Exception as exc:  # noqa: BLE001 - a template that fails to render is a failed delivery
                error = f"template: {type(exc).__name__}: {exc}"
            else:
                try:
                    destination = channel.resolved_destination()
                except Exception as exc:  # noqa: BLE001 - e.g. a secret that disappeared since load
                    error = f"destination: {type(exc).__name__}: {exc}"
                else:
                    error = deliver(channel.type, destination, Message(event, subject, text, body, facts))
            results.append(
                NotificationResult(event=event, channel=channel.label, delivered=error is None, error=error)
            )
    report.notifications.extend(results)
    return results
