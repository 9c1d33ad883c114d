"""The share of a key range's rows inside the files a range-restricted scan reads: what decides whether a
keyed Iceberg write over a small range runs as one ``MERGE`` (spark_iceberg_merge.small_key_range)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from lakelogic.tables.key_range import BatchKeys, comparable_bound, share_in_range
from lakelogic.tables.spark_iceberg import IcebergTable
from lakelogic.tables.spark_iceberg_merge import small_key_range
from lakelogic.tables.spark_merge import TimestampMicros
from lakelogic.tables.spark_write import adapter_for, write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

Make = Callable[..., ResolvedTarget]


def test_the_end_of_one_file_is_its_share_of_that_file() -> None:
    files = [(1000, {"id": (0, 999)}), (1000, {"id": (1000, 1999)})]
    # ids 1990..2089: ten of the second file's thousand; the first file does not overlap
    assert share_in_range(files, {"id": (1990, 2089)}) == pytest.approx(0.01)


def test_files_outside_the_range_do_not_count_and_no_overlap_measures_nothing() -> None:
    files = [(10, {"id": (0, 9)}), (30, {"id": (10, 39)})]
    assert share_in_range(files, {"id": (0, 39)}) == 1.0
    assert share_in_range(files, {"id": (0, 4)}) == pytest.approx(0.5)
    assert share_in_range(files, {"id": (100, 200)}) == 1.0


def test_unmeasurable_bounds_count_the_overlapping_file_whole() -> None:
    strings = [(100, {"code": ("a", "m")}), (100, {"code": ("n", "z")})]
    assert share_in_range(strings, {"code": ("b", "c")}) == 1.0
    missing = [(100, {"id": (None, None)}), (100, {"id": (0, 99)})]
    assert share_in_range(missing, {"id": (0, 9)}) == pytest.approx((100 + 10) / 200)


def test_composite_keys_multiply_the_shares_and_one_value_files_are_inside_or_out() -> None:
    files = [(100, {"a": (0, 9), "b": (0, 9)}), (50, {"a": (5, 5), "b": (0, 99)})]
    # first file: half of a times a fifth of b; second: a inside, b a fiftieth
    expected = (100 * 0.5 * 0.2 + 50 * 1.0 * 0.02) / 150
    assert share_in_range(files, {"a": (5, 14), "b": (0, 1)}) == pytest.approx(expected)


def test_decimal_dates_and_timestamps_compare_as_numbers() -> None:
    decimals = [(10, {"v": (Decimal("0.00"), Decimal("10.00"))})]
    assert share_in_range(decimals, {"v": (Decimal("7.50"), Decimal("20.00"))}) == pytest.approx(0.25)
    assert comparable_bound(date(1970, 1, 11)) == 10
    assert comparable_bound(TimestampMicros(5)) == 5
    days = [(10, {"d": (0, 9)})]
    assert share_in_range(days, {"d": (date(1970, 1, 6), date(1970, 2, 1))}) == pytest.approx(0.5)


@pytest.mark.spark
def test_a_large_file_touched_at_its_end_is_a_small_range_for_one_merge(
    spark: Any, make_target: Make
) -> None:
    """One file of 10,000 keys; a batch of its last 100 keys plus 100 new ones. Spark's estimate counts the
    whole file, so a limit below it would take two statements; the share in range (1%) makes it small,
    while a batch over the whole table stays large."""
    target = make_target("iceberg")
    seed = spark.range(0, 10_000).selectExpr("id", "concat('name', id) AS name").coalesce(1)
    write_frame(spark, seed, target, WriteSpec(strategy="merge", primary_key=("id",)), CommitStamp("s", "o"))
    table = adapter_for(spark, target)
    assert isinstance(table, IcebergTable)
    recent = BatchKeys(rows=200, bounds={"id": (9_900, 10_099)})
    whole_file = table.estimated_scan_bytes(recent.predicate())
    assert table.share_in_key_range(recent.bounds) == pytest.approx(0.01)
    limit = replace(
        WriteSpec(strategy="merge", primary_key=("id",)), one_statement_merge_max_bytes=whole_file // 10
    )
    assert small_key_range(table, recent, limit)
    spread = BatchKeys(rows=200, bounds={"id": (0, 10_099)})
    assert table.share_in_key_range(spread.bounds) == 1.0
    assert not small_key_range(table, spread, limit)
    # without that scaling (the limit below even the range's own rows) it is two statements
    assert not small_key_range(
        table, recent, replace(limit, one_statement_merge_max_bytes=whole_file // 1000)
    )


@pytest.mark.spark
def test_the_share_is_read_at_the_snapshot_the_write_pinned(spark: Any, make_target: Make) -> None:
    """A file another writer adds after this write's first read does not change its estimate."""
    target = make_target("iceberg")
    spec = WriteSpec(strategy="append")
    write_frame(spark, spark.range(0, 100).selectExpr("id").coalesce(1), target, spec, CommitStamp("a", "o"))
    table = adapter_for(spark, target)
    assert isinstance(table, IcebergTable)
    table.read()  # pins main's snapshot
    write_frame(spark, spark.range(50, 60).selectExpr("id").coalesce(1), target, spec, CommitStamp("b", "o"))
    assert table.share_in_key_range({"id": (0, 9)}) == pytest.approx(0.1)
    assert adapter_for(spark, target).share_in_key_range({"id": (50, 59)}) == pytest.approx((10 + 10) / 110)


