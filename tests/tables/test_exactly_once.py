"""Exactly-once commits (SEMANTICS §13.4): run-id markers, pipeline windows, crashes, quarantine resume."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lakelogic.errors import CommitError
from lakelogic.tables import spark_write
from lakelogic.tables.spark_write import adapter_for, write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, name string"


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_run_id_or_pipeline_window_is_a_noop(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    batch = spark.createDataFrame([(1, "a")], SCHEMA)
    window = (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC))
    stamp = CommitStamp(
        "run-1", "orders", pipeline_run_id="pipe-1", window_start=window[0], window_end=window[1]
    )
    assert write_frame(spark, batch, target, WriteSpec(), stamp).committed
    again = write_frame(spark, batch, target, WriteSpec(), stamp)
    assert again.already_committed and not again.committed
    retry = CommitStamp(
        "run-2", "orders", pipeline_run_id="pipe-1", window_start=window[0], window_end=window[1]
    )
    assert write_frame(spark, batch, target, WriteSpec(), retry).already_committed
    assert len(read_back(spark, target)) == 1
    assert adapter_for(spark, target).already_committed(CommitStamp("run-1", "orders"))
    assert not adapter_for(spark, target).already_committed(CommitStamp("run-1", "orders", role="quarantine"))
    if fmt == "parquet":  # SEMANTICS §13.4: the marker is _lakelogic_commits/<run_id>.json
        assert (Path(target.name) / "_lakelogic_commits" / "run-1.json").is_file()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_backfill_window_committed_by_any_pipeline_run_is_a_noop(
    spark: Any, make_target: Make, fmt: str
) -> None:
    """DRIVER §8: backfilling a window again (a new pipeline run) never duplicates its rows; a window
    not yet committed is written, and a regular window of another pipeline run still appends."""
    target = make_target(fmt)
    batch = spark.createDataFrame([(1, "a")], SCHEMA)
    day = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC))
    next_day = (day[1], datetime(2026, 1, 3, tzinfo=UTC))

    def backfill(run: str, pipeline: str, window: tuple[datetime, datetime]) -> CommitStamp:
        return CommitStamp(run, "orders", pipeline, window[0], window[1], any_pipeline_run=True)

    assert write_frame(spark, batch, target, WriteSpec(), backfill("r1", "p1", day)).committed
    again = write_frame(spark, batch, target, WriteSpec(), backfill("r2", "p2", day))
    assert again.already_committed and len(read_back(spark, target)) == 1
    assert write_frame(spark, batch, target, WriteSpec(), backfill("r3", "p3", next_day)).committed
    regular = CommitStamp("r4", "orders", "p4", day[0], day[1])
    assert write_frame(spark, batch, target, WriteSpec(), regular).committed
    assert len(read_back(spark, target)) == 3

    # a reset empties the table but keeps its history: the window's earlier commits no longer count
    adapter_for(spark, target).empty(CommitStamp("reset-1", "orders", role="reset"))
    rebuilt = write_frame(spark, batch, target, WriteSpec(), backfill("r5", "p5", day))
    assert rebuilt.committed and not rebuilt.already_committed
    assert len(read_back(spark, target)) == 1
    assert write_frame(spark, batch, target, WriteSpec(), backfill("r6", "p6", day)).already_committed


@pytest.mark.parametrize("fmt", FORMATS)
def test_crash_before_commit_leaves_target_unchanged_and_rerun_succeeds(
    spark: Any, make_target: Make, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = make_target(fmt)
    spec = WriteSpec(strategy="merge", primary_key=("id",))
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, spec, CommitStamp("seed", "o"))
    batch = spark.createDataFrame([(1, "b"), (2, "c")], SCHEMA)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected crash after the data files were written")

    if fmt == "iceberg":
        monkeypatch.setattr("lakelogic.tables.spark_iceberg.run_with_commit_properties", boom)
    elif fmt == "delta":
        monkeypatch.setattr("lakelogic.tables.spark_delta_rs.DeltaRsTable._move_into_table", boom)
    else:
        monkeypatch.setattr("lakelogic.tables.spark_files.FileTable.commit", boom)
    with pytest.raises(CommitError, match="injected crash"):
        write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    assert [(r["id"], r["name"]) for r in read_back(spark, target)] == [(1, "a")]
    monkeypatch.undo()
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    assert out.committed and (out.rows_updated, out.rows_inserted) == (1, 1)
    assert [(r["id"], r["name"]) for r in read_back(spark, target)] == [(1, "b"), (2, "c")]


def test_parquet_crash_during_publish_rolls_forward(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.tables.spark_files import FileTable

    target = make_target("parquet")
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, WriteSpec(), CommitStamp("r0", "o"))
    original = FileTable._roll_forward

    def crash_once(self: FileTable, manifest: dict[str, object]) -> None:
        monkeypatch.setattr(FileTable, "_roll_forward", original)
        raise RuntimeError("crash while publishing")

    monkeypatch.setattr(FileTable, "_roll_forward", crash_once)
    with pytest.raises(CommitError):
        write_frame(
            spark, spark.createDataFrame([(2, "b")], SCHEMA), target, WriteSpec(), CommitStamp("r1", "o")
        )
    assert list(Path(target.name, "_lakelogic_commits").glob("pending-*.json")), "pending manifest kept"
    again = write_frame(
        spark, spark.createDataFrame([(2, "b")], SCHEMA), target, WriteSpec(), CommitStamp("r1", "o")
    )
    assert again.already_committed, "the next write finished the pending commit, so the re-run is a no-op"
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 2]
    assert not list(Path(target.name, "_lakelogic_commits").glob("pending-*.json"))


def _contract(tmp_path: Path) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Orders"},
        "model": {
            "fields": [{"name": "id", "type": "int", "required": True}, {"name": "amount", "type": "double"}]
        },
        "quality": {"row_rules": [{"name": "amount_positive", "sql": "amount > 0"}]},
        "materialization": {"strategy": "append", "target_path": str(tmp_path / "gold" / "orders")},
    }


def test_quarantine_written_after_target_and_resumes_after_a_crash(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    processor = DataProcessor(_contract(tmp_path), spark=spark)
    frame = spark.createDataFrame([(1, 5.0), (2, -1.0), (3, 7.0)], "id int, amount double")
    original = spark_write.write_frame
    calls: list[str] = []

    def crash_on_quarantine(*args: Any, **kwargs: Any) -> Any:
        stamp = args[4]
        calls.append(stamp.role)
        if stamp.role == "quarantine" and calls.count("quarantine") == 1:
            raise CommitError("crash between target and quarantine commits")
        return original(*args, **kwargs)

    monkeypatch.setattr(spark_write, "write_frame", crash_on_quarantine)
    first = processor.run(frame, materialize=True, run_id="run-42")
    assert first.report.status == "failed"
    target = str(tmp_path / "gold" / "orders")
    sink = str(tmp_path / "gold" / "_quarantine" / "orders")
    assert sorted(r["id"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()) == [1, 3]
    assert not DeltaTable.is_deltatable(sink)

    resumed = processor.run(frame, materialize=True, run_id="run-42")
    info = resumed.report.materialization
    assert info is not None and info.already_committed and info.quarantine_rows_written == 1
    assert sorted(r["id"] for r in DeltaTable(target).to_pyarrow_table().to_pylist()) == [1, 3], (
        "no duplicates"
    )
    bad = DeltaTable(sink).to_pyarrow_table().to_pylist()
    assert [r["id"] for r in bad] == [2] and "amount_positive" in bad[0]["_lakelogic_errors"][0]
    history = DeltaTable(sink).history()
    assert history[0]["lakelogic.run_id"] == "run-42" and history[0]["lakelogic.role"] == "quarantine"

    third = processor.run(frame, materialize=True, run_id="run-42")
    assert (
        third.report.materialization is not None and third.report.materialization.quarantine_rows_written == 0
    )
    assert len(DeltaTable(sink).to_pyarrow_table().to_pylist()) == 1


def test_quarantine_overwrite_mode_holds_only_the_latest_runs_bad_rows(spark: Any, tmp_path: Path) -> None:
    """`quarantine.write_mode: overwrite` (SEMANTICS §13.5): the table becomes each run's bad rows, so a
    run with none leaves it empty instead of keeping an earlier run's."""
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    contract = _contract(tmp_path) | {"quarantine": {"write_mode": "overwrite"}}
    processor = DataProcessor(contract, spark=spark)
    sink = str(tmp_path / "gold" / "_quarantine" / "orders")
    schema = "id int, amount double"

    processor.run(spark.createDataFrame([(1, 5.0), (2, -1.0)], schema), materialize=True, run_id="r1")
    assert [r["id"] for r in DeltaTable(sink).to_pyarrow_table().to_pylist()] == [2]
    processor.run(spark.createDataFrame([(3, -3.0)], schema), materialize=True, run_id="r2")
    assert [r["id"] for r in DeltaTable(sink).to_pyarrow_table().to_pylist()] == [3]

    clean = processor.run(spark.createDataFrame([(4, 4.0)], schema), materialize=True, run_id="r3")
    info = clean.report.materialization
    assert info is not None and info.quarantine_rows_written == 0
    assert DeltaTable(sink).to_pyarrow_table().num_rows == 0, "a clean run empties an overwrite quarantine"
    assert DeltaTable(sink).history()[0]["lakelogic.run_id"] == "r3"


def test_quarantine_append_mode_skips_a_run_without_bad_rows(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    processor = DataProcessor(_contract(tmp_path), spark=spark)
    sink = str(tmp_path / "gold" / "_quarantine" / "orders")
    schema = "id int, amount double"
    processor.run(spark.createDataFrame([(2, -1.0)], schema), materialize=True, run_id="a1")
    versions = len(DeltaTable(sink).history())
    processor.run(spark.createDataFrame([(4, 4.0)], schema), materialize=True, run_id="a2")
    assert [r["id"] for r in DeltaTable(sink).to_pyarrow_table().to_pylist()] == [2]
    assert len(DeltaTable(sink).history()) == versions, "no empty commit"
