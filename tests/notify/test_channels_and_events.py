"""§16 without an engine: which events a report fires, what channels a contract resolves to, strictness,
templates and delivery to local receivers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.contract.loader import load_contract
from lakelogic.errors import ContractError
from lakelogic.notify import contract_problems, notify_run, resolve_channels
from lakelogic.notify.events import fired_events
from lakelogic.report import Counts, DatasetRuleResult, RuleResult, RunReport, SchemaDrift, ServiceLevelResult
from lakelogic.types import RunStatus
from tests.notify.servers import http_receiver, smtp_receiver


def _doc(notifications: list[dict[str, Any]], **quarantine: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Orders", "table_name": "orders", "contact": {"owner": "data@example.com"}},
        "model": {"fields": [{"name": "id", "type": "integer"}]},
        "quarantine": {"notifications": notifications, **quarantine},
    }


def _report(**changes: Any) -> RunReport:
    report = RunReport(run_id="r-1", contract="orders", title="Orders", layer="silver")
    report.counts = Counts(source=10, good=8, quarantined=2)
    report.rules = [
        RuleResult(
            name="amount_positive",
            category="validity",
            severity="error",
            phase="pre",
            origin="x",
            sql="",
            failed=2,
        ),
        RuleResult(
            name="never", category="validity", severity="error", phase="pre", origin="x", sql="", failed=0
        ),
    ]
    for key, value in changes.items():
        setattr(report, key, value)
    return report


def test_events_follow_the_report() -> None:
    assert fired_events(_report()) == ["success", "quarantine"]
    failed = _report(status=RunStatus.FAILED, counts=Counts(source=0))
    assert fired_events(failed) == ["failure"]
    everything = _report(
        status=RunStatus.PARTIAL,
        dataset_rules=[
            DatasetRuleResult(name="u", generated_name="u", category="c", severity="warning", passed=False)
        ],
        schema_drift=SchemaDrift(unknown_fields=["extra"]),
        service_levels=[ServiceLevelResult(objective="freshness", passed=False)],
    )
    assert fired_events(everything) == [
        "success",
        "quarantine",
        "dataset_rule_failure",
        "schema_drift",
        "slo_breach",
    ]
    unmeasured = _report(service_levels=[ServiceLevelResult(objective="freshness", passed=None)])
    assert "slo_breach" not in fired_events(unmeasured)
    assert fired_events(_report(status=RunStatus.NO_NEW_DATA, counts=Counts())) == []


def test_channels_combine_destinations_deduplicate_and_route_to_contacts() -> None:
    contract = load_contract(
        _doc(
            [
                {
                    "type": "webhook",
                    "target": "http://a.example/h",
                    "url": "http://b.example/h",
                    "on_events": ["failure"],
                },
                {"type": "webhook", "targets": ["http://a.example/h"], "on_events": ["quarantined"]},
                {"type": "email", "on_events": ["failure"]},  # no destination: the owner contact
                {"type": "console"},
            ]
        )
    )
    channels, problems = resolve_channels(contract)
    assert problems == []
    by_dest = {c.destination: c for c in channels}
    assert set(by_dest) == {"http://a.example/h", "http://b.example/h", "data@example.com", "console"}
    assert by_dest["http://a.example/h"].events == {"failure", "quarantine"}  # duplicates: union of events
    assert by_dest["console"].events == {"quarantine", "failure"}  # the default subscription
    label = by_dest["http://a.example/h"].label  # never the full URL; a digest tells two hooks apart
    assert label.startswith("webhook:http://a.example#") and label != by_dest["http://b.example/h"].label


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        ({"target": "nosuchservice://x/y"}, "no notification service understands 'nosuchservice'"),
        ({"target": "env:LAKELOGIC_TEST_UNSET_HOOK"}, "secret cannot be resolved"),
        ({"type": "webhook", "target": "slack://a/b/c"}, "webhook destination is an http(s) URL"),
        ({"type": "slack", "channel": "#crm"}, "SLACK_BOT_TOKEN or SLACK_WEBHOOK_URL"),
        ({"type": "teams"}, "no destination"),
    ],
)
def test_strict_contracts_refuse_unusable_channels_at_load(
    monkeypatch: pytest.MonkeyPatch, channel: dict[str, Any], expected: str
) -> None:
    monkeypatch.delenv("LAKELOGIC_TEST_UNSET_HOOK", raising=False)
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.delenv("SLACK_WEBHOOK_URL", raising=False)
    with pytest.raises(ContractError) as info:
        DataProcessor(_doc([channel]))
    assert info.value.problems[0].path == "quarantine.notifications[0]"
    assert expected in info.value.problems[0].message
    # not strict: the contract loads; the channel is skipped with a report warning
    lenient = load_contract(_doc([channel], strict_notifications=False))
    assert contract_problems(lenient) == []
    report = _report()
    assert notify_run(lenient, report) == []
    assert any("quarantine.notifications[0]" in w for w in report.warnings)


def test_a_template_that_does_not_parse_is_a_load_error_strict_or_not() -> None:
    doc = _doc(
        [{"type": "console", "subject_template": "{{ contract "}],
        strict_notifications=False,
    )
    with pytest.raises(ContractError) as info:
        DataProcessor(doc)
    assert info.value.problems[0].path == "quarantine.notifications[0].subject_template"


def test_webhook_gets_one_message_per_subscribed_event_with_rendered_templates(tmp_path: Path) -> None:
    (tmp_path / "message.j2").write_text(
        "{{ counts.quarantined }} rows of {{ table }} quarantined; {{ template_context.team }}"
    )
    # the contract's directory anchors template files: load it from a file in tmp_path
    from ruamel.yaml import YAML

    contract_file = tmp_path / "orders.yaml"
    with http_receiver() as (url, received):
        doc = _doc(
            [
                {
                    "type": "webhook",
                    "url": f"{url}/hook",
                    "on_events": ["quarantine", "failure", "success"],
                    "subject_template": "{{ contract }} {{ event }} {{ status }}",
                    "message_template_file": "message.j2",
                    "template_context": {"team": "team-a"},
                }
            ]
        )
        YAML().dump(doc, contract_file)
        contract = load_contract(contract_file)
        report = _report()
        results = notify_run(contract, report)
    assert [(r.event, r.delivered, r.error) for r in results] == [
        ("success", True, None),
        ("quarantine", True, None),
    ]
    assert report.notifications == results
    bodies = [body for _, _, body in received.posts]
    assert [b["subject"] for b in bodies] == ["orders success succeeded", "orders quarantine succeeded"]
    assert bodies[1]["message"] == "2 rows of orders quarantined; team-a"
    assert bodies[1]["run_id"] == "r-1" and bodies[1]["counts"]["quarantined"] == 2


def test_delivery_failures_are_reported_and_transient_answers_retried() -> None:
    with http_receiver(answers=[503, 200]) as (url, received):
        contract = load_contract(_doc([{"type": "webhook", "url": url, "on_events": ["success"]}]))
        results = notify_run(contract, _report())
    assert [r.delivered for r in results] == [True] and len(received.posts) == 2  # retried once
    with http_receiver(answers=[404]) as (url, received):
        contract = load_contract(_doc([{"type": "webhook", "url": url, "on_events": ["success"]}]))
        results = notify_run(contract, _report())
    assert results[0].delivered is False and "HTTP 404" in (results[0].error or "")
    # an unknown variable in a template fails that delivery, not the run
    contract = load_contract(
        _doc([{"type": "console", "message_template": "{{ no_such_variable }}", "on_events": ["success"]}])
    )
    results = notify_run(contract, _report())
    assert results[0].delivered is False and "no_such_variable" in (results[0].error or "")


def test_slack_teams_and_apprise_json_payloads() -> None:
    with http_receiver() as (url, received):
        contract = load_contract(
            _doc(
                [
                    {"type": "slack", "url": f"{url}/slack", "on_events": ["quarantine"]},
                    {"type": "teams", "url": f"{url}/teams", "on_events": ["quarantine"]},
                    # the default type: Apprise picks the service from the scheme (json:// posts JSON)
                    {"target": url.replace("http://", "json://") + "/apprise", "on_events": ["quarantine"]},
                ]
            )
        )
        results = notify_run(contract, _report())
    assert all(r.delivered for r in results), results
    paths = {path: body for path, _, body in received.posts}
    assert paths["/slack"]["text"].startswith("*[LakeLogic] orders: quarantine (succeeded)*")
    assert "amount_positive" in paths["/slack"]["text"]  # the default message lists failing rules
    assert paths["/teams"]["title"] == "[LakeLogic] orders: quarantine (succeeded)"
    assert paths["/apprise"]["title"] == "[LakeLogic] orders: quarantine (succeeded)"


def test_email_goes_over_smtp_to_the_owner_contact(monkeypatch: pytest.MonkeyPatch) -> None:
    with smtp_receiver() as (port, mails):
        monkeypatch.setenv("LAKELOGIC_SMTP_HOST", "127.0.0.1")
        monkeypatch.setenv("LAKELOGIC_SMTP_PORT", str(port))
        monkeypatch.setenv("LAKELOGIC_SMTP_FROM", "lakelogic@example.com")
        contract = load_contract(_doc([{"type": "email", "on_events": ["quarantine"]}]))
        results = notify_run(contract, _report())
    assert [r.delivered for r in results] == [True], results
    assert [r.lower() for r in mails[0]["rcpt"]] == ["rcpt to:<data@example.com>"]
    assert "Subject: [LakeLogic] orders: quarantine (succeeded)" in mails[0]["data"]


def test_notifications_enabled_false_silences_every_channel(capsys: pytest.CaptureFixture[str]) -> None:
    contract = load_contract(
        _doc([{"type": "console", "on_events": ["success"]}], notifications_enabled=False)
    )
    report = _report()
    assert notify_run(contract, report) == [] and report.notifications == []
    contract = load_contract(_doc([{"type": "console", "on_events": ["success"]}]))
    assert [r.delivered for r in notify_run(contract, _report())] == [True]
    assert "[LakeLogic] orders: success (succeeded)" in capsys.readouterr().err


@pytest.mark.spark
def test_runs_notify_after_the_report_is_final_failed_runs_included(spark: Any, tmp_path: Path) -> None:
    doc = _doc([])
    doc["model"]["fields"] = [
        {"name": "id", "type": "integer", "required": True},
        {"name": "amount", "type": "double"},
    ]
    doc["quality"] = {"row_rules": [{"name": "amount_positive", "sql": "amount > 0"}]}
    with http_receiver() as (url, received):
        doc["quarantine"]["notifications"] = [
            {"type": "webhook", "url": url, "on_events": ["quarantine", "failure"]}
        ]
        frame = spark.createDataFrame([(1, 5.0), (2, -1.0)], "id int, amount double")
        report = DataProcessor(doc, spark=spark).run(frame).report
        assert [(n.event, n.delivered) for n in report.notifications] == [("quarantine", True)]
        assert received.posts[-1][2]["counts"]["quarantined"] == 1
        missing = spark.createDataFrame([(5.0,)], "amount double")  # required column id is missing
        failed = DataProcessor(doc, spark=spark).run(missing).report
    assert str(failed.status) == "failed"
    assert [(n.event, n.delivered) for n in failed.notifications] == [("failure", True)]
    body = received.posts[-1][2]
    assert body["event"] == "failure" and "missing" in body["message"].lower()
