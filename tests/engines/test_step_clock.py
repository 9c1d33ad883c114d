"""The report's step clock keeps exclusive time per step (SEMANTICS §22 `timings`)."""

from __future__ import annotations

import time

from lakelogic.engines.step_clock import StepClock
from lakelogic.report import TIMING_STEPS


def test_nested_steps_pause_the_outer_one_and_the_current_step_is_restored() -> None:
    clock = StepClock()
    assert set(clock.timings) == set(TIMING_STEPS)
    with clock.stage("read"):
        time.sleep(0.02)
        with clock.stage("schema"):
            assert clock.step == "schema"
            time.sleep(0.05)
        assert clock.step == "read"
        time.sleep(0.02)
    assert 0.05 <= clock.timings["schema"] < 0.2
    # read holds its own 0.04 s, not the nested 0.05 s
    assert 0.035 <= clock.timings["read"] < 0.085
    assert clock.step == "read"


def test_a_step_timed_twice_accumulates() -> None:
    clock = StepClock()
    for _ in range(2):
        with clock.stage("write_target"):
            time.sleep(0.01)
    assert clock.timings["write_target"] >= 0.02


def test_a_failing_inner_step_is_the_reported_step() -> None:
    """§22 error.step names the step that failed, not the one around it."""
    import pytest

    from lakelogic.engines.step_clock import StepClock

    clock = StepClock()
    with pytest.raises(ValueError), clock.stage("read"), clock.stage("external_logic"):
        raise ValueError("boom")
    assert clock.step == "external_logic"
    with clock.stage("read"), clock.stage("schema"):
        pass
    assert clock.step == "read"
