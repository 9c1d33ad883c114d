"""The SQLite run-log backend behaves like the DuckDB one (round trip, upsert, reset, threads, summary)."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from lakelogic.errors import LakeLogicError
from lakelogic.runlog import SQLiteRunLogStore, open_store, record_run
from lakelogic.runlog.summary import write_summary
from lakelogic.types import RunStatus
from tests.runlog.test_store import T0, _report
from tests.runlog.test_summary import summary


def test_round_trip_types_and_upsert(tmp_path: Path) -> None:
    store = open_store(tmp_path / "rl.sqlite", backend="sqlite")
    assert isinstance(store, SQLiteRunLogStore)
    record_run(_report("r1", status=RunStatus.FAILED), store=store, gated=True)
    record_run(_report("r1"), store=store, gated=True)
    [row] = store.query()
    assert row["status"] == "succeeded" and row["gated"] is True and row["committed"] is True
    assert row["started_at"] == T0 and row["quarantine_ratio"] == pytest.approx(0.3)


def test_ordering_last_success_and_reset(tmp_path: Path) -> None:
    store = SQLiteRunLogStore(tmp_path / "rl.sqlite")
    for i in range(3):
        record_run(_report(f"r{i}", started=T0 + timedelta(hours=i)), store=store)
    assert [r["run_id"] for r in store.query(last=2)] == ["r2", "r1"]
    last = store.last_success("silver_orders")
    assert last is not None and last["run_id"] == "r2"
    store.write(
        {"run_id": "x", "contract": "silver_orders", "status": "reset", "started_at": T0 + timedelta(hours=5)}
    )
    assert store.last_success("silver_orders") is None


def test_threads_and_summary_table(tmp_path: Path) -> None:
    db = tmp_path / "rl.sqlite"
    store = SQLiteRunLogStore(db)
    threads = [threading.Thread(target=record_run, args=(_report(f"t{i}"),), kwargs={"store": store})
               for i in range(6)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.query()) == 6
    write_summary(summary(), table="pipeline_runs", database=db, backend="sqlite")
    con = sqlite3.connect(db)
    assert con.execute("SELECT pipeline_run_id, total_contracts FROM pipeline_runs").fetchall() == [("p1", 3)]
    con.close()


def test_schema_qualified_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LakeLogicError, match="cannot have a schema"):
        SQLiteRunLogStore(tmp_path / "x.sqlite", table="ops.run_log")
