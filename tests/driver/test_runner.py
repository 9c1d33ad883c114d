"""Scheduling, gates, skip propagation, retries, concurrency and recording with a fake runner (no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.driver.dag import build_dag
from lakelogic.driver.runner import DriverOptions, PipelineRun
from lakelogic.driver.windows import WindowSpec
from lakelogic.errors import PlanError
from lakelogic.report import Counts
from lakelogic.runlog import DuckDBRunLogStore
from tests.driver.helpers import FakeRunner, dataset_rule_fails, node, ok, quarantines, raises

AS_OF = datetime(2026, 3, 1, tzinfo=UTC)


def mesh() -> list:
    """bronze a,b -> silver sa (from a), sb (from b) -> gold dim (sa), fact (sa, sb), other (sb)."""
    return [
        node("a", "bronze"),
        node("b", "bronze"),
        node("sa", "silver", upstream=("a",)),
        node("sb", "silver", upstream=("b",)),
        node("gold_dim_x", "gold", upstream=("sa",)),
        node("gold_fact_y", "gold", upstream=("sb",)),
        node("report_z", "gold", upstream=("sb",)),
    ]


def run(nodes, runner, store=None, **opts):
    dag = build_dag(nodes)
    pr = PipelineRun(
        dag, runner, options=DriverOptions(**opts), store=store, pipeline_run_id="p1", as_of=AS_OF
    )
    return pr.execute()


def test_all_succeed_in_layer_order() -> None:
    fake = FakeRunner()
    result = run(mesh(), fake)
    assert result.exit_code == 0
    order = fake.ran()
    assert {o.status for o in result.outcomes.values()} == {"succeeded"}
    assert max(order.index("bronze.a"), order.index("bronze.b")) < min(
        order.index("silver.sa"), order.index("silver.sb")
    )
    assert order.index("gold.gold_dim_x") < order.index("gold.gold_fact_y")  # dims before facts


def test_dataset_rule_error_gates_exactly_the_dependents(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    fake = FakeRunner({"sb": dataset_rule_fails("id_unique")})
    result = run(mesh(), fake, store=store)
    out = result.outcomes
    assert out["silver.sb"].status == "partial" and out["silver.sb"].gated
    assert out["silver.sb"].gate_reason == "dataset_rule:id_unique"
    for skipped in ("gold.gold_fact_y", "gold.report_z"):
        assert out[skipped].status == "skipped"
        assert out[skipped].skip_reason == "upstream_gated"
        assert out[skipped].root_cause == "silver.sb"
    assert out["gold.gold_dim_x"].status == "succeeded"
    assert "gold.gold_fact_y" not in fake.ran()
    assert result.exit_code == 0  # gates are not failures
    rows = {r["contract"]: r for r in store.query(pipeline_run_id="p1")}
    assert len(rows) == 7
    assert rows["report_z"]["skip_reason"] == "upstream_gated"
    assert rows["report_z"]["gate_reason"] == "dataset_rule:id_unique"
    assert rows["sb"]["gated"] is True and rows["sb"]["dataset_rules_failed"] == 1
    assert rows["report_z"]["contract_version"] == "1.0.0"  # a skipped row names what was skipped (§15.1)


def test_warning_dataset_rule_never_gates() -> None:
    result = run(mesh(), FakeRunner({"sb": dataset_rule_fails("soft", severity="warning")}))
    assert all(o.status == "succeeded" for o in result.outcomes.values())


def test_quarantine_ratio_threshold_chain() -> None:
    nodes = mesh()
    # 40% quarantined: below the 0.5 default -> continues
    assert run(nodes, FakeRunner({"sa": quarantines(6, 4)})).outcomes["gold.gold_dim_x"].status == "succeeded"
    # CLI threshold 0.3 -> gated with detail
    res = run(mesh(), FakeRunner({"sa": quarantines(6, 4)}), max_quarantine_ratio=30)  # percent form
    assert res.outcomes["silver.sa"].gate_reason == "quarantine_ratio:0.4>0.3"
    assert res.outcomes["gold.gold_dim_x"].skip_reason == "upstream_gated"
    # entry threshold beats metadata
    nodes2 = [
        node("a", "bronze", max_quarantine_ratio=0.1, metadata={"max_quarantine_ratio": 0.9}),
        node("s", "silver", upstream=("a",)),
    ]
    res2 = run(nodes2, FakeRunner({"a": quarantines(8, 2)}))
    assert res2.outcomes["silver.s"].skip_reason == "upstream_gated"


def test_failure_skips_transitively_with_root_cause() -> None:
    result = run(mesh(), FakeRunner({"b": raises(PlanError("bad sql"))}))
    out = result.outcomes
    assert out["bronze.b"].status == "failed"
    assert out["bronze.b"].report is not None and out["bronze.b"].report.error.type == "plan"
    assert out["silver.sb"].skip_reason == "upstream_failed"
    assert out["gold.gold_fact_y"].skip_reason == "upstream_skipped"
    assert out["gold.gold_fact_y"].upstream_cause == "silver.sb"
    assert out["gold.gold_fact_y"].root_cause == "bronze.b"
    assert out["silver.sa"].status == "succeeded" and out["gold.gold_dim_x"].status == "succeeded"
    assert result.exit_code == 1


def test_fail_fast_stops_new_work() -> None:
    nodes = [node("a", "bronze"), node("b", "silver"), node("c", "gold")]
    result = run(nodes, FakeRunner({"a": raises(RuntimeError("boom"))}), fail_fast=True)
    assert result.outcomes["silver.b"].skip_reason == "pipeline_aborted"
    assert result.outcomes["gold.c"].skip_reason == "pipeline_aborted"


def test_circuit_breaker() -> None:
    nodes = [node("a", "bronze"), node("b", "bronze"), node("c", "silver")]
    boom = raises(RuntimeError("boom"))
    result = run(nodes, FakeRunner({"a": boom, "b": boom}), max_consecutive_failures=2, max_workers=1)
    assert result.outcomes["silver.c"].skip_reason == "circuit_open"
    assert result.circuit_open and result.exit_code == 1


def test_a_batch_awaiting_approval_does_not_reset_the_failure_count() -> None:
    """§13: only a success resets the count; a staged batch is none, so two failures around it open the
    circuit and nothing new starts."""
    from lakelogic.types import RunStatus
    from tests.driver.helpers import report_for

    def staged(request):  # type: ignore[no-untyped-def]
        return report_for(request, status=RunStatus.AWAITING_APPROVAL)

    nodes = [node(name, "bronze") for name in ("a", "b", "c", "d")]
    boom = raises(RuntimeError("boom"))
    result = run(
        nodes, FakeRunner({"a": boom, "b": staged, "c": boom}), max_consecutive_failures=2, max_workers=1
    )
    assert [result.outcomes[f"bronze.{n}"].status for n in "abc"] == ["failed", "awaiting_approval", "failed"]
    assert result.outcomes["bronze.d"].skip_reason == "circuit_open"
    assert result.circuit_open and result.exit_code == 1


def test_transient_errors_are_retried_and_others_not() -> None:
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("reset by peer")
        return ok(request)

    result = run([node("a", "bronze")], FakeRunner({"a": flaky}), retries=3, retry_backoff=0.001)
    assert result.outcomes["bronze.a"].status == "succeeded"
    assert result.outcomes["bronze.a"].attempts == 3
    fake = FakeRunner({"a": raises(PlanError("never retried"))})
    result = run([node("a", "bronze")], fake, retries=3, retry_backoff=0.001)
    assert len(fake.calls) == 1 and result.outcomes["bronze.a"].status == "failed"


def test_independent_nodes_overlap_in_time() -> None:
    fake = FakeRunner(sleep=0.3)
    run([node("x", "silver"), node("y", "silver")], fake, max_workers=4)
    (x0, x1), (y0, y1) = fake.spans["silver.x"], fake.spans["silver.y"]
    assert x0 < y1 and y0 < x1  # the two runs overlapped


def test_dependent_nodes_in_a_layer_do_not_overlap() -> None:
    fake = FakeRunner(sleep=0.05)
    run([node("x", "silver"), node("y", "silver", upstream=("x",))], fake)
    assert fake.spans["silver.x"][1] <= fake.spans["silver.y"][0]


def test_disabled_and_unscheduled_upstreams_use_the_run_log(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    nodes = [node("a", "bronze"), node("s", "silver", upstream=("a",))]
    dag = build_dag(nodes)
    # a is not selected and never ran -> missing_upstream
    res = PipelineRun(dag, FakeRunner(), selected={"silver.s"}, store=store, as_of=AS_OF).execute()
    assert res.outcomes["silver.s"].skip_reason == "missing_upstream"
    # a succeeds in an earlier pipeline run -> s runs with a full window (no previous success of s)
    PipelineRun(dag, FakeRunner(), selected={"bronze.a"}, store=store).execute()
    soon = datetime.now(UTC) + timedelta(hours=1)  # after a's (real-clock) finish
    res = PipelineRun(dag, FakeRunner(), selected={"silver.s"}, store=store, as_of=soon).execute()
    assert res.outcomes["silver.s"].status == "succeeded"
    assert res.windows["silver.s"].label == "full"
    # next run of s is incremental from AS_OF; a's success finished before that start -> stale
    later = soon + timedelta(days=1)
    res = PipelineRun(dag, FakeRunner(), selected={"silver.s"}, store=store, as_of=later).execute()
    assert res.windows["silver.s"].label == "incremental"
    assert res.outcomes["silver.s"].skip_reason == "stale_upstream"


def test_non_critical_upstream_only_warns(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    nodes = [node("a", "bronze"), node("s", "silver", entry_upstream=(("a", False),))]
    res = PipelineRun(build_dag(nodes), FakeRunner(), selected={"silver.s"}, store=store).execute()
    assert res.outcomes["silver.s"].status == "succeeded"
    assert res.outcomes["silver.s"].warnings == ["missing_upstream:bronze.a"]


def test_windows_last_success_then_incremental(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    dag = build_dag([node("a", "bronze")])
    fake = FakeRunner()
    PipelineRun(dag, fake, store=store, as_of=AS_OF).execute()
    PipelineRun(dag, fake, store=store, as_of=AS_OF + timedelta(hours=1)).execute()
    assert fake.calls[0].window.label == "full" and fake.calls[0].window.reason == "no_previous_success"
    assert fake.calls[1].window.label == "incremental"
    assert fake.calls[1].window.start == AS_OF
    assert fake.calls[1].window.end == AS_OF + timedelta(hours=1)


def test_a_range_through_today_ends_at_as_of_so_the_next_window_starts_there(tmp_path: Path) -> None:
    """A range through today ended at tomorrow's midnight and the run log kept that end as the cursor:
    the next last_success window started in the future and files landing meanwhile were never read."""
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    dag = build_dag([node("a", "bronze")])
    fake = FakeRunner()
    as_of = AS_OF + timedelta(hours=10)
    through_today = WindowSpec("range", AS_OF.date(), AS_OF.date())
    PipelineRun(dag, fake, store=store, options=DriverOptions(window=through_today), as_of=as_of).execute()
    PipelineRun(dag, fake, store=store, as_of=as_of + timedelta(hours=1)).execute()
    assert (fake.calls[0].window.label, fake.calls[0].window.start, fake.calls[0].window.end) == (
        "range",
        AS_OF,
        as_of,
    )
    assert (fake.calls[1].window.start, fake.calls[1].window.end) == (as_of, as_of + timedelta(hours=1))


def test_a_full_load_for_want_of_history_carries_a_warning(tmp_path: Path) -> None:
    """§8: "no such run, or no run-log store | full load with a warning"."""
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    dag = build_dag([node("a", "bronze")])
    first = PipelineRun(dag, FakeRunner(), store=store, as_of=AS_OF).execute()
    report = first.outcomes["bronze.a"].report
    assert report is not None and "full load: no_previous_success in the run log" in report.warnings
    later = PipelineRun(dag, FakeRunner(), store=store, as_of=AS_OF + timedelta(hours=1)).execute()
    report = later.outcomes["bronze.a"].report
    assert report is not None and not any(w.startswith("full load") for w in report.warnings)


def test_dry_run_runs_nothing_and_writes_nothing(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    fake = FakeRunner()
    dag = build_dag(mesh())
    plan = PipelineRun(
        dag, fake, store=store, options=DriverOptions(window=WindowSpec("yesterday")), as_of=AS_OF
    ).plan()
    assert fake.calls == [] and not store.exists()
    assert [p[2] for p in plan][:2] == ["bronze.a", "bronze.b"]
    assert all(p[4] is None for p in plan)
    assert plan[0][3].start == AS_OF - timedelta(days=1)


@pytest.mark.parametrize("mode", ["range", "reprocess"])
def test_range_windows_need_dates(mode: str) -> None:
    from lakelogic.errors import RegistryError

    with pytest.raises(RegistryError):
        WindowSpec(mode)


def test_timeout_cancels_the_job_group_and_fails_the_node() -> None:
    cancelled: list[str] = []
    fake = FakeRunner({"slow": lambda request: (__import__("time").sleep(1.0), ok(request))[1]})
    dag = build_dag(
        [node("slow", "bronze"), node("fast", "bronze"), node("after", "silver", upstream=("slow",))]
    )
    result = PipelineRun(
        dag, fake, options=DriverOptions(timeout_minutes=0.003), cancel=cancelled.append, as_of=AS_OF
    ).execute()
    slow = result.outcomes["bronze.slow"]
    assert slow.status == "failed" and slow.report is not None and slow.report.error.type == "timeout"
    assert cancelled == ["bronze.slow"]
    assert result.outcomes["bronze.fast"].status == "succeeded"
    assert result.outcomes["silver.after"].skip_reason == "upstream_failed"


def test_the_final_failure_is_announced_once_after_the_retries() -> None:
    """§16 'each event once per run': retried attempts send nothing; the runner hears of the failure
    once, when no retry is left."""
    finals: list[str] = []
    fake = FakeRunner({"a": raises(ConnectionError("reset by peer"))})
    fake.on_final_failure = lambda node, report: finals.append(f"{node.id}:{report.status}")  # type: ignore[attr-defined]
    result = run([node("a", "bronze"), node("b", "bronze")], fake, retries=2, retry_backoff=0.001)
    assert result.outcomes["bronze.a"].attempts == 3
    assert finals == ["bronze.a:failed"]  # not bronze.b, which succeeded; once for a


def _committing(sleep_before: float, sleep_after: float, commits: list[str]) -> Any:
    """A run that reaches its commit after ``sleep_before`` s (calling ``before_commit`` as the engine
    does), commits, and returns after ``sleep_after`` s more."""
    import time

    from lakelogic.report import MaterializationInfo
    from tests.driver.helpers import report_for

    def run(request: Any) -> Any:
        time.sleep(sleep_before)
        report = report_for(request, counts=Counts(source=1, good=1))
        if request.before_commit is not None:
            request.before_commit(report)
        commits.append(request.run_id)
        time.sleep(sleep_after)
        report.materialization = MaterializationInfo(target="t", committed=True, rows_inserted=1)
        return report

    return run


def _run_timing_out(store: DuckDBRunLogStore, behaviour: Any, pipeline_run_id: str) -> tuple[FakeRunner, Any]:
    """One bronze node ``slow`` with ``behaviour`` under a timeout of ~0.2 s."""
    fake = FakeRunner({"slow": behaviour})
    result = PipelineRun(
        build_dag([node("slow", "bronze")]),
        fake,
        options=DriverOptions(timeout_minutes=0.003),
        store=store,
        pipeline_run_id=pipeline_run_id,
        as_of=AS_OF,
    ).execute()
    return fake, result


def test_a_timed_out_run_does_not_start_its_commit_and_is_logged_under_its_own_run_id(tmp_path: Path) -> None:
    """DRIVER §13: the work is cancelled; a commit not yet begun never begins (the fake's commit comes
    after the timeout), and the timeout row carries the run's own id (§15.1, one row per run)."""
    import time

    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    commits: list[str] = []
    fake, result = _run_timing_out(store, _committing(1.0, 0.0, commits), "p-timeout")
    time.sleep(1.5)  # the abandoned thread reaches its commit point and is refused there
    assert result.outcomes["bronze.slow"].report.error.type == "timeout"
    assert commits == []
    [row] = store.query(pipeline_run_id="p-timeout")
    assert row["run_id"] == fake.calls[0].run_id and row["status"] == "failed"