@pytest.mark.spark
def test_java_planning_and_the_metadata_table_give_the_same_file_bounds(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The share of few files comes from Iceberg's Java scan planning, of many from the ``data_files``
    table: both must see the same files and bounds, for every key type a range takes."""
    from lakelogic.tables import spark_iceberg
    from lakelogic.tables.iceberg_java import JavaIcebergTable

    target = make_target("iceberg")
    spec = WriteSpec(strategy="append")
    for start in (0, 100, 200):  # three files of disjoint ranges in every column
        part = spark.range(start, start + 100).selectExpr(
            "id",
            "format_string('k%05d', id) AS code",
            "date_add(DATE'2024-01-01', CAST(id AS INT)) AS day",
            "timestamp_micros(1700000000000000 + id * 1000000) AS at",
            "CAST(id / 4 AS DECIMAL(10, 2)) AS amount",
        )
        write_frame(spark, part.coalesce(1), target, spec, CommitStamp(f"r{start}", "o"))
    table = adapter_for(spark, target)
    assert isinstance(table, IcebergTable)
    bounds: dict[str, tuple[Any, Any]] = {
        "id": (150, 249),
        "code": ("k00150", "k00249"),
        "day": (date(2024, 5, 30), date(2024, 9, 6)),
        "at": (
            TimestampMicros(1700000000000000 + 150 * 10**6),
            TimestampMicros(1700000000000000 + 249 * 10**6),
        ),
        "amount": (Decimal("37.50"), Decimal("62.25")),
    }
    table.read()  # pins main's snapshot
    pinned = table.read_snapshot
    assert pinned is not None
    planned = JavaIcebergTable(spark, table.sql_name).files_in_key_range(pinned, bounds, limit=10)
    assert planned is not None and len(planned) == 2  # the first file lies outside the range: pruned
    assert sorted(rows for rows, _ in planned) == [100, 100]
    second = min(planned, key=lambda f: f[1]["id"][0])[1]
    assert second["id"] == (100, 199)
    assert second["code"] == ("k00100", "k00199")
    assert second["day"] == (comparable_bound(date(2024, 4, 10)), comparable_bound(date(2024, 7, 18)))
    assert second["at"] == (1700000000000000 + 100 * 10**6, 1700000000000000 + 199 * 10**6)
    assert second["amount"] == (Decimal("25.00"), Decimal("49.75"))
    assert JavaIcebergTable(spark, table.sql_name).files_in_key_range(pinned, bounds, limit=1) is None
    for column, bound in bounds.items():
        one = {column: bound}
        by_java = table.share_in_key_range(one)
        monkeypatch.setattr(spark_iceberg, "_FEW_FILES", 0)  # the metadata table instead
        by_query = table.share_in_key_range(one)
        monkeypatch.undo()
        assert by_java == pytest.approx(by_query), column
        assert 0.0 < by_java < 1.0 or column == "code", column  # strings are not measured inside a file


@pytest.mark.spark
def test_timestamp_keys_near_the_epoch_fall_back_to_the_query(spark: Any, make_target: Make) -> None:
    """py4j sends a small int as an Integer, which Iceberg does not take for a timestamp: the Java path
    declines (no failed write), and the share comes from the metadata table."""
    from lakelogic.tables.iceberg_java import JavaIcebergTable

    target = make_target("iceberg")
    spec = WriteSpec(strategy="append")
    frame = spark.range(0, 100).selectExpr("timestamp_micros(id * 1000000) AS at")
    write_frame(spark, frame.coalesce(1), target, spec, CommitStamp("e", "o"))
    table = adapter_for(spark, target)
    assert isinstance(table, IcebergTable)
    bounds: dict[str, tuple[Any, Any]] = {"at": (TimestampMicros(0), TimestampMicros(9 * 10**6))}
    table.read()
    assert table.read_snapshot is not None
    java = JavaIcebergTable(spark, table.sql_name)
    assert java.files_in_key_range(table.read_snapshot, bounds, limit=10) is None
    # seconds 0..9 of 0..99, measured in microseconds
    assert table.share_in_key_range(bounds) == pytest.approx((9 * 10**6 + 1) / (99 * 10**6 + 1))
