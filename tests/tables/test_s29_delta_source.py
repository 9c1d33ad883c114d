"""Delta sources on a Spark session without delta-spark: Spark reads the snapshot's Parquet files (types as
the Delta schema declares them), and the `delta_version` watermark strategy (SEMANTICS §3.4) reads only
the commits after the version the last successful run read up to."""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakelogic.errors import SourceError
from lakelogic.sources.delta_cursor import DELTA_VERSION_FIELD, stored_version
from lakelogic.tables.delta_files import (
    delta_file,
    files_blocker,
    protocol_blocker,
    read_delta,
    read_delta_since,
)


def _not_plain_parquet(table: Any, actions: list[dict[str, Any]], columns: tuple[str, ...]) -> str | None:
    described = [delta_file(a["path"], columns) for a in actions]
    return protocol_blocker(table) or files_blocker(actions, described)


deltalake = pytest.importorskip("deltalake")


def _orders(ids: list[int | None], day: str = "2026-01-01") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "amount": pa.array(
                [decimal.Decimal("1.10") if i is not None else None for i in ids], pa.decimal128(12, 2)
            ),
            "ts": pa.array(
                [datetime(2026, 1, 1, 12, tzinfo=UTC) if i is not None else None for i in ids],
                pa.timestamp("us", "UTC"),
            ),
            "day": pa.array([day] * len(ids)),
        }
    )


@pytest.mark.spark
def test_spark_reads_the_snapshot_files_with_the_declared_types(spark: Any, tmp_path: Path) -> None:
    """Before, the rows went through pandas: an int column holding NULL came back as doubles with NaN,
    and decimal(12,2) as decimal(38,18). Partition values with escaped characters decode to themselves."""
    path = str(tmp_path / "dt")
    deltalake.write_deltalake(path, _orders([1, None], "a b"), partition_by=["day"])
    deltalake.write_deltalake(path, _orders([3], "x/y=%"), mode="append", partition_by=["day"])
    frame = read_delta(spark, path)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("id", "int"),
        ("amount", "decimal(12,2)"),
        ("ts", "timestamp"),
        ("day", "string"),
    ]
    rows = sorted((r["id"] or 0, r["amount"], r["day"]) for r in frame.collect())
    assert rows == [
        (0, None, "a b"),
        (1, decimal.Decimal("1.10"), "a b"),
        (3, decimal.Decimal("1.10"), "x/y=%"),
    ]
    # the scan is Spark's own Parquet reader over the files, not rows created on the driver
    assert "FileScan parquet" in frame._jdf.queryExecution().executedPlan().toString()


@pytest.mark.spark
def test_the_commits_after_a_version_are_the_files_they_added(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "dt")
    deltalake.write_deltalake(path, _orders([1, 2]))
    deltalake.write_deltalake(path, _orders([3]), mode="append")
    deltalake.write_deltalake(path, _orders([4, 5]), mode="append")
    changes = read_delta_since(spark, path, 1)
    assert (changes.previous, changes.current, changes.added_files, changes.rewritten_files) == (1, 2, 1, 0)
    assert sorted(r["id"] for r in changes.frame.collect()) == [4, 5]
    assert read_delta_since(spark, path, 2).frame.count() == 0
    everything = read_delta_since(spark, path, None)
    assert everything.previous is None and everything.frame.count() == 5
    with pytest.raises(SourceError, match="before this contract's stored cursor 7"):
        read_delta_since(spark, path, 7)


