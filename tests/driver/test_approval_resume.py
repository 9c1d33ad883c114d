"""Approval gates in the driver (DRIVER §11, §13, §14) with a fake runner: exit code 3, skipped downstream,
and a resume that publishes the staged batch without running the contract again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakelogic.driver.dag import build_dag
from lakelogic.driver.runner import PipelineRun, RunRequest
from lakelogic.driver.state import DriverState, load_state
from lakelogic.report import ApprovalInfo, Counts, RunReport
from lakelogic.types import RunStatus
from tests.driver.helpers import FakeRunner, node, report_for

AS_OF = datetime(2026, 3, 1, tzinfo=UTC)


def awaiting(request: RunRequest) -> RunReport:
    return report_for(
        request,
        status=RunStatus.AWAITING_APPROVAL,
        counts=Counts(source=10, good=5, quarantined=5),
        approval=ApprovalInfo(required=True, reasons=["quarantine_ratio:0.5>0.05"], decision="staged"),
    )


class StagingRunner(FakeRunner):
    """Stages ``a``; on resume publishes it when ``approved`` (as the Spark runner does with a file)."""

    def __init__(self, approved: bool) -> None:
        super().__init__({"a": awaiting})
        self.approved = approved
        self.resumed: list[str] = []

    def resume_staged(self, node: Any, run_id: str) -> RunReport:
        self.resumed.append(run_id)
        request = RunRequest(node, run_id, "p1", _window(), AS_OF)
        if not self.approved:
            return awaiting(request)
        report = report_for(request, counts=Counts(source=10, good=5, quarantined=5))
        report.approval = ApprovalInfo(required=True, decision="approved", approved_by="alice")
        return report


def _window() -> Any:
    from lakelogic.driver.windows import Window

    return Window("full", None, None, "no_window")


def test_awaiting_approval_skips_downstream_then_resume_publishes(tmp_path: Path) -> None:
    dag = build_dag([node("a", "silver"), node("b", "gold", upstream=("a",)), node("c", "silver")])
    state = DriverState(tmp_path / "state.json", "p1", AS_OF)
    first = StagingRunner(approved=False)
    result = PipelineRun(dag, first, pipeline_run_id="p1", as_of=AS_OF, state=state).execute()
    assert result.exit_code == 3 and result.status == "awaiting_approval"
    assert result.outcomes["silver.a"].status == "awaiting_approval"
    assert result.outcomes["gold.b"].skip_reason == "upstream_awaiting_approval"
    assert result.outcomes["silver.c"].status == "succeeded"
    staged_run = result.outcomes["silver.a"].report.run_id  # type: ignore[union-attr]

    still = StagingRunner(approved=False)
    resumed = load_state(tmp_path / "state.json")
    again = PipelineRun(
        dag, still, pipeline_run_id="p1", as_of=AS_OF, state=resumed, resume=resumed
    ).execute()
    assert still.resumed == [staged_run] and "silver.a" not in still.ran()  # never recomputed
    assert again.exit_code == 3 and again.outcomes["gold.b"].skip_reason == "upstream_awaiting_approval"

    approved = StagingRunner(approved=True)
    resumed = load_state(tmp_path / "state.json")
    final = PipelineRun(
        dag, approved, pipeline_run_id="p1", as_of=AS_OF, state=resumed, resume=resumed
    ).execute()
    assert approved.resumed == [staged_run] and "silver.a" not in approved.ran()
    assert final.outcomes["silver.a"].status == "succeeded"
    assert final.outcomes["silver.a"].report.run_id == staged_run  # type: ignore[union-attr]
    assert approved.ran() == ["gold.b"]  # the downstream runs once its upstream is published
    assert final.exit_code == 0


def test_resume_after_an_outside_approval_reads_the_run_log(tmp_path: Path) -> None:
    dag = build_dag([node("a", "silver"), node("b", "gold", upstream=("a",))])
    state = DriverState(tmp_path / "state.json", "p1", AS_OF)
    PipelineRun(dag, StagingRunner(approved=False), pipeline_run_id="p1", as_of=AS_OF, state=state).execute()
    run_id = load_state(tmp_path / "state.json").nodes["silver.a"].run_id
    assert run_id is not None

    class Log:
        def get(self, wanted: str) -> dict[str, Any] | None:
            report = RunReport(run_id=wanted, contract="a", status=RunStatus.SUCCEEDED)
            report.approval = ApprovalInfo(required=True, decision="approved", approved_by="bob")
            return {"report_json": report.model_dump_json()} if wanted == run_id else None

        def exists(self) -> bool:
            return True

    class NothingStaged(FakeRunner):
        def resume_staged(self, node: Any, run_id: str) -> None:
            return None

    runner = NothingStaged()
    resumed = load_state(tmp_path / "state.json")
    run = PipelineRun(dag, runner, pipeline_run_id="p1", as_of=AS_OF, state=resumed, resume=resumed)
    run.store = Log()  # type: ignore[assignment]
    run._record = lambda *args, **kwargs: None  # type: ignore[method-assign]  # the fake log stores nothing
    result = run.execute()
    assert result.outcomes["silver.a"].status == "succeeded" and runner.ran() == ["gold.b"]


def test_spark_runner_gate_follows_flag_metadata_and_file(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from lakelogic.driver.spark_runner import SparkContractRunner
    from lakelogic.plan.approval import load_approval_file

    approval_path = tmp_path / "approval.yaml"
    approval_path.write_text("approved_by: dana\ncontracts: [silver.a]\n")
    approval = load_approval_file(approval_path)
    a = node("a", "silver")
    plain = SimpleNamespace(metadata={}, contract_name="a")
    wanting = SimpleNamespace(metadata={"approval_required": True}, contract_name="a")

    assert SparkContractRunner(None).approval_gate(a, "p1", plain) is None
    gate = SparkContractRunner(None).approval_gate(a, "p1", wanting)
    assert gate is not None and gate.policy.required and not gate.approved
    forced = SparkContractRunner(None, approval_required=True, approval_file=approval).approval_gate(
        a, "p1", plain
    )
    assert forced is not None and forced.approved_by == "dana" and "silver.a" in forced.names
    other = node("b", "silver")
    gate_b = SparkContractRunner(None, approval_required=True, approval_file=approval).approval_gate(
        other, "p1", SimpleNamespace(metadata={}, contract_name="b")
    )
    assert gate_b is not None and not gate_b.approved
