"""A run that stops between its target commit and its run-log row (SEMANTICS §13.4, DRIVER §14).

The stop is simulated exactly where it would happen: the run writes its ``committing`` row (its
``before_commit``), commits, and then records nothing (``record=False``), as a process killed after the
commit would. The next run must start its window after the committed rows, not read them again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.report import RunReport
from tests.sources.test_s29_pipeline_log import _contract as pipeline_log_contract
from tests.sources.test_s29_pipeline_log import _land


def _contract(landing: Path, target: Path) -> dict[str, Any]:
    """Session 29's pipeline_log contract, under a name of its own."""
    return {
        **pipeline_log_contract(landing, target),
        "info": {"title": "Recovered", "table_name": "recovered_orders"},
    }


def _intent(processor: Any, *, then_fail: bool = False) -> Callable[[RunReport], None]:
    from lakelogic.runlog import record_commit_intent, store_for_contract

    def record(report: RunReport) -> None:
        record_commit_intent(report, store=store_for_contract(processor.contract))
        if then_fail:
            raise RuntimeError("killed before the commit")

    return record


def _ids(spark: Any, target: Path) -> list[int]:
    return sorted(r["id"] for r in spark.read.parquet(str(target)).collect())


@pytest.mark.spark
def test_a_run_killed_after_its_commit_is_recovered_and_its_rows_are_not_read_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.api import DataProcessor
    from lakelogic.runlog import store_for_contract

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    landing, target = tmp_path / "landing", tmp_path / "target"
    doc = _contract(landing, target)
    _land(landing, "a.csv", "1\n2\n", datetime.now(UTC) - timedelta(days=2))
    DataProcessor(doc, spark=spark).run(materialize=True)

    time.sleep(0.05)
    _land(landing, "b.csv", "3\n", datetime.now(UTC))
    crashed_processor = DataProcessor(doc, spark=spark)
    crashed = crashed_processor.run(materialize=True, record=False, before_commit=_intent(crashed_processor))
    assert crashed.report.materialization is not None and crashed.report.materialization.committed
    store = store_for_contract(crashed_processor.contract)
    assert store.get(crashed.report.run_id)["status"] == "committing"
    assert _ids(spark, target) == [1, 2, 3]

    time.sleep(0.05)
    _land(landing, "c.csv", "4\n", datetime.now(UTC))
    third = DataProcessor(doc, spark=spark).run(materialize=True)
    assert third.report.window.start == crashed.report.window.end  # after the recovered run, not before it
    assert third.report.counts.source == 1
    assert _ids(spark, target) == [1, 2, 3, 4]  # 3 once: the old bound would have appended it again
    recovered = store.get(crashed.report.run_id)
    assert recovered["status"] == "succeeded" and recovered["committed"] is True
    assert "recovered" in recovered["report_json"]


@pytest.mark.spark
def test_a_run_killed_before_its_commit_stays_unsettled_and_its_rows_are_read_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.api import DataProcessor
    from lakelogic.runlog import store_for_contract

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    landing, target = tmp_path / "landing", tmp_path / "target"
    doc = _contract(landing, target)
    _land(landing, "a.csv", "1\n", datetime.now(UTC) - timedelta(days=2))
    first = DataProcessor(doc, spark=spark).run(materialize=True)

    time.sleep(0.05)
    _land(landing, "b.csv", "2\n", datetime.now(UTC))
    killed_processor = DataProcessor(doc, spark=spark)
    with pytest.raises(RuntimeError, match="killed before the commit"):
        killed_processor.run(
            materialize=True, record=False, before_commit=_intent(killed_processor, then_fail=True)
        )
    store = store_for_contract(killed_processor.contract)
    [pending] = store.pending_commits("recovered_orders")
    assert _ids(spark, target) == [1]

    again = DataProcessor(doc, spark=spark).run(materialize=True)
    assert again.report.window.start == first.report.window.end
    assert _ids(spark, target) == [1, 2]
    assert store.get(pending["run_id"])["status"] == "committing"  # never committed: not a success
    assert store.pending_commits("recovered_orders") == []  # older than the new success: no longer checked


def test_pending_commits_are_those_after_the_last_success(tmp_path: Path) -> None:
    from lakelogic.runlog import DuckDBRunLogStore

    store = DuckDBRunLogStore(tmp_path / "log.duckdb")
    day = datetime(2026, 11, 1, tzinfo=UTC)

    def row(run_id: str, status: str, end_day: int, *, contract: str = "c") -> dict[str, Any]:
        end = (day + timedelta(days=end_day)).replace(tzinfo=None)
        return {
            "run_id": run_id,
            "contract": contract,
            "status": status,
            "window_end": end,
            "started_at": end,
        }

    store.write(row("old-intent", "committing", 1))
    store.write(row("success", "succeeded", 2))
    store.write(row("new-intent", "committing", 3))
    store.write(row("other-contract", "committing", 4, contract="d"))
    assert [r["run_id"] for r in store.pending_commits("c")] == ["new-intent"]
    assert store.last_success("c")["run_id"] == "success"  # an intent is never a success
    store.write(row("reset", "reset", 5))
    assert store.pending_commits("c") == []  # a reset hides everything before it


