"""File skipping of keyed writes on Delta (delta-rs) tables by the files' stated ranges (file_ranges.py).

The proof that a file was skipped, as in test_key_range.py: the data file holding only keys below the
batch's range is deleted from disk before the write. A write that opened it would fail; one that skips it
by its statistics never opens it, and the rows in range come out as SEMANTICS §13.2/§13.3 say."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lakelogic.tables.file_ranges import may_hold, stated_range, top_level_ranges
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import Scd2Spec, WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

Make = Callable[..., ResolvedTarget]


def test_a_file_is_skipped_only_when_its_range_misses_the_bounds() -> None:
    ranges = {"id": (10, 19), "name": ("b", "d"), "day": (date(2024, 1, 1), date(2024, 1, 31))}
    assert may_hold(ranges, {"id": (19, 40)})  # touching ends overlap
    assert may_hold(ranges, {"id": (0, 10)})
    assert not may_hold(ranges, {"id": (20, 40)})
    assert not may_hold(ranges, {"id": (0, 9)})
    assert not may_hold(ranges, {"name": ("da", "z")})  # 'd' < 'da'
    assert may_hold(ranges, {"name": ("d", "z")})
    assert not may_hold(ranges, {"day": (date(2024, 2, 1), date(2024, 3, 1))})
    assert not may_hold(ranges, {"id": (0, 100), "name": ("e", "f")})  # every bounded column must overlap
    assert may_hold({}, {"id": (20, 40)})  # no statistics: always read
    assert may_hold(ranges, {"other": (0, 1)})


def test_values_of_another_kind_never_skip_a_file() -> None:
    """A bound compares only with a stated value of its own kind: no int/str, date/timestamp or bool/int
    mixing, and decimals and timestamps are not compared at all."""
    assert may_hold({"id": (10, 19)}, {"id": ("20", "40")})
    assert may_hold(
        {"d": (date(2024, 1, 1), date(2024, 1, 2))}, {"d": (datetime(2025, 1, 1), datetime(2025, 2, 1))}
    )
    assert may_hold({"m": (Decimal("1.5"), Decimal("2.5"))}, {"m": (Decimal("3"), Decimal("4"))})
    assert may_hold({"id": (0, 1)}, {"id": (True, True)})


def test_stated_ranges_keep_only_what_is_exact() -> None:
    long = "x" * 32
    assert stated_range("a", long) == ("a", None)  # a 32-character max may be a cut prefix
    assert stated_range(long, "y") == (long, "y")  # a cut min is still a lower bound
    assert stated_range(1, 5) == (1, 5)
    assert stated_range(datetime(2024, 1, 1), datetime(2024, 1, 2)) is None  # Delta keeps milliseconds
    assert stated_range(Decimal("1"), Decimal("2")) is None
    assert stated_range(None, None) is None
    assert stated_range(False, True) is None
    # half a range is kept and used on its side only
    assert not may_hold({"s": stated_range("m", long)}, {"s": ("a", "b")})
    assert may_hold({"s": stated_range("m", long)}, {"s": ("zz", "zzz")})


def test_flattened_names_that_may_belong_to_a_struct_are_left_out() -> None:
    action = {"min.id": 1, "max.id": 9, "min.a.b": 1, "max.a.b": 2, "min.x": None, "max.x": None}
    assert top_level_ranges(action, ["id", "a.b", "x"], nested=["a"]) == {"id": (1, 9)}
    assert top_level_ranges(action, ["id", "a.b"], nested=[]) == {"id": (1, 9), "a.b": (1, 2)}


def _delta_files_by_range(path: str, spark: Any) -> list[tuple[str, int]]:
    rows = (
        spark.read.parquet(path).selectExpr("input_file_name() AS f", "id").groupBy("f").max("id").collect()
    )
    return [(str(r["f"]), int(r["max(id)"])) for r in rows]


def _seed_four_files(spark: Any, target: ResolvedTarget, spec: WriteSpec) -> None:
    """400 rows in 4 files of disjoint id ranges (one write of new keys each), then the file of ids 0-99
    removed from disk."""
    for start in range(0, 400, 100):
        rows = spark.range(start, start + 100, numPartitions=1)
        seed = rows.selectExpr("CAST(id AS INT) AS id", "concat('n', id) AS name")
        write_frame(spark, seed, target, spec, CommitStamp(f"seed-{start}", "o"))
    files = _delta_files_by_range(target.name, spark)
    low = [f for f, high in files if high < 100]
    assert len(files) == 4 and len(low) == 1
    Path(low[0].removeprefix("file:")).unlink()


def _all_versions(target: ResolvedTarget, lowest: int) -> list[dict[str, Any]]:
    """Rows with ``id >= lowest``, read by delta-rs (which skips the removed file by its statistics)."""
    from deltalake import DeltaTable

    return list(DeltaTable(target.name).to_pyarrow_table(filters=[("id", ">=", lowest)]).to_pylist())


def _rows_from(target: ResolvedTarget, lowest: int) -> dict[int, dict[str, Any]]:
    return {int(r["id"]): r for r in _all_versions(target, lowest)}


@pytest.mark.spark
def test_delta_merge_never_opens_files_outside_the_batch_key_range(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    spec = WriteSpec(strategy="merge", primary_key=("id",))
    _seed_four_files(spark, target, spec)

    batch = spark.createDataFrame([(300, "n300"), (301, "changed"), (450, "new")], "id int, name string")
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))

    assert (out.rows_updated, out.rows_inserted) == (1, 1)
    rows = _rows_from(target, 100)
    assert len(rows) == 301
    assert (rows[301]["name"], rows[450]["name"], rows[300]["name"], rows[100]["name"]) == (
        "changed",
        "new",
        "n300",
        "n100",
    )


@pytest.mark.spark
def test_delta_scd2_never_opens_files_outside_the_batch_key_range(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    spec = WriteSpec(strategy="scd2", scd2=Scd2Spec(business_key=("id",), track_columns=("name",)))
    _seed_four_files(spark, target, spec)

    batch = spark.createDataFrame([(300, "n300"), (301, "changed"), (450, "new")], "id int, name string")
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))

    assert (out.rows_inserted, out.versions_closed) == (2, 1)
    versions = sorted((r["id"], r["name"], r["is_current"]) for r in _all_versions(target, 301))
    expected = [(301, "changed", True), (301, "n301", False), (450, "new", True)]
    assert versions == sorted(expected + [(i, f"n{i}", True) for i in range(302, 400)])
