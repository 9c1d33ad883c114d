"""Which pipeline runs an invocation makes: backfill windows, resume, orchestrator run ids (no Spark)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from lakelogic.driver.state import DriverState, SavedNode
from lakelogic.driver.window_plan import plan_windows, resume_plan, resumes_by_itself
from lakelogic.driver.windows import Window
from lakelogic.errors import RegistryError

AS_OF = datetime(2026, 3, 1, tzinfo=UTC)
RANGE = (date(2026, 1, 1), date(2026, 1, 3), "day")


def test_a_plain_invocation_is_one_run_under_the_requested_id() -> None:
    plan = plan_windows(None, "dag-1", "fresh")
    assert plan.windows == [(0, None)] and plan.backfill_id is None
    assert plan.run_id(0) == "dag-1" and plan.state_args(0) == {"requested_run_id": "dag-1"}
    assert plan_windows(None, None, "fresh").run_id(0) is None  # the caller draws one


def test_a_backfill_names_each_window_after_the_requested_id() -> None:
    plan = plan_windows(RANGE, "dag-1", "fresh")
    assert [w.label for _, w in plan.windows if w] == [f"backfill_2026010{d}" for d in (1, 2, 3)]
    assert plan.backfill_id == "dag-1" and plan.total == 3
    assert [plan.run_id(i) for i, _ in plan.windows] == ["dag-1-w1", "dag-1-w2", "dag-1-w3"]
    assert plan.state_args(1)["backfill"] == {
        "start": "2026-01-01",
        "end": "2026-01-03",
        "granularity": "day",
        "index": 1,
    }
    unnamed = plan_windows(RANGE, None, "fresh")
    assert unnamed.backfill_id == "fresh" and unnamed.run_id(0) is None


def _state(tmp_path: Path, index: int, *, done: bool, requested: str | None = "dag-1") -> DriverState:
    plan = plan_windows(RANGE, requested, "fresh")
    state = DriverState(tmp_path / "s.json", f"{requested}-w{index + 1}", AS_OF, plan.backfill_id)
    state.args = plan.state_args(index)
    window = Window(f"backfill_2026010{index + 1}", None, None, run_mode="backfill")
    state.nodes["silver.x"] = SavedNode("succeeded" if done else "failed", "r1", window)
    return state


def test_resume_continues_with_the_stopped_window_then_the_later_ones(tmp_path: Path) -> None:
    plan = resume_plan(_state(tmp_path, 1, done=False))
    assert [(i, w.label if w else None) for i, w in plan.windows] == [
        (1, "backfill_20260102"),
        (2, "backfill_20260103"),
    ]
    assert plan.backfill_id == "dag-1" and plan.run_id(2) == "dag-1-w3"


def test_a_retry_resumes_only_its_own_invocation_with_work_left(tmp_path: Path) -> None:
    selected = {"silver.x"}
    plan = plan_windows(RANGE, "dag-1", "fresh")
    assert resumes_by_itself(_state(tmp_path, 1, done=False), plan, selected)  # a failed node
    assert resumes_by_itself(_state(tmp_path, 1, done=True), plan, selected)  # a window left
    assert not resumes_by_itself(_state(tmp_path, 2, done=True), plan, selected)  # all done
    other = plan_windows(RANGE, "dag-2", "fresh")
    assert not resumes_by_itself(_state(tmp_path, 1, done=False), other, selected)  # another id
    assert not resumes_by_itself(None, plan, selected)


def test_the_same_id_asking_for_another_range_is_refused_while_work_is_left(tmp_path: Path) -> None:
    selected = {"silver.x"}
    longer = plan_windows((date(2026, 1, 1), date(2026, 1, 9), "day"), "dag-1", "fresh")
    with pytest.raises(RegistryError, match=r"backfill 2026-01-01\.\.2026-01-03 by day, not backfill"):
        resumes_by_itself(_state(tmp_path, 1, done=False), longer, selected)
    with pytest.raises(RegistryError, match="not no backfill"):
        resumes_by_itself(_state(tmp_path, 1, done=False), plan_windows(None, "dag-1", "x"), selected)
    # that invocation finished: the id may be used for anything again
    assert not resumes_by_itself(_state(tmp_path, 2, done=True), longer, selected)


def test_a_one_window_backfill_runs_under_the_requested_id_itself() -> None:
    plan = plan_windows((date(2026, 1, 1), date(2026, 1, 1), "day"), "dag-1", "fresh")
    assert plan.total == 1 and plan.run_id(0) == "dag-1"