@pytest.mark.spark
@pytest.mark.integration
def test_a_driver_run_killed_after_a_commit_is_recovered_by_the_next_pipeline_run(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new pipeline run (no ``--resume``) after a crash between a node's commit and its run-log row
    starts that node's ``last_success`` window after the committed rows."""
    import lakelogic.driver.runner as driver_runner
    from lakelogic.driver.load import load_pipeline
    from lakelogic.driver.runner import DriverOptions, PipelineRun
    from lakelogic.driver.spark_runner import spark_contract_runner
    from lakelogic.runlog import DuckDBRunLogStore

    root = tmp_path / "project"
    (root / "contracts").mkdir(parents=True)
    (root / "lakelogic.yaml").write_text("{}\n")
    landing, target = tmp_path / "landing", tmp_path / "target"
    doc = _contract(landing, target)
    del doc["source"]["watermark_strategy"]  # the driver's own last_success window
    doc["info"]["target_layer"] = "silver"
    (root / "contracts" / "orders.yaml").write_text(json.dumps(doc))  # JSON is YAML
    store = DuckDBRunLogStore(tmp_path / "runlog.duckdb")

    def pipeline(run_id: str) -> Any:
        loaded = load_pipeline([root / "contracts"])
        runner, cancel = spark_contract_runner(spark)
        result = PipelineRun(
            loaded.dag,
            runner,
            selected=loaded.selected,
            options=DriverOptions(max_workers=1),
            store=store,
            pipeline_run_id=run_id,
            cancel=cancel,
        ).execute()
        runner.close()  # type: ignore[attr-defined]
        return result

    _land(landing, "a.csv", "1\n2\n", datetime.now(UTC) - timedelta(days=2))
    assert pipeline("p1").outcomes["silver.recovered_orders"].status == "succeeded"
    time.sleep(0.05)
    _land(landing, "b.csv", "3\n", datetime.now(UTC))
    with monkeypatch.context() as patch:  # the process dies after the commit, before the outcome row
        patch.setattr(driver_runner, "record_outcome", lambda *a, **k: None)
        pipeline("p2")
    [intent] = store.query(pipeline_run_id="p2")
    assert intent["status"] == "committing"
    assert _ids(spark, target) == [1, 2, 3]

    time.sleep(0.05)
    _land(landing, "c.csv", "4\n", datetime.now(UTC))
    third = pipeline("p3").outcomes["silver.recovered_orders"]
    assert third.status == "succeeded"
    assert third.report is not None and third.report.window.start == intent["window_end"]
    assert _ids(spark, target) == [1, 2, 3, 4]
    assert store.get(intent["run_id"])["status"] == "succeeded"


def test_a_run_that_failed_after_its_commit_moves_the_window(tmp_path: Path) -> None:
    """E.g. its quarantine write failed: its rows are in the target, so the next window starts after them
    (an append target would get them twice); an uncommitted failure moves nothing."""
    from lakelogic.runlog import DuckDBRunLogStore

    store = DuckDBRunLogStore(tmp_path / "log.duckdb")
    day = datetime(2026, 11, 1)
    store.write(
        {"run_id": "ok", "contract": "c", "status": "succeeded", "window_end": day, "started_at": day}
    )
    later = day + timedelta(days=1)
    failed = {"contract": "c", "status": "failed", "window_end": later, "started_at": later}
    store.write({**failed, "run_id": "failed-uncommitted", "committed": False})
    assert store.last_success("c")["run_id"] == "ok"
    store.write({**failed, "run_id": "failed-committed", "committed": True})
    assert store.last_success("c")["run_id"] == "failed-committed"


def test_an_unfinished_run_says_nothing_about_freshness(tmp_path: Path) -> None:
    from lakelogic.runlog import DuckDBRunLogStore

    store = DuckDBRunLogStore(tmp_path / "log.duckdb")
    day = datetime(2026, 11, 1)
    store.write(
        {"run_id": "old", "contract": "c", "status": "succeeded", "started_at": day, "finished_at": day}
    )
    later = day + timedelta(days=3)
    store.write({"run_id": "stuck", "contract": "c", "status": "committing", "started_at": later})
    assert store.latest_run("c")["run_id"] == "old"


@pytest.mark.spark
def test_settling_keeps_the_gate_and_never_replaces_a_finished_row(spark: Any, tmp_path: Path) -> None:
    """A recovered row keeps the gate its run closed (DRIVER §6, from the intent row) and a start time as
    its finish; a row the run finished meanwhile is left as the run wrote it."""
    from lakelogic.api import DataProcessor
    from lakelogic.engines.spark.commit_recovery import settle_pending_commits
    from lakelogic.runlog import DuckDBRunLogStore, record_commit_intent

    target = str(tmp_path / "target")
    doc = {
        "version": "1.0.0",
        "info": {"title": "gated", "table_name": "gated"},
        "model": {"fields": [{"name": "id", "type": "integer"}]},
        "materialization": {"strategy": "append", "format": "parquet", "target_path": target},
    }
    store = DuckDBRunLogStore(tmp_path / "log.duckdb")
    processor = DataProcessor(doc, spark=spark)

    def intent(report: RunReport) -> None:
        record_commit_intent(report, store=store, gated=True, gate_reason="dataset_rule:id_unique")

    crashed = processor.run(
        spark.createDataFrame([(1,)], "id int"), materialize=True, record=False, before_commit=intent
    )
    assert settle_pending_commits(spark, processor.contract, store) == [crashed.report.run_id]
    row = store.get(crashed.report.run_id)
    assert (row["status"], row["gated"], row["gate_reason"]) == ("succeeded", True, "dataset_rule:id_unique")
    assert row["finished_at"] == row["started_at"]

    finished = processor.run(
        spark.createDataFrame([(2,)], "id int"), materialize=True, record=False, before_commit=intent
    )
    pending = store.pending_commits("gated")
    from lakelogic.runlog import record_run

    record_run(finished.report, store=store)  # the run finishes between the settle's read and its write
    store_pending = store.pending_commits
    store.pending_commits = lambda _name: pending  # type: ignore[method-assign]
    try:
        assert settle_pending_commits(spark, processor.contract, store) == []
    finally:
        store.pending_commits = store_pending  # type: ignore[method-assign]
    assert store.get(finished.report.run_id)["finished_at"] != store.get(finished.report.run_id)["started_at"]