@pytest.mark.spark
def test_a_cursor_whose_version_the_log_no_longer_holds_is_an_error(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "dt"
    deltalake.write_deltalake(str(path), _orders([1]))
    deltalake.write_deltalake(str(path), _orders([2]), mode="append")
    deltalake.write_deltalake(str(path), _orders([3]), mode="append")
    deltalake.DeltaTable(str(path)).create_checkpoint()
    for version in (0, 1):  # log retention removed the commits before the checkpoint
        (path / "_delta_log" / f"{version:020d}.json").unlink()
    assert read_delta_since(spark, str(path), 1).frame.count() == 1  # version 2's commit is still there
    with pytest.raises(SourceError, match="no longer holds the log of version 1"):
        read_delta_since(spark, str(path), 0)


def test_the_stored_cursor_is_read_only_from_a_delta_version_run() -> None:
    assert stored_version(DELTA_VERSION_FIELD, "12") == 12
    assert stored_version("updated_at", "2026-01-01T00:00:00") is None  # another strategy's cursor
    assert stored_version(DELTA_VERSION_FIELD, None) is None
    with pytest.raises(SourceError, match="not a table version"):
        stored_version(DELTA_VERSION_FIELD, "2026-01-01")


@dataclass
class _Protocol:
    min_reader_version: int = 1
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None


@dataclass
class _Metadata:
    configuration: dict[str, str] = field(default_factory=dict)


@dataclass
class _Table:
    protocol_: _Protocol = field(default_factory=_Protocol)
    metadata_: _Metadata = field(default_factory=_Metadata)

    def protocol(self) -> _Protocol:
        return self.protocol_

    def metadata(self) -> _Metadata:
        return self.metadata_


def test_tables_spark_cannot_read_as_plain_parquet_are_recognised() -> None:
    """Deletion vectors, column mapping and non-Hive partition directories would give wrong rows or
    columns through a plain Parquet read: those tables are read through delta-rs instead."""
    hive = [{"path": "day=2026-01-01/a.parquet"}]
    assert _not_plain_parquet(_Table(), hive, ("day",)) is None
    assert _not_plain_parquet(_Table(_Protocol(3, ["timestampNtz"])), hive, ("day",)) is None
    assert _not_plain_parquet(_Table(_Protocol(3, ["deletionVectors"])), hive, ("day",)) is None  # none used
    assert "rowTracking" in str(_not_plain_parquet(_Table(_Protocol(3, ["rowTracking"])), hive, ("day",)))
    mapped = _Table(metadata_=_Metadata({"delta.columnMapping.mode": "name"}))
    assert _not_plain_parquet(mapped, hive, ("day",)) == "column mapping"
    with_dv = [{"path": "day=2026-01-01/a.parquet", "deletionVector.storageType": "u"}]
    assert _not_plain_parquet(_Table(), with_dv, ("day",)) == "deletion vectors"
    assert "not Hive-style" in str(_not_plain_parquet(_Table(), [{"path": "xy/a.parquet"}], ("day",)))


def _contract(source: Path, target: Path) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Delta orders", "table_name": "delta_version_orders"},
        "model": {
            "fields": [
                {"name": "id", "type": "integer", "required": True},
                {"name": "amount", "type": "decimal(12,2)"},
                {"name": "day", "type": "date"},
            ]
        },
        "source": {
            "type": "table",
            "format": "delta",
            "path": str(source),
            "load_mode": "incremental",
            "watermark_strategy": "delta_version",
        },
        "materialization": {"strategy": "append", "format": "parquet", "target_path": str(target)},
    }


@pytest.mark.spark
def test_runs_read_each_commit_once_and_keep_the_cursor_when_nothing_is_new(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.api import DataProcessor

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))  # a run log of this test's own
    source, target = tmp_path / "bronze", tmp_path / "silver"
    deltalake.write_deltalake(str(source), _orders([1, 2]))
    deltalake.write_deltalake(str(source), _orders([None]), mode="append")  # a required value missing
    doc = _contract(source, target)

    first = DataProcessor(doc, spark=spark).run(materialize=True)
    assert first.report.status == "succeeded", first.report.error
    assert (first.report.counts.source, first.report.counts.quarantined) == (3, 1)
    assert first.report.watermark.field == DELTA_VERSION_FIELD
    assert (first.report.watermark.previous, first.report.watermark.current) == (None, 1)

    deltalake.write_deltalake(str(source), _orders([3]), mode="append")
    second = DataProcessor(doc, spark=spark).run(materialize=True)
    assert second.report.counts.source == 1 and second.report.window.reason == "delta_version"
    assert (second.report.watermark.previous, second.report.watermark.current) == (1, 2)

    third = DataProcessor(doc, spark=spark).run(materialize=True)
    assert third.report.status == "no_new_data" and third.report.counts.source == 0
    assert third.report.watermark.current == 2  # the cursor stays where it was

    deltalake.write_deltalake(str(source), _orders([4]), mode="append")
    fourth = DataProcessor(doc, spark=spark).run(materialize=True)
    assert fourth.report.counts.source == 1 and fourth.report.watermark.previous == 2
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2, 3, 4]

    # a delete rewrites a file: its other rows come again, and the run says so
    deltalake.DeltaTable(str(source)).delete("id = 1")
    fifth = DataProcessor(doc, spark=spark).run(materialize=True)
    assert fifth.report.counts.source == 1  # id 2, rewritten without id 1
    assert any("updated or deleted rows in 1 file" in w for w in fifth.report.warnings)


