"""Secrets stay out of reports, channels merge per event, hierarchy channels, and nothing a channel does
can break a run."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.contract.hierarchy import resolve_effective
from lakelogic.contract.loader import load_contract
from lakelogic.contract.secrets import register_secret_resolver
from lakelogic.errors import ContractError
from lakelogic.notify import contract_problems, notify_run, resolve_channels
from lakelogic.report import Counts, RuleResult, RunReport
from tests.notify.servers import http_receiver


def _doc(notifications: list[dict[str, Any]], **quarantine: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Orders", "contact": "Data Team <Data@Example.com>, data@example.com"},
        "model": {"fields": [{"name": "id", "type": "integer"}]},
        "quarantine": {"notifications": notifications, **quarantine},
    }


def _report() -> RunReport:
    report = RunReport(run_id="r-1", contract="orders")
    report.counts = Counts(source=3, good=2, quarantined=1)
    report.rules = [
        RuleResult(
            name="loud", category="validity", severity="error", phase="pre", origin="x", sql="", failed=1
        ),
        RuleResult(
            name="quiet", category="validity", severity="info", phase="pre", origin="x", sql="", failed=3
        ),
    ]
    return report


def test_delivery_errors_and_labels_never_show_the_secret_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_UNDER_TEST", "http://127.0.0.1:9/services/T000/B000/SECRET2")
    contract = load_contract(
        _doc([{"type": "webhook", "target": "env:HOOK_UNDER_TEST", "on_events": ["success"]}])
    )
    [result] = notify_run(contract, _report())
    assert result.delivered is False and result.error
    assert "SECRET2" not in result.error and "/services/" not in result.error
    assert result.channel == "webhook:env:HOOK_UNDER_TEST"
    channels, _ = resolve_channels(load_contract(_doc([{"target": "pover://userkey@APPTOKENSECRET"}])))
    [label] = [c.label for c in channels]
    assert label.startswith("apprise:pover://***#") and "APPTOKENSECRET" not in label.upper()
    monkeypatch.setenv("HOOK_NO_SCHEME", "hooks.example.com/services/SECRETVALUE")
    with pytest.raises(ContractError) as info:
        DataProcessor(_doc([{"target": "env:HOOK_NO_SCHEME"}]))
    assert "SECRETVALUE" not in str(info.value)


def test_entries_for_one_destination_merge_per_event_and_each_template_is_checked() -> None:
    with http_receiver() as (url, received):
        contract = load_contract(
            _doc(
                [
                    {
                        "type": "webhook",
                        "url": url,
                        "on_events": ["success"],
                        "subject_template": "A {{ event }}",
                    },
                    {
                        "type": "webhook",
                        "url": url,
                        "on_events": ["quarantine"],
                        "subject_template": "B {{ event }}",
                    },
                ]
            )
        )
        results = notify_run(contract, _report())
    assert [r.event for r in results] == ["success", "quarantine"]
    assert [body["subject"] for _, _, body in received.posts] == ["A success", "B quarantine"]
    broken = _doc(
        [{"type": "console"}, {"type": "console", "on_events": ["success"], "subject_template": "{{ x"}]
    )
    with pytest.raises(ContractError) as info:
        DataProcessor(broken)
    assert info.value.problems[0].path == "quarantine.notifications[1].subject_template"


def test_owner_contacts_with_display_names_are_one_addressee() -> None:
    channels, problems = resolve_channels(load_contract(_doc([{"type": "email"}])))
    assert problems == [] and [c.destination for c in channels] == ["Data@Example.com"]


def test_a_failing_vault_resolver_or_template_file_never_breaks_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    calls: list[int] = []

    def flaky(rest: str) -> str:
        calls.append(1)
        if len(calls) > 2:  # fine while the contract loads, gone when the run ends
            raise RuntimeError("vault unreachable")
        return "https://hooks.example.com/x"

    from lakelogic.contract import secrets

    monkeypatch.setattr(secrets, "_RESOLVERS", dict(secrets._RESOLVERS))
    register_secret_resolver("keyvault", flaky)
    hook = [{"type": "webhook", "target": "keyvault://team/hook", "on_events": ["success"]}]
    contract = DataProcessor(_doc(hook)).contract
    report = _report()
    results = notify_run(contract, report)  # must not raise: the failure is reported on the run
    reported = [r.error or "" for r in results if not r.delivered] + report.warnings
    assert any("RuntimeError" in text for text in reported), reported
    assert not any(r.delivered for r in results)
    bad = tmp_path / "latin1.j2"
    bad.write_bytes(b"caf\xe9 {{ contract }}")
    doc = _doc([{"type": "console", "message_template_file": str(bad)}])
    problems = contract_problems(load_contract(doc))
    assert problems and problems[0].path.endswith("message_template_file")
    lenient = load_contract(
        _doc(
            [{"type": "console", "on_events": ["success"], "message_template_file": "/nope.j2"}],
            strict_notifications=False,
        )
    )
    report = _report()
    assert [r.delivered for r in notify_run(lenient, report)] == [True]
    assert any("template not used (the default is)" in w for w in report.warnings), report.warnings


def test_info_rules_are_not_listed_and_null_targets_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    contract = load_contract(_doc([{"type": "console", "targets": None, "on_events": ["quarantine"]}]))
    notify_run(contract, _report())
    err = capsys.readouterr().err
    assert "loud" in err and "quiet" not in err


def test_unexpected_run_errors_still_notify_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakelogic.engines.spark import runner

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    class Conf:  # what the run's settings pin reads (engines.spark.pinned); no Spark is needed here
        def get(self, key: str, default: str | None = None) -> str | None:
            return {"spark.sql.session.timeZone": "UTC"}.get(key, default)

    class Session:
        conf = Conf()

    monkeypatch.setattr(runner, "_run", broken)
    with http_receiver() as (url, received):
        processor = DataProcessor(
            _doc([{"type": "webhook", "url": url, "on_events": ["failure"]}]), spark=Session()
        )  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="disk on fire"):
            processor.run()
    [(_, _, body)] = received.posts
    assert body["event"] == "failure" and "disk on fire" in body["message"]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text), encoding="utf-8")
    return path


def _project(tmp_path: Path, domain_extra: str) -> Path:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    _write(tmp_path / "retail" / "_domain.yaml", "domain: retail\n" + dedent(domain_extra))
    _write(tmp_path / "retail" / "crm" / "_system.yaml", "system: crm\ndomain: retail\n")
    return tmp_path / "retail" / "crm" / "silver" / "orders.yaml"


CONTRACT = """\
version: 1.0.0
info: {title: Orders}
model:
  fields:
    - {name: id, type: integer}
