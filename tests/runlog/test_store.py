"""Run-log store round trips (no Spark)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.errors import LakeLogicError
from lakelogic.report import Counts, DatasetRuleResult, ErrorBlock, MaterializationInfo, RunReport, WindowInfo
from lakelogic.runlog import DuckDBRunLogStore, default_database_path, open_store, record_run, row_from_report
from lakelogic.types import RunStatus

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _report(
    run_id: str,
    *,
    contract: str = "silver_orders",
    status: RunStatus = RunStatus.SUCCEEDED,
    started: datetime = T0,
    window_end: datetime | None = None,
) -> RunReport:
    report = RunReport(
        run_id=run_id,
        pipeline_run_id="p1",
        contract=contract,
        layer="silver",
        status=status,
        started_at=started,
        counts=Counts(source=10, good=7, quarantined=3),
        window=WindowInfo(label="incremental", start=None, end=window_end or started),
        materialization=MaterializationInfo(target="lakelogic.silver.orders", committed=True, snapshot="42"),
        dataset_rules=[
            DatasetRuleResult(
                name="unique_id", generated_name="u", category="uniqueness", severity="error", passed=False
            ),
            DatasetRuleResult(
                name="count", generated_name="c", category="volume", severity="warning", passed=False
            ),
        ],
    )
    report.finished_at = started + timedelta(seconds=5)
    report.duration_seconds = 5.0
    return report


@pytest.fixture(params=["duckdb", "delta", "iceberg"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> DuckDBRunLogStore:
    """The embedded store, the Delta one (delta-rs) and the Iceberg one (Spark): the same behaviour
    through the same queries."""
    if request.param == "delta":
        return open_store(tmp_path / "delta", backend="delta")
    if request.param == "iceberg":
        import uuid

        from lakelogic.engines.spark.runlog_iceberg import IcebergRunLogStore

        spark = request.getfixturevalue("spark")
        return IcebergRunLogStore(f"lakelogic.runlog_{uuid.uuid4().hex[:8]}", spark=spark)
    return DuckDBRunLogStore(tmp_path / "rl.duckdb")


def test_round_trip_keeps_every_column(store: DuckDBRunLogStore) -> None:
    record_run(
        _report("r1"),
        entity="orders",
        store=store,
        gated=True,
        gate_reason="dataset_rule:unique_id",
        overrides=["a=1"],
    )
    row = store.get("r1")
    assert row is not None
    assert row["contract"] == "silver_orders"
    assert row["entity"] == "orders"
    assert row["counts_good"] == 7 and row["counts_quarantined"] == 3
    assert row["quarantine_ratio"] == pytest.approx(0.3)
    assert row["dataset_rules_failed"] == 1  # warnings do not count
    assert row["snapshot"] == "42" and row["committed"] is True
    assert row["started_at"] == T0
    assert row["gate_reason"] == "dataset_rule:unique_id"
    assert row["overrides"] == '["a=1"]'
    assert '"run_id": "r1"' in row["report_json"]


def test_upsert_by_run_id(store: DuckDBRunLogStore) -> None:
    record_run(_report("r1", status=RunStatus.FAILED), store=store)
    failed = _report("r1")
    failed.error = ErrorBlock(type="commit", message="boom")
    record_run(failed, store=store)
    rows = store.query()
    assert len(rows) == 1
    assert rows[0]["error_type"] == "commit"


def test_query_filters_and_newest_first(store: DuckDBRunLogStore) -> None:
    for i in range(3):
        record_run(_report(f"r{i}", started=T0 + timedelta(hours=i)), store=store)
    record_run(_report("x", contract="other", status=RunStatus.FAILED), store=store)
    assert [r["run_id"] for r in store.query(contract="silver_orders")] == ["r2", "r1", "r0"]
    assert [r["run_id"] for r in store.query(last=2)] == ["r2", "r1"]
    assert [r["run_id"] for r in store.query(status="failed")] == ["x"]


def test_last_success_ignores_failures_and_rows_before_reset(store: DuckDBRunLogStore) -> None:
    record_run(_report("ok1", started=T0), store=store)
    bad = _report("bad", started=T0 + timedelta(hours=1), status=RunStatus.FAILED)
    assert bad.materialization is not None
    bad.materialization.committed = False  # failed before its commit (one after it moves the window)
    record_run(bad, store=store)
    last = store.last_success("silver_orders")
    assert last is not None and last["run_id"] == "ok1"
    store.write(
        {
            "run_id": "reset1",
            "contract": "silver_orders",
            "status": "reset",
            "started_at": T0 + timedelta(hours=2),
        }
    )
    assert store.last_success("silver_orders") is None
    assert store.latest_run("silver_orders") is None


def test_unknown_extra_column_is_an_error() -> None:
    with pytest.raises(LakeLogicError, match="unknown run-log column"):
        row_from_report(_report("r"), bogus=1)


def test_concurrent_writes_from_threads(store: DuckDBRunLogStore) -> None:
    threads = [
        threading.Thread(target=record_run, args=(_report(f"t{i}"),), kwargs={"store": store})
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.query()) == 8


def test_default_location_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LAKELOGIC_RUNLOG", raising=False)
    assert default_database_path() == tmp_path / "home" / "lakelogic.duckdb"
    monkeypatch.setenv("LAKELOGIC_RUNLOG", str(tmp_path / "x.duckdb"))
    assert default_database_path() == tmp_path / "x.duckdb"


def test_missing_store_reads_empty_and_is_not_created(tmp_path: Path) -> None:
    store = DuckDBRunLogStore(tmp_path / "none" / "rl.duckdb")
    assert store.query() == []
    assert not store.exists()


def test_process_default_store(tmp_path: Path) -> None:
    from lakelogic.runlog import open_store, set_default_store

    store = DuckDBRunLogStore(tmp_path / "p.duckdb")
    set_default_store(store)
    try:
        record_run(_report("via-default"))
        assert store.get("via-default") is not None
        assert open_store(tmp_path / "other.duckdb") is not store
    finally:
        set_default_store(None)


def test_delta_run_log_is_a_delta_table_other_readers_can_read(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    store = open_store(tmp_path / "lake", table="ops.run_log", backend="delta")
    assert not store.exists() and store.query() == []
    record_run(_report("d1"), store=store)
    record_run(_report("d1", status=RunStatus.FAILED), store=store)  # an upsert, not a second row
    rows = DeltaTable(str(tmp_path / "lake" / "ops" / "run_log")).to_pyarrow_table().to_pylist()
    assert [(r["run_id"], r["status"]) for r in rows] == [("d1", "failed")]
    assert rows[0]["started_at"] == T0  # an instant (UTC), as Delta's timestamp type stores it


def test_unknown_backend_lists_the_allowed_ones() -> None:
    with pytest.raises(LakeLogicError, match="allowed: duckdb, sqlite, delta, iceberg"):
        open_store(backend="hive")


def test_iceberg_backend_is_a_table_spark_reads(spark: Any) -> None:
    import lakelogic.engines.spark  # noqa: F401 - registers the iceberg backend

    store = open_store("lakelogic.runlog_read", table="ops_run_log", backend="iceberg")
    record_run(_report("i1"), store=store)
    record_run(_report("i1", status=RunStatus.FAILED), store=store)
    rows = spark.table("lakelogic.runlog_read.ops_run_log").collect()
    assert [(r["run_id"], r["status"]) for r in rows] == [("i1", "failed")]
    assert rows[0]["started_at"] == T0.replace(tzinfo=None)  # UTC wall clock, no zone shift


def test_a_resumed_run_whose_commit_had_landed_keeps_what_that_commit_wrote(tmp_path: Path) -> None:
    """DRIVER §14: a resumed in-flight node runs again under its run id and finds its commit; that no-op
    must not overwrite the recorded rows and snapshot with zeros."""
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    first = _report("r1")
    assert first.materialization is not None
    first.materialization.rows_inserted = 5
    record_run(first, store=store)
    resumed = _report("r1")
    assert resumed.materialization is not None
    resumed.materialization.committed = False
    resumed.materialization.already_committed = True
    resumed.materialization.snapshot = None
    record_run(resumed, store=store)
    [row] = store.query()
    assert (row["rows_inserted"], row["snapshot"], row["committed"]) == (5, "42", True)