@pytest.mark.spark
def test_the_driver_window_carries_the_cursor_of_its_own_run_log(spark: Any, tmp_path: Path) -> None:
    """Under the driver the cursor comes with the window, from the run log the driver keeps (which need
    not be the one `lakelogic run` records to)."""
    from lakelogic.api import DataProcessor
    from lakelogic.driver.windows import Window

    source, target = tmp_path / "bronze", tmp_path / "silver"
    for ids in ([1], [2], [3]):
        deltalake.write_deltalake(str(source), _orders(ids), mode="append")
    window = Window(
        "incremental",
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime.now(UTC),
        "last_success",
        cursor_field=DELTA_VERSION_FIELD,
        cursor="1",
    )
    result = DataProcessor(_contract(source, target), spark=spark).run(
        materialize=True, window=window, record=False
    )
    assert result.report.counts.source == 1
    assert [r["id"] for r in spark.read.parquet(str(target)).collect()] == [3]


@pytest.mark.spark
def test_delta_version_over_a_table_that_is_not_delta_is_a_plan_error(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    doc = _contract(tmp_path / "x", tmp_path / "silver")
    doc["source"].update({"format": "iceberg", "path": "local.bronze.orders"})
    result = DataProcessor(doc, spark=spark).run(record=False)
    assert result.report.status == "failed"
    assert "delta_version reads Delta sources only" in str(result.report.error)


def test_the_cursor_comes_from_the_last_successful_run_that_stored_one(tmp_path: Path) -> None:
    """A range run in between stores no version, and a run that wrote nothing moves none: the driver's
    window (and a standalone run) still starts after the last stored version."""
    from lakelogic.driver.windows import WindowSpec, resolve_window
    from lakelogic.runlog.store import DuckDBRunLogStore

    store = DuckDBRunLogStore(tmp_path / "runs.duckdb")

    def row(run: str, day: int, **extra: Any) -> None:
        when = datetime(2026, 1, day, tzinfo=UTC)
        store.write(
            {
                "run_id": run,
                "contract": "c",
                "status": "succeeded",
                "committed": True,
                "started_at": when,
                "finished_at": when,
                "window_end": when,
                **extra,
            }
        )

    row("r1", 1, watermark_field=DELTA_VERSION_FIELD, watermark_value="4")
    row("r2", 2, run_mode="normal", window_label="range")  # a range window: rows by date, no version
    row("r3", 3, watermark_field=DELTA_VERSION_FIELD, watermark_value="9", run_mode="no_write")
    window = resolve_window(WindowSpec(), "c", as_of=datetime(2026, 1, 4, tzinfo=UTC), store=store)
    assert (window.start, window.cursor_field, window.cursor) == (
        datetime(2026, 1, 2, tzinfo=UTC),  # the no_write run moved no window either
        DELTA_VERSION_FIELD,
        "4",
    )


def _column_mapped(path: str) -> None:
    deltalake.write_deltalake(
        path,
        pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}),
        configuration={
            "delta.columnMapping.mode": "name",
            "delta.minReaderVersion": "2",
            "delta.minWriterVersion": "5",
        },
    )


