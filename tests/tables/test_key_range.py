"""Key-range pruning of the target scans of merge and SCD2 (tables/key_range.py).

The proof that a scan was pruned: the data file holding only keys below the batch's range is deleted from
disk before the write. A write that scanned the whole table would fail to open it; a pruned one never
reads it, and the rows in range come out exactly as SEMANTICS §13.2/§13.3 say."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from lakelogic.tables.key_range import batch_keys
from lakelogic.tables.spark_iceberg import quote_table
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import Scd2Spec, WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, name string"
MERGE = WriteSpec(strategy="merge", primary_key=("id",))


def test_batch_keys_bounds_only_columns_with_exact_literals(spark: Any) -> None:
    rows = [
        (3, "b", date(2024, 5, 1), Decimal("1.50"), None, 1.5),
        (9, "a", date(2024, 1, 2), Decimal("-2.25"), None, 0.5),
        (None, None, None, None, None, None),
    ]
    schema = "i int, s string, d date, m decimal(5,2), n long, f double"
    found = batch_keys(spark.createDataFrame(rows, schema), ["i", "s", "d", "m", "n", "f"])
    assert found.rows == 3
    # `n` is all NULL (no bound); a double has no exact literal for every value (not ranged)
    assert dict(found.bounds) == {
        "i": (3, 9),
        "s": ("a", "b"),
        "d": (date(2024, 1, 2), date(2024, 5, 1)),
        "m": (Decimal("-2.25"), Decimal("1.50")),
    }
    assert found.predicate("t") == (
        "t.`i` BETWEEN 3 AND 9 AND t.`s` BETWEEN 'a' AND 'b' AND "
        "t.`d` BETWEEN DATE '2024-01-02' AND DATE '2024-05-01' AND t.`m` BETWEEN -2.25BD AND 1.50BD"
    )
    quoted = batch_keys(spark.createDataFrame([("O'Neil",), ("x",)], "s string"), ["s"])
    assert (quoted.rows, dict(quoted.bounds), quoted.predicate()) == (2, {}, None)
    local = spark.createDataFrame([(1,)], "k int").selectExpr("localtimestamp() AS k")
    assert dict(batch_keys(local, ["k"]).bounds) == {}  # without time zone: not ranged


def test_timestamp_bounds_are_exact_microseconds_in_any_session_time_zone(spark: Any) -> None:
    """A bound is the key's instant in microseconds, so a row at either end stays (no rounding, no shift
    when the session time zone differs from the one the rows were written in)."""
    micros = [1_711_846_799_999_999, 1_711_846_800_000_001, 1_711_852_200_500_000]
    target = spark.createDataFrame([(m,) for m in micros], "m long").selectExpr("timestamp_micros(m) AS ts")
    batch = target.where(f"unix_micros(ts) > {micros[0]}")
    found = batch_keys(batch, ["ts"])
    assert found.predicate() == (
        f"`ts` BETWEEN timestamp_micros({micros[1]}L) AND timestamp_micros({micros[2]}L)"
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        kept = found.restrict(target).selectExpr("unix_micros(ts) AS m").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert sorted(r["m"] for r in kept) == micros[1:]


def test_restricted_frame_keeps_exactly_the_rows_in_range(spark: Any) -> None:
    batch = spark.createDataFrame([(5, "x"), (7, "y")], SCHEMA)
    target = spark.range(0, 12).selectExpr("CAST(id AS INT) AS id", "'t' AS name")
    kept = sorted(r["id"] for r in batch_keys(batch, ["id"]).restrict(target).collect())
    assert kept == [5, 6, 7]


def _range_layout(spark: Any, table: str) -> None:
    """Rewrite the table as 4 files of disjoint id ranges (as after a sorted compaction)."""
    spark.sql(f"INSERT OVERWRITE {table} SELECT /*+ REPARTITION_BY_RANGE(4, id) */ * FROM {table}")


def _delete_low_file(spark: Any, table: str, below: int) -> None:
    """Remove from disk the data file(s) holding only ids below ``below``."""
    files = spark.sql(f"SELECT _file AS f, max(id) AS hi FROM {table} GROUP BY _file").collect()
    low = [r["f"] for r in files if r["hi"] < below]
    assert low and len(low) < len(files)  # the layout really has files outside the batch's range
    for name in low:
        Path(urlparse(name).path).unlink()


def _seed(spark: Any, target: ResolvedTarget, spec: WriteSpec, frame: Any) -> str:
    write_frame(spark, frame, target, spec, CommitStamp("seed", "o"))
    table = quote_table(target.name)
    _range_layout(spark, table)
    return table


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_merge_never_reads_files_outside_the_batch_key_range(
    spark: Any, make_target: Make, mode: str
) -> None:
    """merge-on-read takes the single-scan path; copy-on-write the change-set path."""
    target = make_target("iceberg")
    seed = spark.range(0, 400).selectExpr("CAST(id AS INT) AS id", "concat('n', id) AS name")
    table = _seed(spark, target, MERGE, seed)
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.merge.mode' = '{mode}')")
    _delete_low_file(spark, table, below=300)

    batch = spark.createDataFrame([(300, "n300"), (301, "changed"), (399, "last"), (450, "new")], SCHEMA)
    out = write_frame(spark, batch, target, MERGE, CommitStamp("run-1", "o"))

    assert (out.rows_updated, out.rows_inserted) == (2, 1)
    rows = {r["id"]: r["name"] for r in spark.sql(f"SELECT id, name FROM {table} WHERE id >= 300").collect()}
    assert len(rows) == 101
    assert (rows[300], rows[301], rows[399], rows[450], rows[350]) == (
        "n300",
        "changed",
        "last",
        "new",
        "n350",
    )


def test_timestamp_key_merge_reads_only_the_batch_time_range(spark: Any, make_target: Make) -> None:
    """The ``timestamp_micros`` bound is pushed into the Iceberg scan like any literal."""
    target = make_target("iceberg")
    spec = WriteSpec(strategy="merge", primary_key=("ts",))  # the timestamp alone: no other bound
    seed = spark.range(0, 400).selectExpr(
        "CAST(id AS INT) AS id", "timestamp_seconds(1700000000 + id * 60) AS ts", "concat('n', id) AS name"
    )
    write_frame(spark, seed, target, spec, CommitStamp("seed", "o"))
    table = quote_table(target.name)
    spark.sql(f"INSERT OVERWRITE {table} SELECT /*+ REPARTITION_BY_RANGE(4, ts) */ * FROM {table}")
    _delete_low_file(spark, table, below=300)

    batch = spark.range(350, 410).selectExpr(
        "CAST(id AS INT) AS id", "timestamp_seconds(1700000000 + id * 60) AS ts", "'changed' AS name"
    )
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))

    assert (out.rows_updated, out.rows_inserted) == (50, 10)
    changed = spark.sql(f"SELECT count(*) AS n FROM {table} WHERE id >= 300 AND name = 'changed'").first()
    assert changed is not None and changed["n"] == 60


def test_scd2_never_reads_files_outside_the_batch_key_range(spark: Any, make_target: Make) -> None:
    target = make_target("iceberg")
    spec = WriteSpec(
        strategy="scd2",
        primary_key=("id",),
        scd2=Scd2Spec(business_key=("id",), timestamp_field="changed_at", version_column="version"),
    )
    seed = spark.range(0, 400).selectExpr(
        "CAST(id AS INT) AS id", "concat('n', id) AS name", "DATE '2024-01-01' AS changed_at"
    )
    table = _seed(spark, target, spec, seed)
    _delete_low_file(spark, table, below=300)

    batch = spark.createDataFrame(
        [(301, "changed", date(2024, 6, 1)), (302, "n302", date(2024, 6, 1)), (450, "new", date(2024, 6, 1))],
        "id int, name string, changed_at date",
    )
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))

    assert (out.versions_closed, out.rows_inserted) == (1, 2)  # 301 closed and reopened, 450 new
    rows = spark.sql(
        f"SELECT id, name, version, is_current FROM {table} WHERE id IN (301, 302, 450) ORDER BY id, version"
    ).collect()
    assert [tuple(r) for r in rows] == [
        (301, "n301", 1, False),
        (301, "changed", 2, True),
        (302, "n302", 1, True),
        (450, "new", 1, True),
    ]


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_file_formats_look_for_touched_keys_only_inside_the_bounds(
    spark: Any, make_target: Make, fmt: str
) -> None:
    """Parquet/Delta find the files to rewrite by a key scan filtered by the change set's bounds (row-group
    skipping). Shown with bounds that exclude the updated key on purpose: its file is then not found, so
    the old row stays beside the new one, which can only happen when the filter is applied."""
    from lakelogic.tables.spark_merge import OP
    from lakelogic.tables.spark_write import adapter_for
    from tests.tables.conftest import read_back

    target = make_target(fmt)
    seed = spark.createDataFrame([(1, "a"), (5, "b")], SCHEMA)
    write_frame(spark, seed, target, MERGE, CommitStamp("seed", "o"))
    adapter = adapter_for(spark, target)
    changes = spark.createDataFrame([(5, "B", "update")], f"{SCHEMA}, {OP} string")

    adapter.apply_changes(changes, CommitStamp("run-1", "o"), MERGE, match=("id",), bounds={"id": (1, 5)})
    assert sorted((r["id"], r["name"]) for r in read_back(spark, target)) == [(1, "a"), (5, "B")]

    again = spark.createDataFrame([(5, "C", "update")], f"{SCHEMA}, {OP} string")
    adapter.apply_changes(again, CommitStamp("run-2", "o"), MERGE, match=("id",), bounds={"id": (6, 9)})
    assert sorted((r["id"], r["name"]) for r in read_back(spark, target)) == [(1, "a"), (5, "B"), (5, "C")]
