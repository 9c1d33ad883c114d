"""Processing windows pushed into file reads (SEMANTICS §3.4, DRIVER §8).

File selection is tested without Spark (mtimes set with os.utime, dates in names); one Spark test runs
an incremental contract twice through the API, the second window starting after the first run.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.sources.windows import WINDOW_NOT_APPLICABLE, ReadWindow, decide, name_date, select_files

T0 = datetime(2024, 3, 10, 12, 0, tzinfo=UTC)


def _file(folder: Path, name: str, mtime: datetime) -> str:
    path = folder / name
    path.write_text("id\n1\n")
    stamp = mtime.timestamp()
    os.utime(path, (stamp, stamp))
    return str(path)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders_2024-03-09.csv", date(2024, 3, 9)),
        ("orders_20240309.jsonl", date(2024, 3, 9)),
        ("batch_2024-03-09_20240310.csv", date(2024, 3, 10)),  # the last date in the name wins
        ("orders_99999999.csv", None),  # 8 digits that are not a date
        ("orders_123.csv", None),
        ("orders.csv", None),
    ],
)
def test_name_date(name: str, expected: date | None) -> None:
    assert name_date(f"/landing/x/{name}") == expected


def test_incremental_selects_by_mtime_in_half_open_window(tmp_path: Path) -> None:
    old = _file(tmp_path, "a.csv", T0 - timedelta(hours=2))
    at_start = _file(tmp_path, "b.csv", T0)
    inside = _file(tmp_path, "c.csv", T0 + timedelta(minutes=30))
    at_end = _file(tmp_path, "d.csv", T0 + timedelta(hours=1))
    window = ReadWindow("incremental", T0, T0 + timedelta(hours=1))
    assert select_files([old, at_start, inside, at_end], window) == [at_start, inside]
    # No start (first run): everything that arrived before the end.
    assert select_files([old, at_start, inside, at_end], ReadWindow("full", None, T0)) == [old]


def test_last_success_window_ignores_name_dates(tmp_path: Path) -> None:
    # A late file for an old business day arrives now: arrival time decides, not the name.
    late = _file(tmp_path, "orders_2020-01-01.csv", T0 + timedelta(minutes=5))
    decision = decide(
        [late],
        ReadWindow("incremental", T0, T0 + timedelta(hours=1)),
        load_mode="incremental",
        watermark_field=None,
    )
    assert decision.files == [late] and decision.basis == "file_mtime" and decision.applied


@pytest.mark.parametrize("label", ["range", "yesterday", "reprocess", "backfill_20240309"])
def test_explicit_windows_select_by_name_date_then_mtime(tmp_path: Path, label: str) -> None:
    day = datetime(2024, 3, 9, tzinfo=UTC)
    # Arrived long after its business day: still selected for that day by its name.
    named_in = _file(tmp_path, "orders_20240309.csv", day + timedelta(days=30))
    named_out = _file(tmp_path, "orders_2024-03-10.csv", day + timedelta(hours=1))
    unnamed_in = _file(tmp_path, "extra.csv", day + timedelta(hours=3))
    unnamed_out = _file(tmp_path, "other.csv", day - timedelta(hours=3))
    decision = decide(
        [named_in, named_out, unnamed_in, unnamed_out],
        ReadWindow(label, day, day + timedelta(days=1)),
        load_mode="incremental",
        watermark_field=None,
    )
    assert decision.files == [named_in, unnamed_in]
    assert decision.basis == "file_name_date" and decision.skipped_files == 2
    assert decision.reason is None


def test_no_qualifying_file_is_no_fallback(tmp_path: Path) -> None:
    old = _file(tmp_path, "a.csv", T0 - timedelta(days=1))
    decision = decide(
        [old], ReadWindow("incremental", T0, T0 + timedelta(hours=1)), load_mode="cdc", watermark_field=None
    )
    assert decision.files == [] and decision.applied


def test_watermark_field_reads_every_file_and_filters_rows(tmp_path: Path) -> None:
    old = _file(tmp_path, "a.csv", T0 - timedelta(days=1))
    window = ReadWindow("incremental", T0, T0 + timedelta(hours=1))
    decision = decide([old], window, load_mode="incremental", watermark_field="updated_at")
    assert decision.files == [old] and decision.row_window is not None
    assert (decision.row_window.field, decision.row_window.start, decision.row_window.end) == (
        "updated_at",
        T0,
        T0 + timedelta(hours=1),
    )


def test_full_contracts_read_everything_unless_explicit_window_with_a_column(tmp_path: Path) -> None:
    old = _file(tmp_path, "orders_2020-01-01.csv", T0 - timedelta(days=1))
    last_success = ReadWindow("incremental", T0, T0 + timedelta(hours=1))
    ranged = ReadWindow("range", T0, T0 + timedelta(days=1))
    for window in (last_success, ranged):
        decision = decide([old], window, load_mode="full", watermark_field=None)
        assert decision.files == [old] and decision.reason == WINDOW_NOT_APPLICABLE
        assert not decision.applied
    with_column = decide([old], ranged, load_mode="full", watermark_field="updated_at")
    assert with_column.files == [old] and with_column.row_window is not None
    # No window at all (a plain standalone run): untouched, nothing recorded.
    plain = decide([old], None, load_mode="incremental", watermark_field=None)
    assert plain.files == [old] and plain.reason is None and not plain.applied


def test_read_window_accepts_tuples_objects_and_naive_datetimes() -> None:
    naive = datetime(2024, 3, 10, 12, 0)
    assert ReadWindow.of((naive, None)) == ReadWindow("window", T0, None)
    assert ReadWindow.of(None) is None

    class DriverWindow:
        label, start, end, reason = "backfill_20240310", T0, T0 + timedelta(days=1), None

    parsed = ReadWindow.of(DriverWindow())
    assert parsed is not None and parsed.explicit and parsed.end == T0 + timedelta(days=1)
    assert not ReadWindow("incremental", T0, None).explicit
    with pytest.raises(ValueError):
        ReadWindow.of((T0,))


# --- Spark: the window is pushed into the read -------------------------------------------------------

FIELDS = [{"name": "id", "type": "integer", "required": True}, {"name": "updated_at", "type": "timestamp"}]


def _contract(landing: Path, target: Path, **source: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Windowed orders", "table_name": "windowed_orders"},
        "model": {"fields": FIELDS},
        "source": {
            "type": "landing",
            "path": str(landing),
            "format": "csv",
            "load_mode": "incremental",
            **source,
        },
        "materialization": {"strategy": "append", "target_path": str(target)},
    }


def _target_ids(target: Path) -> list[int]:
    from deltalake import DeltaTable

    return sorted(r["id"] for r in DeltaTable(str(target)).to_pyarrow_table().to_pylist())


@pytest.mark.spark
def test_second_incremental_run_reads_no_files_and_adds_no_rows(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    landing, target = tmp_path / "landing", tmp_path / "bronze"
    landing.mkdir()
    arrived = datetime.now(UTC) - timedelta(hours=1)
    for name, rows in (
        ("a.csv", "1,2024-03-01 00:00:00\n2,2024-03-01 00:00:00\n"),
        ("b.csv", "3,2024-03-02\n"),
    ):
        path = landing / name
        path.write_text("id,updated_at\n" + rows)
        os.utime(path, (arrived.timestamp(), arrived.timestamp()))
    processor = DataProcessor(_contract(landing, target), spark=spark)

    first_end = datetime.now(UTC)
    first = processor.run(materialize=True, window=ReadWindow("full", None, first_end, "no_previous_success"))
    assert first.report.status == "succeeded", first.report.error
    assert first.report.source.files_count == 2 and first.report.window.reason == "no_previous_success"
    assert _target_ids(target) == [1, 2, 3]

    second = processor.run(materialize=True, window=ReadWindow("incremental", first_end, datetime.now(UTC)))
    assert second.report.status == "no_new_data", second.report.error
    assert second.report.source.files_count == 0 and second.report.counts.source == 0
    assert _target_ids(target) == [1, 2, 3], "no duplicated rows"

    # A file that arrives after the first run is the only thing the next window reads.
    late = landing / "c.csv"
    late.write_text("id,updated_at\n4,2024-03-03\n")
    third = processor.run(materialize=True, window=ReadWindow("incremental", first_end, datetime.now(UTC)))
    assert third.report.status == "succeeded", third.report.error
    assert third.report.source.files == [str(late)]
    assert third.report.window.reason == "file_mtime"  # no reason given: how the window was applied
    assert _target_ids(target) == [1, 2, 3, 4]


@pytest.mark.spark
def test_watermark_field_filters_rows_and_reports_the_cursor(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "all.csv").write_text(
        "id,updated_at\n1,2024-03-01 10:00:00\n2,2024-03-02 10:00:00\n"
        "3,2024-03-03 09:00:00\n4,2024-03-04 00:00:00\n"
    )
    doc = _contract(landing, tmp_path / "unused", watermark_field="updated_at")
    start, end = datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC)
    result = DataProcessor(doc, spark=spark).run(window=ReadWindow("incremental", start, end))
    good, _ = result
    assert result.report.status == "succeeded", result.report.error
    assert good is not None and sorted(r["id"] for r in good.collect()) == [2, 3]
    assert result.report.counts.source == 2
    wm = result.report.watermark
    assert wm.field == "updated_at" and wm.previous == start
    assert wm.current == datetime(2024, 3, 3, 9, 0, tzinfo=UTC)


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["text", "compact", "integer"])
def test_a_window_filters_a_dataframe_source_by_any_date_form(spark: Any, tmp_path: Path, kind: str) -> None:
    """§3.4 on data already read (a DataFrame passed to run()): `start <= watermark < end`, with the
    watermark as ISO text, YYYYMMDD text or a YYYYMMDD integer. A NULL watermark is only read by a window
    that starts at the beginning, never by every later window."""
    from lakelogic.api import DataProcessor

    values = {
        "text": ["2024-03-01", "2024-03-02 10:00:00", "2024-03-04", None],
        "compact": ["20240301", "20240302", "20240304", None],
        "integer": [20240301, 20240302, 20240304, None],
    }[kind]
    dtype = "bigint" if kind == "integer" else "string"
    frame = spark.createDataFrame(list(enumerate(values, start=1)), f"id int, updated_at {dtype}")
    doc = _contract(tmp_path, tmp_path / "unused", watermark_field="updated_at")
    doc["model"] = {"fields": [FIELDS[0]]}  # the watermark passes through in its own form
    processor = DataProcessor(doc, spark=spark)
    bounded = ReadWindow("incremental", datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
    result = processor.run(frame, window=bounded)
    assert result.report.status == "succeeded", result.report.error
    assert sorted(r["id"] for r in result.good.collect()) == [2]
    assert result.report.watermark.field == "updated_at" and result.report.watermark.current is not None
    first = processor.run(frame, window=ReadWindow("incremental", None, datetime(2024, 3, 3, tzinfo=UTC)))
    assert sorted(r["id"] for r in first.good.collect()) == [1, 2, 4]


@pytest.mark.spark
@pytest.mark.parametrize(("behavior", "status"), [(None, "no_new_data"), ("fail", "failed")])
def test_an_empty_window_follows_empty_behavior(
    spark: Any, tmp_path: Path, behavior: str | None, status: str
) -> None:
    """§3.3: zero rows -> `skip` (the incremental default) is no_new_data, an explicit `fail` fails."""
    from lakelogic.api import DataProcessor

    frame = spark.createDataFrame([(1, "2024-03-01")], "id int, updated_at string")
    extra = {"empty_behavior": behavior} if behavior else {}
    doc = _contract(tmp_path, tmp_path / "unused", watermark_field="updated_at", **extra)
    window = ReadWindow("incremental", datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
    result = DataProcessor(doc, spark=spark).run(frame, window=window)
    assert result.report.status == status
    if status == "failed":
        assert result.report.error is not None and result.report.error.type == "empty_source"


@pytest.mark.spark
def test_a_standalone_incremental_run_starts_at_the_targets_watermark(spark: Any, tmp_path: Path) -> None:
    """§3.4 `max_target` (the default strategy): with no window from a caller, the lower bound is
    MAX(watermark_field) in the contract's own target; no target yet means a full read."""
    from lakelogic.api import DataProcessor

    doc = _contract(tmp_path, tmp_path / "target", watermark_field="updated_at")
    doc["model"] = {"fields": [FIELDS[0], {"name": "updated_at", "type": "date"}]}
    doc["primary_key"] = ["id"]
    doc["materialization"] = {"strategy": "merge", "target_path": str(tmp_path / "target")}
    processor = DataProcessor(doc, spark=spark)
    first = spark.createDataFrame([(1, "2024-03-01"), (2, "2024-03-02")], "id int, updated_at string")
    one = processor.run(first, materialize=True)
    assert one.report.counts.source == 2 and one.report.window.reason == "no_previous_target_watermark"
    later = spark.createDataFrame(
        [(1, "2024-03-01"), (2, "2024-03-02"), (3, "2024-03-03")], "id int, updated_at string"
    )
    two = processor.run(later, materialize=True)
    assert two.report.error is None and two.report.window.reason == "max_target"
    assert two.report.window.start == datetime(2024, 3, 2, tzinfo=UTC)
    assert two.report.counts.source == 2, "rows from the stored maximum on (merge absorbs the boundary row)"
    assert _target_ids(tmp_path / "target") == [1, 2, 3]