@pytest.mark.spark
def test_a_column_mapped_table_is_refused_not_read_or_written_wrongly(spark: Any, tmp_path: Path) -> None:
    """Its files name columns by physical ids: a plain Parquet read gives NULLs, and files Spark writes
    with the logical names would be NULLs for every other reader. Before, an append committed such files."""
    from lakelogic.api import DataProcessor
    from lakelogic.errors import UnsupportedError

    path = str(tmp_path / "mapped")
    _column_mapped(path)
    with pytest.raises(UnsupportedError, match="column mapping"):
        read_delta(spark, path)
    doc = {
        "version": "1.0.0",
        "info": {"title": "t", "table_name": "mapped"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}]},
        "materialization": {"strategy": "append", "format": "delta", "target_path": path},
    }
    batch = spark.createDataFrame([(3, "c")], "id int, v string")
    result = DataProcessor(doc, spark=spark).run(batch, materialize=True, record=False)
    assert result.report.status == "failed" and "column mapping" in str(result.report.error)
    assert deltalake.DeltaTable(path).version() == 0  # nothing committed


def test_tables_whose_rules_a_file_commit_breaks_are_recognised() -> None:
    from lakelogic.tables.delta_files import file_commit_blocker

    @dataclass
    class _Schema:
        text: str

        def to_json(self) -> str:
            return self.text

    @dataclass
    class _Writable(_Table):
        schema_: _Schema = field(default_factory=lambda: _Schema('{"fields": []}'))

        def schema(self) -> _Schema:
            return self.schema_

    assert file_commit_blocker(_Writable(_Protocol(3, [], ["appendOnly", "changeDataFeed"]))) is None
    row_tracking = _Protocol(3, [], ["rowTracking", "appendOnly"])
    assert file_commit_blocker(_Writable(row_tracking)) == "writer features rowTracking"
    checked = _Writable(metadata_=_Metadata({"delta.constraints.positive": "id > 0"}))
    assert file_commit_blocker(checked) == "CHECK constraints"
    generated = _Schema('{"fields": [{"name": "d", "metadata": {"delta.generationExpression": "x"}}]}')
    assert file_commit_blocker(_Writable(schema_=generated)) == "a generated column (d)"


@pytest.mark.spark
def test_partition_values_spark_would_misread_and_a_root_with_a_space(spark: Any, tmp_path: Path) -> None:
    """delta-rs escapes non-ASCII values as UTF-8 bytes (``Z%C3%BCrich``), which Spark's partition
    discovery decodes byte by byte, and an empty value fails it; such partitions get their values as
    literals. A root with a space is percent-encoded in delta-rs's table URI and decoded for Spark."""
    path = str(tmp_path / "bronze orders")
    cities = pa.array(["Zürich", "東京", "", "a b"])
    deltalake.write_deltalake(path, pa.table({"id": [1, 2, 3, 4], "city": cities}), partition_by=["city"])
    expected = sorted((r["id"], r["city"]) for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())
    assert expected == [(1, "Zürich"), (2, "東京"), (3, None), (4, "a b")]
    assert sorted((r["id"], r["city"]) for r in read_delta(spark, path).collect()) == expected
    plain = str(tmp_path / "plain")  # every value safe: one scan with Spark's partition discovery
    deltalake.write_deltalake(plain, pa.table({"id": [5], "city": ["x"]}), partition_by=["city"])
    assert [(r["id"], r["city"]) for r in read_delta(spark, plain).collect()] == [(5, "x")]


@pytest.mark.spark
def test_compaction_moves_rows_without_making_them_new(spark: Any, tmp_path: Path) -> None:
    """OPTIMIZE adds its files without a data change: they are skipped, and the new rows it compacted
    are read from the files that first added them (no longer live, still on storage)."""
    path = str(tmp_path / "dt")
    deltalake.write_deltalake(path, _orders([1]))
    deltalake.write_deltalake(path, _orders([2]), mode="append")
    deltalake.write_deltalake(path, _orders([3]), mode="append")
    deltalake.DeltaTable(path).optimize.compact()
    deltalake.write_deltalake(path, _orders([4]), mode="append")
    changes = read_delta_since(spark, path, 0)
    assert sorted(r["id"] for r in changes.frame.collect()) == [2, 3, 4]
    assert changes.rewritten_files == 0
    compacted = read_delta_since(spark, path, 3)  # after the compaction: only the last append
    assert [r["id"] for r in compacted.frame.collect()] == [4]