"""


def test_hierarchy_channels_anchor_templates_and_merge_with_the_contracts(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        """\
        notifications:
          - type: webhook
            url: "https://hooks.example.com/a"
            on_events: [failure]
            message_template_file: templates/msg.j2
        """,
    )
    _write(tmp_path / "retail" / "templates" / "msg.j2", "domain says {{ event }}")
    _write(
        path,
        CONTRACT
        + "quarantine:\n  notifications:\n"
        + '    - {type: webhook, url: "https://hooks.example.com/a", on_events: [quarantine]}\n',
    )
    contract = resolve_effective(path).contract
    assert contract_problems(contract) == []
    [channel] = resolve_channels(contract)[0]
    assert channel.events == {"failure", "quarantine"}  # the contract adds its events to the domain's


def test_a_domain_master_switch_silences_every_contract(tmp_path: Path) -> None:
    path = _project(tmp_path, "notifications_enabled: false\nnotifications:\n  - {type: console}\n")
    _write(path, CONTRACT + "quarantine:\n  notifications:\n    - {type: console, on_events: [success]}\n")
    contract = resolve_effective(path).contract
    assert contract.quarantine.notifications_enabled is False
    assert resolve_channels(contract) == ([], [])
    _write(path, CONTRACT + "quarantine:\n  notifications_enabled: true\n")
    with pytest.raises(ContractError):
        resolve_effective(path)


def test_ownership_contacts_become_failure_and_slo_breach_channels(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        """\
        ownership:
          contacts:
            - {name: On call, email: oncall@example.com, slack: "#retail", webhook: "https://hooks.example.com/r"}
        """,
    )
    _write(path, CONTRACT)
    channels, problems = resolve_channels(resolve_effective(path).contract)
    assert problems == []
    assert sorted((c.type, c.destination, tuple(sorted(c.events))) for c in channels) == [
        ("email", "oncall@example.com", ("failure", "slo_breach")),
        ("webhook", "https://hooks.example.com/r", ("failure", "slo_breach")),
    ]  # a Slack channel name needs a bot token the hierarchy cannot know: it stays documentation


def test_slo_alerting_filters_by_severity_suppresses_repeats_and_announces_recovery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import UTC, datetime, timedelta

    from lakelogic import notify
    from lakelogic.report import ServiceLevelResult

    contract = load_contract(_doc([{"type": "console", "on_events": ["slo_breach"]}]))
    contract._hierarchy_slo = {"alerting": {"min_severity": "high", "suppress_duplicate_alerts_minutes": 30}}
    history: list[dict[str, Any]] = []
    monkeypatch.setattr(notify, "earlier_reports", lambda c, r: history)

    def run(*levels: ServiceLevelResult) -> list[tuple[str, bool, str | None]]:
        report = _report()
        report.service_levels = list(levels)
        return [(r.event, r.delivered, r.error) for r in notify_run(contract, report)]

    warning = ServiceLevelResult(objective="completeness", passed=False, severity="warning")
    critical = ServiceLevelResult(objective="volume_anomaly", passed=False, severity="critical")
    fine = ServiceLevelResult(objective="completeness", passed=True)
    assert run(warning) == []  # below min_severity: no alert
    assert run(critical) == [("slo_breach", True, None)]
    now = datetime.now(UTC)
    history[:] = [
        {
            "_started_at": now - timedelta(minutes=5),
            "service_levels": [{"passed": False, "severity": "critical"}],
            "notifications": [{"event": "slo_breach", "channel": "console", "delivered": True}],
        }
    ]
    [(event, delivered, error)] = run(critical)
    assert (event, delivered) == ("slo_breach", False) and "suppressed" in (error or "")
    assert run(fine) == [("slo_recovery", True, None)]  # the breach is over: say so once
    history[0]["_started_at"] = now - timedelta(hours=2)
    assert run(critical) == [("slo_breach", True, None)]  # outside the suppression window


def test_contact_addresses_with_names_and_a_domain_channel_for_the_same_address(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        """\
        ownership:
          contacts:
            - {name: On call, email: "On Call <oncall@example.com>"}
        notifications:
          - {type: email, to: oncall@example.com, on_events: [failure], subject_template: "CUSTOM {{event}}"}
        """,
    )
    _write(path, CONTRACT)
    channels, problems = resolve_channels(DataProcessor(path).contract)
    assert problems == []
    [channel] = channels
    assert channel.destination == "oncall@example.com"
    assert channel.subscriptions["failure"].templates.subject == "CUSTOM {{event}}"  # the file's own texts
    assert "slo_breach" in channel.subscriptions  # and the contact's event


def test_an_unreadable_run_log_still_delivers_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Alert history is a nicety; a run log that cannot be read must not cost a failed run its alert."""
    from lakelogic import notify
    from lakelogic.report import ServiceLevelResult
    from lakelogic.types import RunStatus

    contract = load_contract(_doc([{"type": "console", "on_events": ["failure", "slo_breach"]}]))
    contract._hierarchy_slo = {"alerting": {}}

    def unreadable(c: Any, r: Any) -> list[dict[str, Any]]:
        raise OSError("database is locked")

    monkeypatch.setattr(notify, "earlier_reports", unreadable)
    report = _report()
    report.status = RunStatus.FAILED
    report.service_levels = [ServiceLevelResult(objective="row_count", passed=False, severity="critical")]
    sent = sorted((r.event, r.delivered) for r in notify_run(contract, report))
    assert sent == [("failure", True), ("slo_breach", True)]
    assert any("could not be read for alert history" in w for w in report.warnings)