@pytest.mark.spark
def test_a_window_filters_a_table_source_by_its_watermark(spark: Any, tmp_path: Path) -> None:
    """§3.4 on a table source: no files to select, so the window's watermark row filter applies."""
    from lakelogic.api import DataProcessor

    name = "default.windowed_table_source"
    rows = [(1, "2024-03-01"), (2, "2024-03-02 10:00:00"), (3, "2024-03-04")]
    spark.createDataFrame(rows, "id int, updated_at string").write.mode("overwrite").saveAsTable(name)
    try:
        doc = _contract(tmp_path, tmp_path / "unused", watermark_field="updated_at")
        doc["source"] = {**doc["source"], "type": "table", "path": name}
        doc["source"].pop("format")
        doc["model"] = {"fields": [FIELDS[0]]}
        window = ReadWindow("incremental", datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
        result = DataProcessor(doc, spark=spark).run(window=window)
        assert result.report.status == "succeeded", result.report.error
        assert sorted(r["id"] for r in result.good.collect()) == [2]
        assert result.report.counts.source == 1
        assert result.report.watermark.current == datetime(2024, 3, 2, 10, tzinfo=UTC)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.spark
def test_a_table_source_without_watermark_field_is_windowed_by_the_processed_at_default(
    spark: Any, tmp_path: Path
) -> None:
    """§3.4: `watermark_field` defaults to `_lakelogic_processed_at`. On a table source (nothing to select by
    file arrival) the rows are filtered by it: the window's rows only, not a full read every run."""
    from lakelogic.api import DataProcessor

    name = "default.processed_at_table_source"
    rows = [(1, "2024-03-01 00:00:00"), (2, "2024-03-02 10:00:00"), (3, "2024-03-04 00:00:00")]
    frame = spark.createDataFrame(rows, "id int, _lakelogic_processed_at string")
    frame.selectExpr(
        "id", "CAST(_lakelogic_processed_at AS TIMESTAMP) AS _lakelogic_processed_at"
    ).write.mode("overwrite").saveAsTable(name)
    try:
        doc = _contract(tmp_path, tmp_path / "unused")
        doc["source"] = {**doc["source"], "type": "table", "path": name}
        doc["source"].pop("format")
        doc["source"].pop("watermark_field", None)
        doc["model"] = {"fields": [FIELDS[0]]}
        window = ReadWindow("incremental", datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
        result = DataProcessor(doc, spark=spark).run(window=window)
        assert result.report.status == "succeeded", result.report.error
        assert sorted(r["id"] for r in result.good.collect()) == [2]
        assert result.report.watermark.current == datetime(2024, 3, 2, 10, tzinfo=UTC)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.spark
def test_standalone_bounds_of_lookback_and_date_range(spark: Any) -> None:
    """§3.4: lookback = as_of - lookback; date_range = [from_date, to_date + 1 day); lookback widens."""
    from lakelogic.engines.spark.source_bounds import standalone_window
    from lakelogic.plan.steps import ReadSource

    as_of = datetime(2024, 3, 10, 12, tzinfo=UTC)

    def window(**settings: Any) -> ReadWindow | None:
        step = ReadSource(yaml_path="source", source_type="landing", path=None, format=None,
                          load_mode="incremental", settings=settings)  # fmt: skip
        return standalone_window(spark, {}, step, as_of, target=None)

    looked = window(watermark_strategy="lookback", lookback="2d")
    assert looked is not None and (looked.start, looked.end) == (datetime(2024, 3, 8, 12, tzinfo=UTC), as_of)
    ranged = window(
        watermark_strategy="date_range", from_date="2024-03-01", to_date="2024-03-03", lookback="1d"
    )
    assert ranged is not None and ranged.label == "range"  # files by the date in their name
    assert (ranged.start, ranged.end) == (datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
    first = window(watermark_strategy="pipeline_log", pipeline_name="never_ran_s29")
    assert first is not None and first.start is None and first.reason == "no_previous_success"


@pytest.mark.spark
def test_a_bounded_window_keeps_malformed_records(spark: Any, tmp_path: Path) -> None:
    """§3.3: a malformed record is quarantined, never dropped: a row window cannot place it (its
    watermark cannot be read), so every window that reads its file quarantines it."""
    from lakelogic.api import DataProcessor

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "all.jsonl").write_text(
        '{"id": 1, "updated_at": "2024-03-01"}\n'
        '{"id": 2, "updated_at": "2024-03-02"}\n'
        '{"id": 3, "updated_at":\n'
    )
    doc = _contract(landing, tmp_path / "unused", watermark_field="updated_at", format="jsonl")
    window = ReadWindow("incremental", datetime(2024, 3, 2, tzinfo=UTC), datetime(2024, 3, 4, tzinfo=UTC))
    result = DataProcessor(doc, spark=spark).run(window=window)
    assert result.report.error is None, result.report.error
    counts = result.report.counts
    assert (counts.source, counts.good, counts.quarantined) == (2, 1, 1)
    assert result.bad.collect()[0]["_lakelogic_errors"][0].startswith("Rule failed: malformed_record")