@pytest.mark.spark
def test_a_run_that_writes_nothing_moves_no_cursor(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§3.4: the cursor is stored only when the run commits; a recorded run that wrote no target (the
    CLI's ``--no-write``) left the next materialized run reading only later commits, losing rows."""
    from lakelogic.api import DataProcessor

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    source, target = tmp_path / "bronze", tmp_path / "silver"
    deltalake.write_deltalake(str(source), _orders([1, 2]))
    doc = _contract(source, target)
    dry = DataProcessor(doc, spark=spark).run(record=True)
    assert dry.report.watermark.current == 0
    deltalake.write_deltalake(str(source), _orders([3]), mode="append")
    real = DataProcessor(doc, spark=spark).run(materialize=True)
    assert real.report.watermark.previous is None and real.report.counts.source == 3
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2, 3]


def test_a_resumed_pipeline_keeps_the_window_cursor(tmp_path: Path) -> None:
    from lakelogic.driver.state import DriverState, SavedNode, load_state
    from lakelogic.driver.windows import Window

    window = Window(
        "incremental",
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2026, 1, 2, tzinfo=UTC),
        "last_success",
        cursor_field=DELTA_VERSION_FIELD,
        cursor="1",
    )
    state = DriverState(tmp_path / "state.json", "p1", datetime(2026, 1, 2, tzinfo=UTC))
    state.nodes["silver.orders"] = SavedNode(status="failed", run_id="r1", window=window)
    state.save()
    loaded = load_state(tmp_path / "state.json").nodes["silver.orders"].window
    assert (loaded.cursor_field, loaded.cursor) == (DELTA_VERSION_FIELD, "1")


@pytest.mark.spark
def test_a_compaction_that_carries_new_rows_then_an_update_reads_each_key_once(
    spark: Any, tmp_path: Path
) -> None:
    """The new row of id 4 moved into a compacted file, which an update then rewrote: before, the
    compacted-away file was read next to the rewrite, so id 4 came twice and merge runs failed for good."""
    path = str(tmp_path / "dt")
    deltalake.write_deltalake(path, _orders([1, 2, 3]))
    deltalake.write_deltalake(path, _orders([4]), mode="append")
    deltalake.DeltaTable(path).optimize.compact()
    deltalake.DeltaTable(path).update(updates={"day": "'2026-02-02'"}, predicate="id = 4")
    changes = read_delta_since(spark, path, 0)
    rows = sorted((r["id"], r["day"]) for r in changes.frame.collect())
    assert [i for i, _ in rows] == [1, 2, 3, 4] and dict(rows)[4] == "2026-02-02"
    assert changes.rewritten_files == 1  # ids 1-3 were compacted with id 4: they come again
    deltalake.write_deltalake(path, _orders([5]), mode="append")
    deltalake.DeltaTable(path).optimize.compact()  # compacts the rewrite with id 5
    again = read_delta_since(spark, path, 3)
    assert [r["id"] for r in again.frame.collect()] == [5]


@pytest.mark.spark
def test_commits_that_add_no_data_move_the_cursor(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run over a compaction or a whole-file delete reads nothing and still passes those commits, so
    log retention never strands the cursor; a whole file deleted re-reads nothing and warns of nothing."""
    from lakelogic.api import DataProcessor

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    source, target = tmp_path / "bronze", tmp_path / "silver"
    deltalake.write_deltalake(str(source), _orders([1]))
    deltalake.write_deltalake(str(source), _orders([2]), mode="append")
    doc = _contract(source, target)
    assert DataProcessor(doc, spark=spark).run(materialize=True).report.watermark.current == 1
    deltalake.DeltaTable(str(source)).delete("id = 1")  # its file goes whole
    idle = DataProcessor(doc, spark=spark).run(materialize=True)
    assert idle.report.status == "no_new_data" and idle.report.watermark.current == 2
    assert not [w for w in idle.report.warnings if "delta_version" in w]


@pytest.mark.spark
def test_a_no_write_run_moves_no_window(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded as run_mode no_write, it is no last success: the driver's window (and its delta_version
    cursor) still starts where the last run that committed ended."""
    from lakelogic.api import DataProcessor
    from lakelogic.runlog import store_for_contract

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    source, target = tmp_path / "bronze", tmp_path / "silver"
    deltalake.write_deltalake(str(source), _orders([1]))
    processor = DataProcessor(_contract(source, target), spark=spark)
    processor.run(record=True)
    store = store_for_contract(processor.contract)
    assert store.latest_run("delta_version_orders")["run_mode"] == "no_write"
    assert store.last_success("delta_version_orders") is None


def _delta_contract(path: Path, strategy: str, **materialization: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "t", "table_name": "delta_target"},
        "model": {
            "fields": [
                {"name": "id", "type": "integer", "required": True},
                {"name": "city", "type": "string"},
                {"name": "v", "type": "string"},
            ]
        },
        "primary_key": ["id"],
        "materialization": {
            "strategy": strategy,
            "format": "delta",
            "target_path": str(path),
            **materialization,
        },
    }