def test_a_domain_that_enables_notifications_locks_them_on(tmp_path: Path) -> None:
    """DRIVER §2.4: `notifications_enabled` is locked either way, so a contract cannot mute the domain."""
    path = _project(tmp_path, "notifications_enabled: true\nnotifications:\n  - {type: console}\n")
    _write(path, CONTRACT)
    assert resolve_effective(path).contract.quarantine.notifications_enabled is True
    _write(path, CONTRACT + "quarantine:\n  notifications_enabled: false\n")
    with pytest.raises(ContractError) as info:
        resolve_effective(path)
    assert "quarantine.notifications_enabled" in str(info.value) and "locked" in str(info.value)


def test_one_destination_written_as_env_reference_and_literal_is_one_channel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOK_TWICE", "https://hooks.example.com/same")
    contract = load_contract(
        _doc(
            [
                {"type": "webhook", "url": "env:HOOK_TWICE", "on_events": ["success"]},
                {"type": "webhook", "url": "https://hooks.example.com/same", "on_events": ["failure"]},
                {"type": "webhook", "url": "https://hooks.example.com/other", "on_events": ["failure"]},
            ]
        )
    )
    channels, problems = resolve_channels(contract)
    assert problems == []
    assert sorted(sorted(c.events) for c in channels) == [["failure"], ["failure", "success"]]
