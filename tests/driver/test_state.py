"""State file and resume (DRIVER §14) with a fake runner."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakelogic.driver.dag import build_dag
from lakelogic.driver.runner import DriverOptions, PipelineRun
from lakelogic.driver.state import DriverState, load_state
from lakelogic.driver.windows import WindowSpec
from lakelogic.errors import RegistryError
from tests.driver.helpers import FakeRunner, dataset_rule_fails, node, ok, raises

AS_OF = datetime(2026, 3, 1, tzinfo=UTC)


def nodes() -> list:
    return [node("a", "bronze"), node("b", "bronze"), node("c", "silver", upstream=("b",)),
            node("g", "silver", upstream=("a",))]  # fmt: skip


def test_state_is_written_and_resume_reruns_only_unfinished(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    dag = build_dag(nodes())
    state = DriverState(path, "p1", AS_OF, args={"window": "yesterday"})
    opts = DriverOptions(window=WindowSpec("yesterday"))
    first = FakeRunner({"b": raises(RuntimeError("boom")), "a": dataset_rule_fails("r")})
    PipelineRun(dag, first, options=opts, pipeline_run_id="p1", as_of=AS_OF, state=state).execute()
    saved = json.loads(path.read_text())
    assert saved["pipeline_run_id"] == "p1"
    assert {k: v["status"] for k, v in saved["nodes"].items()} == {
        "bronze.a": "partial", "bronze.b": "failed", "silver.c": "skipped", "silver.g": "skipped"
    }  # fmt: skip
    assert saved["nodes"]["bronze.a"]["gated"] is True

    resumed = load_state(path)
    second = FakeRunner()
    later = PipelineRun(
        dag,
        second,
        options=DriverOptions(window=WindowSpec("none")),
        pipeline_run_id=resumed.pipeline_run_id,
        as_of=resumed.as_of,
        state=resumed,
        resume=resumed,
    )
    result = later.execute()
    assert sorted(second.ran()) == ["bronze.b", "silver.c"]
    assert result.outcomes["bronze.a"].skip_reason == "already_succeeded"
    assert result.outcomes["silver.g"].skip_reason == "upstream_gated"  # the saved gate still blocks
    # saved windows are reused, not the new --window none
    assert all(call.window.label == "yesterday" for call in second.calls)
    final = json.loads(path.read_text())
    assert final["nodes"]["bronze.b"]["status"] == "succeeded"
    assert final["nodes"]["bronze.a"]["status"] == "partial"


def test_missing_state_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="no state file"):
        load_state(tmp_path / "nope.json")


def test_node_in_flight_at_a_crash_resumes_with_its_run_id(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    dag = build_dag([node("a", "bronze")])
    state = DriverState(path, "p1", AS_OF)
    crashed = FakeRunner({"a": raises(KeyboardInterrupt())})
    cancelled: list[str] = []
    with pytest.raises(KeyboardInterrupt):  # the driver dies mid-run
        PipelineRun(
            dag, crashed, pipeline_run_id="p1", as_of=AS_OF, state=state, cancel=cancelled.append
        ).execute()
    saved = json.loads(path.read_text())["nodes"]["bronze.a"]
    assert saved["status"] == "running" and saved["run_id"]
    resumed = load_state(path)
    again = FakeRunner()
    PipelineRun(dag, again, pipeline_run_id="p1", as_of=AS_OF, state=resumed, resume=resumed).execute()
    assert again.calls[0].run_id == saved["run_id"]


def test_interrupt_cancels_nodes_still_running(tmp_path: Path) -> None:
    import time

    dag = build_dag([node("a", "bronze"), node("b", "bronze")])

    def slow(request):
        time.sleep(0.5)
        return ok(request)

    cancelled: list[str] = []
    fake = FakeRunner({"a": raises(KeyboardInterrupt()), "b": slow})
    with pytest.raises(KeyboardInterrupt):
        PipelineRun(dag, fake, options=DriverOptions(max_workers=2), cancel=cancelled.append).execute()
    assert cancelled == ["bronze.b"]