@pytest.mark.spark
def test_merges_into_partitions_with_escaped_names(spark: Any, tmp_path: Path) -> None:
    """A partition value with a character the log escapes (``:``, non-ASCII): the log path is a URI,
    and the stored file was looked up under the encoded name (PATH_NOT_FOUND)."""
    from lakelogic.api import DataProcessor

    path = tmp_path / "silver"
    doc = _delta_contract(path, "merge", partition_by=["city"])
    rows = [(1, "Zürich", "a"), (2, "11:00", "b")]
    first = DataProcessor(doc, spark=spark).run(
        spark.createDataFrame(rows, "id int, city string, v string"), materialize=True, record=False
    )
    assert first.report.status == "succeeded", first.report.error
    update = spark.createDataFrame([(1, "Zürich", "c"), (2, "11:00", "d")], "id int, city string, v string")
    second = DataProcessor(doc, spark=spark).run(update, materialize=True, record=False)
    assert second.report.status == "succeeded", second.report.error
    stored = sorted(
        (r["id"], r["city"], r["v"]) for r in deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    )
    assert stored == [(1, "Zürich", "c"), (2, "11:00", "d")]


@pytest.mark.spark
def test_overwrite_of_a_table_with_values_spark_misreads_is_still_allowed(spark: Any, tmp_path: Path) -> None:
    """Only reading stored rows back needs Spark's partition discovery: an overwrite reads none."""
    from lakelogic.api import DataProcessor

    path = tmp_path / "silver"
    deltalake.write_deltalake(
        str(path),
        pa.table({"id": pa.array([1], pa.int32()), "city": ["Zürich"], "v": ["a"]}),
        partition_by=["city"],
    )
    batch = spark.createDataFrame([(2, "Zürich", "b")], "id int, city string, v string")
    merge = DataProcessor(_delta_contract(path, "merge", partition_by=["city"]), spark=spark)
    refused = merge.run(batch, materialize=True, record=False)  # a merge reads the stored rows back
    assert refused.report.status == "failed" and "misreads" in str(refused.report.error)
    doc = _delta_contract(path, "overwrite", partition_by=["city"])
    result = DataProcessor(doc, spark=spark).run(batch, materialize=True, record=False)
    assert result.report.status == "succeeded", result.report.error
    stored = [(r["id"], r["city"]) for r in deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()]
    assert stored == [(2, "Zürich")]
    # Spark names the folder with the value as it is: a merge reads it back correctly now
    again = merge.run(spark.createDataFrame([(2, "Zürich", "c")], "id int, city string, v string"),
                      materialize=True, record=False)  # fmt: skip
    assert again.report.status == "succeeded", again.report.error


@pytest.mark.spark
def test_a_merge_into_an_append_only_table_is_refused_not_retried(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    path = tmp_path / "silver"
    deltalake.write_deltalake(
        str(path),
        pa.table({"id": pa.array([1], pa.int32()), "city": ["x"], "v": ["a"]}),
        configuration={"delta.appendOnly": "true"},
    )
    batch = spark.createDataFrame([(1, "x", "b")], "id int, city string, v string")
    result = DataProcessor(_delta_contract(path, "merge"), spark=spark).run(
        batch, materialize=True, record=False
    )
    assert result.report.status == "failed" and result.report.error is not None
    assert result.report.error.type == "unsupported" and "append-only" in result.report.error.message
