"""Keyed writes cache their batch only when reading it again could cost more than a scan or give other
rows (spark_batch.rereads_the_same): a contract run hands over staged Parquet files, which need no cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.tables.spark_batch import rereads_the_same
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, name string"
SPEC = WriteSpec(strategy="merge", primary_key=("id",))


def _files(spark: Any, tmp_path: Path, rows: list[tuple[Any, ...]], name: str = "batch") -> DataFrame:
    path = str(tmp_path / name)
    spark.createDataFrame(rows, SCHEMA).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def test_a_file_scan_with_projections_filters_and_unions_rereads_the_same(spark: Any, tmp_path: Path) -> None:
    files = _files(spark, tmp_path, [(1, "a"), (2, "b")])
    assert rereads_the_same(files)
    assert rereads_the_same(files.withColumn("flag", F.lit(False)).where("id > 0").select("id", "flag"))
    assert rereads_the_same(files.unionByName(files))


def test_work_beyond_a_scan_or_a_source_that_can_move_is_cached(spark: Any, tmp_path: Path) -> None:
    files = _files(spark, tmp_path, [(1, "a"), (2, "b")])
    assert not rereads_the_same(files.withColumn("r", F.rand()))  # other values on each read
    assert not rereads_the_same(files.join(files, "id"))
    assert not rereads_the_same(files.groupBy("id").count())
    assert not rereads_the_same(files.unionByName(files.groupBy("id").agg(F.max("name").alias("name"))))
    assert not rereads_the_same(spark.createDataFrame([(1, "a")], SCHEMA))  # an RDD from the driver
    name = f"lakelogic.tests.reread_{tmp_path.name[-8:]}"
    files.writeTo(name).using("iceberg").create()
    try:
        assert not rereads_the_same(spark.table(name))  # a table's snapshot can move between reads
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_merge_of_staged_files_writes_what_a_cached_batch_writes(
    spark: Any, make_target: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    seed = [(1, "a"), (2, "b"), (None, "n")]
    batch = [(1, "a"), (2, "B"), (3, "c"), (None, "m")]
    results = []
    persisted: list[bool] = []
    original = DataFrame.persist

    def spy(self: DataFrame, *args: Any, **kwargs: Any) -> DataFrame:
        persisted.append(rereads_the_same(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DataFrame, "persist", spy)
    for source in ("driver", "staged"):
        target = make_target(fmt, source)
        write_frame(spark, spark.createDataFrame(seed, SCHEMA), target, SPEC, CommitStamp("seed", "o"))
        frame = (
            spark.createDataFrame(batch, SCHEMA)
            if source == "driver"
            else _files(spark, tmp_path, batch, f"batch_{fmt}")
        )
        persisted.clear()
        out = write_frame(spark, frame, target, SPEC, CommitStamp("run", "o"))
        rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=repr)
        results.append((rows, out.rows_inserted, out.rows_updated))
        if source == "staged":  # nothing cached reads like a bare scan: the batch was not cached
            assert not any(persisted)
    assert results[0] == results[1]
    assert results[0][0] == sorted([(1, "a"), (2, "B"), (3, "c"), (None, "n"), (None, "m")], key=repr)


@pytest.mark.parametrize("source", ["driver", "staged"])
def test_a_merge_with_the_unknown_member_releases_every_cache_it_made(
    spark: Any, make_target: Make, tmp_path: Path, source: str
) -> None:
    """The duplicate-key check caches the batch it checks; with an unknown member the write then caches the
    batch plus the member, a different plan. Both are released when the write ends."""
    member = {"enabled": True, "default_values": {"id": -1, "name": "unknown"}}
    spec = WriteSpec(strategy="merge", primary_key=("id",), unknown_member=member)
    target = make_target("iceberg")
    rows = [(1, "a"), (2, "b")]
    batch = spark.createDataFrame(rows, SCHEMA) if source == "driver" else _files(spark, tmp_path, rows)
    cached_before = spark.sparkContext._jsc.getPersistentRDDs().size()
    write_frame(spark, batch, target, spec, CommitStamp("run", "o"))
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == cached_before
    assert sorted(r["id"] for r in read_back(spark, target)) == [-1, 1, 2]