def test_a_commit_that_had_begun_when_the_timeout_fired_is_logged_as_committed(tmp_path: Path) -> None:
    """The commit is atomic: begun before the timeout, it lands; the run log then records it (under the
    run's id), or the node's next window would read its rows again."""
    import time

    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    commits: list[str] = []
    fake, result = _run_timing_out(store, _committing(0.0, 1.0, commits), "p-late")
    assert result.outcomes["bronze.slow"].status == "failed"
    # while the commit is in flight its `committing` row stays: were the process to die now, the next
    # run would settle it against the target (a timeout row would have hidden the commit)
    assert [r["status"] for r in store.query(pipeline_run_id="p-late")] == ["committing"]
    time.sleep(1.5)
    assert commits == [fake.calls[0].run_id]
    [row] = store.query(pipeline_run_id="p-late")
    assert row["run_id"] == commits[0] and row["status"] == "succeeded" and row["committed"] is True
    assert "after the driver had recorded the contract as timed out" in row["report_json"]


def test_a_commit_begun_before_the_timeout_that_fails_leaves_the_timeout_row(tmp_path: Path) -> None:
    import time

    def fails_after_the_intent(request: Any) -> Any:
        from tests.driver.helpers import report_for

        report = report_for(request, counts=Counts(source=1, good=1))
        assert request.before_commit is not None
        request.before_commit(report)
        time.sleep(1.0)
        raise ConnectionError("the commit failed")

    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    _fake, result = _run_timing_out(store, fails_after_the_intent, "p-fail")
    assert result.outcomes["bronze.slow"].status == "failed"
    time.sleep(1.5)
    [row] = store.query(pipeline_run_id="p-fail")
    assert (row["status"], row["error_type"], row["committed"]) == ("failed", "timeout", False)


def test_a_run_failing_after_its_commit_records_the_commit(tmp_path: Path) -> None:
    """A review found the driver's made-up failure report hid a landed commit (committed: false), so the
    next window read the committed rows again. The runner is asked; the row says committed."""
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")

    def fails_after_the_commit(request: Any) -> Any:
        from tests.driver.helpers import report_for

        report = report_for(request, counts=Counts(source=2, good=1, quarantined=1))
        assert request.before_commit is not None
        request.before_commit(report)
        failure = RuntimeError("the quarantine write failed")
        failure.__dict__["lakelogic_report"] = report  # as the engine attaches its report
        raise failure

    fake = FakeRunner({"n": fails_after_the_commit})
    asked: list[str] = []
    fake.commit_landed = lambda node, run_id: asked.append(run_id) or True  # type: ignore[attr-defined]
    result = run([node("n", "bronze")], fake, store=store)
    outcome = result.outcomes["bronze.n"]
    assert outcome.status == "failed" and asked == [fake.calls[0].run_id]
    [row] = store.query()
    assert row["status"] == "failed" and row["committed"] is True
    assert "resume the run" in row["report_json"]  # its quarantined row was not written
    assert store.last_success("n")["run_id"] == row["run_id"]  # the next window starts after it
