"""Approval policy and approval files (DRIVER §11), without an engine."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakelogic.errors import ApprovalError
from lakelogic.plan.approval import ApprovalPolicy, gate_for, load_approval_file

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_policy_defaults_and_metadata() -> None:
    assert ApprovalPolicy.of({}) == ApprovalPolicy(required=False, ratio_threshold=0.05, on_schema_drift=True)
    policy = ApprovalPolicy.of(
        {
            "approval_required": True,
            "approval_quarantine_ratio_threshold": 10,  # > 1: a percentage
            "approval_schema_drift": False,
        }
    )
    assert policy == ApprovalPolicy(required=True, ratio_threshold=0.10, on_schema_drift=False)
    assert ApprovalPolicy.of({}, required=True).required  # --approval-required


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"approval_required": "yes"}, "metadata.approval_required must be true or false"),
        ({"approval_quarantine_ratio_threshold": -1}, "must be a non-negative number"),
        ({"approval_schema_drift": 1}, "metadata.approval_schema_drift must be true or false"),
    ],
)
def test_policy_rejects_bad_metadata(metadata: dict[str, object], message: str) -> None:
    with pytest.raises(ApprovalError, match=message):
        ApprovalPolicy.of(metadata)


def test_reasons_fire_only_when_required_and_strictly_above_the_threshold() -> None:
    policy = ApprovalPolicy(required=True, ratio_threshold=0.05)
    assert policy.reasons(0.05, []) == []  # at the threshold: no approval needed
    assert policy.reasons(0.06, []) == ["quarantine_ratio:0.06>0.05"]
    assert policy.reasons(0.0, ["b", "a", "b"]) == ["schema_drift:a,b"]
    assert ApprovalPolicy(required=True, on_schema_drift=False).reasons(0.0, ["a"]) == []
    assert ApprovalPolicy(required=False).reasons(0.9, ["a"]) == []


def test_missing_file_approves_nothing(tmp_path: Path) -> None:
    assert load_approval_file(tmp_path / "not-yet.yaml") is None


def test_empty_file_approves_every_contract_of_any_run(tmp_path: Path) -> None:
    path = tmp_path / "ok"
    path.write_text("")
    approval = load_approval_file(path)
    assert approval is not None
    assert approval.contracts is None and approval.approved_by
    assert approval.covers(["anything"], pipeline_run_id="p1", now=NOW)


def test_yaml_file_scopes_contracts_run_and_expiry(tmp_path: Path) -> None:
    path = tmp_path / "approval.yaml"
    path.write_text(
        "approved_by: alice\ncontracts: [silver.orders, customers]\npipeline_run_id: p1\n"
        "expires_at: 2026-11-23T00:00:00Z\n"
    )
    approval = load_approval_file(path)
    assert approval is not None and approval.approved_by == "alice"
    assert approval.covers(["silver.orders"], pipeline_run_id="p1", now=NOW)
    assert approval.covers(["x", "customers"], pipeline_run_id="p1", now=NOW)
    assert not approval.covers(["silver.payments"], pipeline_run_id="p1", now=NOW)
    assert not approval.covers(["silver.orders"], pipeline_run_id="p2", now=NOW)
    assert not approval.covers(
        ["silver.orders"], pipeline_run_id="p1", now=datetime(2026, 11, 24, tzinfo=UTC)
    )


def test_star_approves_all(tmp_path: Path) -> None:
    path = tmp_path / "approval.yaml"
    path.write_text('approved_by: bob\ncontracts: "*"\n')
    approval = load_approval_file(path)
    assert approval is not None and approval.covers(["z"], pipeline_run_id=None, now=NOW)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("approved_by: a\ncontract: [x]\n", r"unknown key\(s\) contract"),
        ("contracts: x\n", 'contracts must be "\\*" or a non-empty list'),
        ("contracts: []\n", "non-empty list"),
        ("expires_at: tomorrow\n", "expires_at is not an ISO-8601 timestamp"),
        ("- a\n- b\n", "expected a mapping"),
        ("approved_by: [a\n", "not valid YAML"),
        ("approved_by: ''\n", "approved_by must be a non-empty name"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "approval.yaml"
    path.write_text(text)
    with pytest.raises(ApprovalError, match=message) as caught:
        load_approval_file(path)
    assert str(path) in str(caught.value)


def test_gate_for_applies_the_file_to_the_contract_names(tmp_path: Path) -> None:
    path = tmp_path / "approval.yaml"
    path.write_text("approved_by: carol\ncontracts: [orders]\n")
    approval = load_approval_file(path)
    covered = gate_for(
        {"approval_required": True}, required=False, approval=approval, names=["silver.orders", "orders"],
        pipeline_run_id="p", now=NOW,
    )  # fmt: skip
    assert covered.approved and covered.approved_by == "carol" and covered.approval_file == str(path)
    assert covered.names == ("silver.orders", "orders")
    other = gate_for({}, required=True, approval=approval, names=["payments"], pipeline_run_id="p", now=NOW)
    assert other.policy.required and not other.approved
