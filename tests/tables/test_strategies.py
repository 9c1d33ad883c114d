"""append / overwrite / merge on every format, through write_frame (SEMANTICS §13.2)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import functions as F

from lakelogic.errors import MergeKeyError, UnsupportedError
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec, scd2_spec_from
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

SCHEMA = "id int, name string, day string"
Make = Callable[..., ResolvedTarget]


def _stamp(run: str) -> CommitStamp:
    return CommitStamp(run_id=run, contract="orders")


def _pairs(rows: list[dict[str, Any]], *cols: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in cols) for r in rows)


@pytest.mark.parametrize("fmt", FORMATS)
def test_append_adds_rows_and_reports_them(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    spec = WriteSpec(strategy="append")
    batch = spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2")], SCHEMA)
    first = write_frame(spark, batch, target, spec, _stamp("r1"))
    second = write_frame(spark, batch, target, spec, _stamp("r2"))
    assert first.committed and first.rows_inserted == 2
    assert second.rows_inserted == 2, "a new run of the same input appends again (markers only dedupe runs)"
    assert _pairs(read_back(spark, target), "id", "name") == [(1, "a"), (1, "a"), (2, "b"), (2, "b")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_overwrite_whole_table_and_dynamic_partitions(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    seed = spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d2")], SCHEMA)
    write_frame(spark, seed, target, WriteSpec(strategy="overwrite", partition_by=("day",)), _stamp("r1"))

    batch = spark.createDataFrame([(9, "z", "d2")], SCHEMA)
    write_frame(spark, batch, target, WriteSpec(strategy="overwrite", partition_by=("day",)), _stamp("r2"))
    assert _pairs(read_back(spark, target), "id", "day") == [(1, "d1"), (9, "d2")], (
        "only partition d2 replaced"
    )

    empty = spark.createDataFrame([], SCHEMA)
    write_frame(spark, empty, target, WriteSpec(strategy="overwrite", partition_by=("day",)), _stamp("r3"))
    assert _pairs(read_back(spark, target), "id", "day") == [(1, "d1"), (9, "d2")], (
        "empty batch replaces nothing"
    )

    whole = make_target(fmt, "whole")
    write_frame(spark, seed, whole, WriteSpec(strategy="overwrite"), _stamp("w1"))
    write_frame(spark, batch, whole, WriteSpec(strategy="overwrite"), _stamp("w2"))
    assert _pairs(read_back(spark, whole), "id", "day") == [(9, "d2")]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["timestamp", "boolean", "double", "date", "string"])
def test_dynamic_partition_overwrite_replaces_typed_partitions(
    spark: Any, make_target: Make, fmt: str, kind: str
) -> None:
    """Overwriting the partitions present in the batch must find them whatever the partition column's type:
    a timestamp partition of a delta-rs table was read back as `2024-01-01 10:00:00+00:00`, never equal to
    Spark's folder text, and a value with a space or ':' was removed under a twice-encoded path; either way
    the same batch written twice doubled its rows."""
    values = {
        "timestamp": "TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP '2024-01-02 11:30:00.25'",
        "boolean": "true, false",
        "double": "1.5, 2.0",
        "date": "DATE '2024-01-01', DATE '2024-01-02'",
        "string": "'New York', 'a:b%c'",
    }[kind]
    batch = spark.sql(
        f"SELECT id, p FROM VALUES (1, {values.split(', ', 1)[0]}), (2, {values.split(', ', 1)[1]}) t(id, p)"
    )
    target = make_target(fmt)
    spec = WriteSpec(strategy="overwrite", partition_by=("p",))
    write_frame(spark, batch, target, spec, _stamp("r1"))
    write_frame(spark, batch, target, spec, _stamp("r2"))
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 2]


@pytest.mark.parametrize("fmt", FORMATS)
def test_merge_updates_inserts_and_identical_rerun_changes_nothing(
    spark: Any, make_target: Make, fmt: str
) -> None:
    target = make_target(fmt)
    spec = WriteSpec(strategy="merge", primary_key=("id",))
    write_frame(
        spark, spark.createDataFrame([(1, "old", "d1"), (2, "keep", "d1")], SCHEMA), target, spec, _stamp("s")
    )

    batch = spark.createDataFrame([(1, "new", "d1"), (3, "added", "d2"), (2, "keep", "d1")], SCHEMA)
    out = write_frame(spark, batch, target, spec, _stamp("r1"))
    assert (out.rows_inserted, out.rows_updated, out.rows_deleted) == (1, 1, 0)
    assert _pairs(read_back(spark, target), "id", "name") == [(1, "new"), (2, "keep"), (3, "added")]

    again = write_frame(spark, batch, target, spec, _stamp("r2"))
    assert (again.rows_inserted, again.rows_updated, again.snapshot) == (0, 0, None)
    assert not again.committed, "no commit was made, so none is reported"
    assert len(read_back(spark, target)) == 3


def test_merge_compares_null_safely_and_ignores_lineage_columns(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    schema = "id int, name string, _lakelogic_processed_at string, _lakelogic_created_at string"
    spec = WriteSpec(strategy="merge", primary_key=("id",))
    write_frame(
        spark,
        spark.createDataFrame([(1, None, "t1", "c1"), (2, "x", "t1", "c1")], schema),
        target,
        spec,
        _stamp("a"),
    )
    batch = spark.createDataFrame([(1, None, "t2", "c2"), (2, "y", "t2", "c2")], schema)
    out = write_frame(spark, batch, target, spec, _stamp("b"))
    assert (out.rows_updated, out.rows_inserted) == (1, 0), (
        "NULL = NULL is no change; lineage differences ignored"
    )
    rows = {r["id"]: r for r in read_back(spark, target)}
    assert rows[2]["name"] == "y" and rows[2]["_lakelogic_processed_at"] == "t2"
    assert rows[2]["_lakelogic_created_at"] == "c1", "created_at is kept on update"
    assert rows[1]["_lakelogic_processed_at"] == "t1"


def test_merge_duplicate_keys_refused_with_samples_or_deduplicated(spark: Any, make_target: Make) -> None:
    target = make_target("parquet")
    schema = "id int, name string, ts string"
    batch = spark.createDataFrame(
        [(1, "a", "2024-01-01"), (1, "b", "2024-01-02"), (2, "c", "2024-01-01")], schema
    )
    with pytest.raises(MergeKeyError, match="id=1"):
        write_frame(spark, batch, target, WriteSpec(strategy="merge", primary_key=("id",)), _stamp("r1"))
    assert not read_back_exists(target)
    flagged = batch.withColumn("_ll_delete", F.lit(False))  # the plan the write caches for its check
    assert not _is_cached(spark, flagged), "a refused batch's cache is released"
    assert _is_cached(spark, flagged.persist()), "the lookup sees the write's plan"
    flagged.unpersist()

    guarded = WriteSpec(strategy="merge", primary_key=("id",), merge_dedup_guard=True, watermark_field="ts")
    write_frame(spark, batch, target, guarded, _stamp("r2"))
    assert _pairs(read_back(spark, target), "id", "name") == [(1, "b"), (2, "c")], "latest by watermark wins"

    no_order = WriteSpec(strategy="merge", primary_key=("id",), merge_dedup_guard=True)
    exact = spark.createDataFrame([(5, "e", "t"), (5, "e", "t")], schema)
    assert write_frame(spark, exact, target, no_order, _stamp("r3")).rows_inserted == 1, (
        "exact duplicates collapse"
    )
    with pytest.raises(MergeKeyError, match="no ordering column"):
        write_frame(spark, batch, target, no_order, _stamp("r4"))
    # rows tied at the latest time: identical ones collapse, different ones would let input order decide
    tied = spark.createDataFrame([(6, "x", "t9"), (6, "x", "t9"), (6, "y", "t1")], schema)
    assert write_frame(spark, tied, target, guarded, _stamp("r5")).rows_inserted == 1
    clash = spark.createDataFrame([(7, "x", "t9"), (7, "y", "t9")], schema)
    with pytest.raises(MergeKeyError, match="different values at the same latest ts"):
        write_frame(spark, clash, target, guarded, _stamp("r6"))


def _is_cached(spark: Any, frame: Any) -> bool:
    manager = spark._jsparkSession.sharedState().cacheManager()
    return bool(manager.lookupCachedData(frame._jdf).isDefined())


def read_back_exists(target: ResolvedTarget) -> bool:
    from pathlib import Path

    return Path(target.name).exists() and any(Path(target.name).rglob("*.parquet"))


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_merge_cdc_deletes_hard_and_soft(spark: Any, make_target: Make, fmt: str) -> None:
    schema = "id int, name string, op string, ts string"
    seed = spark.createDataFrame([(1, "a", "I", "t0"), (2, "b", "I", "t0"), (3, "c", "I", "t0")], schema)
    events = spark.createDataFrame(
        [(1, "a2", "U", "t1"), (1, None, "D", "t2"), (2, "b2", "U", "t1"), (9, None, "D", "t1")], schema
    )
    cdc = {"cdc_op_field": "op", "cdc_delete_values": ("d",), "cdc_timestamp_field": "ts"}

    hard = make_target(fmt, "hard")
    spec = WriteSpec(strategy="merge", primary_key=("id",), **cdc)  # type: ignore[arg-type]
    write_frame(spark, seed, hard, spec, _stamp("s"))
    out = write_frame(spark, events, hard, spec, _stamp("e"))
    assert (out.rows_deleted, out.rows_updated, out.rows_inserted) == (1, 1, 0), (
        "net effect per key; unknown delete ignored"
    )
    assert _pairs(read_back(spark, hard), "id", "name") == [(2, "b2"), (3, "c")]

    soft = make_target(fmt, "soft")
    soft_schema = "id int, name string, op string, ts string, deleted boolean, deleted_at string"
    soft_seed = spark.createDataFrame(
        [(1, "a", "I", "t0", None, None), (2, "b", "I", "t0", None, None)], soft_schema
    )
    soft_spec = WriteSpec(
        strategy="merge",
        primary_key=("id",),
        soft_delete_column="deleted",
        soft_delete_time_column="deleted_at",
        **cdc,  # type: ignore[arg-type]
    )
    write_frame(spark, soft_seed, soft, soft_spec, _stamp("s"))
    write_frame(spark, events.where("id = 1"), soft, soft_spec, _stamp("e"))
    rows = {r["id"]: r for r in read_back(spark, soft)}
    assert (rows[1]["deleted"], rows[1]["deleted_at"], rows[1]["name"]) == (True, "t2", "a")
    assert rows[2]["deleted"] is None
    again = write_frame(spark, events.where("id = 1"), soft, soft_spec, _stamp("e2"))
    assert again.rows_updated == 0, "deleting an already soft-deleted row changes nothing"


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_json_only_append_overwrite_and_arrays_as_json(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    batch = spark.createDataFrame([(1, ["x", "y"])], "id int, tags array<string>")
    outcome = write_frame(spark, batch, target, WriteSpec(strategy="append"), _stamp("r1"))
    assert outcome.rows_inserted == 1, "text files keep no row count: the write job counts them"
    rows = spark.read.option("header", "true").format(fmt).load(target.name).collect()
    assert [(str(r["id"]), r["tags"]) for r in rows] == [("1", '["x","y"]')]
    # every later write too: the table's column is text, and the array met it as Spark's "[a, b]" cast
    second = spark.createDataFrame([(2, ["a, b", "c"])], "id int, tags array<string>")
    write_frame(spark, second, target, WriteSpec(strategy="append"), _stamp("r1b"))
    rows = spark.read.option("header", "true").format(fmt).load(target.name).collect()
    assert sorted((str(r["id"]), r["tags"]) for r in rows) == [("1", '["x","y"]'), ("2", '["a, b","c"]')]
    with pytest.raises(UnsupportedError, match="append/overwrite"):
        write_frame(spark, batch, target, WriteSpec(strategy="merge", primary_key=("id",)), _stamp("r2"))


def test_a_first_merge_load_is_not_spread_over_the_shuffle_partitions(spark: Any, make_target: Any) -> None:
    """The change set of a first load joins the batch with an empty target: a shuffle join would put a
    small batch into every shuffle partition and the new table would get one file per partition."""
    target = make_target("iceberg")
    batch = spark.range(40).selectExpr("CAST(id AS INT) AS id", "CAST(id AS STRING) AS name").coalesce(1)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "50")
    try:
        out = write_frame(
            spark, batch, target, WriteSpec(strategy="merge", primary_key=("id",)), CommitStamp("r1", "o")
        )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert out.rows_inserted == 40
    files = spark.sql(f"SELECT count(*) AS n FROM {target.name}.files").first()
    assert files is not None and files["n"] == 1


def test_a_deduplicated_merge_batch_is_not_spread_over_the_shuffle_partitions(
    spark: Any, make_target: Any
) -> None:
    """Keeping the latest row per key shuffles the batch into every shuffle partition; the merge's
    statements must still land it in few files (a file per partition would be the small-file problem)."""
    target = make_target("iceberg")
    spec = WriteSpec(strategy="merge", primary_key=("id",), merge_dedup_guard=True, watermark_field="version")
    seed = spark.createDataFrame([(1, "a", 1)], "id int, name string, version int")
    write_frame(spark, seed, target, spec, CommitStamp("seed", "o"))
    batch = (
        spark.range(80)
        .selectExpr("CAST(id % 40 AS INT) AS id", "CAST(id AS STRING) AS name", "CAST(id AS INT) AS version")
        .coalesce(1)
    )
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "50")
    try:
        out = write_frame(spark, batch, target, spec, CommitStamp("r1", "o"))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert (out.rows_inserted, out.rows_updated) == (39, 1)
    rows = {r["id"]: r["name"] for r in read_back(spark, target)}
    assert rows == {i: str(i + 40) for i in range(40)}  # the later of the two rows of every key
    added = spark.sql(
        f"SELECT sum(summary['added-data-files']) AS n FROM {target.name}.snapshots "
        "WHERE summary['lakelogic.run_id'] = 'r1'"
    ).first()
    assert added is not None and added["n"] <= 2


@pytest.mark.parametrize("key", ["partition_by", "cluster_by"])
def test_a_layout_column_missing_from_the_output_is_a_plan_error(
    spark: Any, make_target: Make, key: str
) -> None:
    from lakelogic.errors import PlanError

    target = make_target("parquet")
    batch = spark.createDataFrame([(1, "a")], "id int, name string")
    spec = WriteSpec(strategy="append", **{key: ("no_such_col",)})
    with pytest.raises(PlanError, match=f"materialization.{key}: no_such_col not in the output"):
        write_frame(spark, batch, target, spec, _stamp("r1"))
    assert not read_back_exists(target), "nothing is written"
    scd2 = WriteSpec(
        strategy="scd2",
        primary_key=("id",),
        partition_by=("is_current",),
        scd2=scd2_spec_from({}, keys=("id",)),
    )
    write_frame(spark, batch, target, scd2, _stamp("r2"))  # a column the strategy adds is fine


@pytest.mark.parametrize("strategy", ["merge", "scd2"])
def test_soft_delete_columns_need_not_be_in_the_batch(spark: Any, make_target: Make, strategy: str) -> None:
    """§13.6: configured soft-delete columns are added to the table; a CDC delete flags the row (merge) or
    the closed version (SCD2) instead of the column never existing and the row being removed."""
    schema = "id int, name string, op string, ts timestamp"
    seed = spark.createDataFrame(
        [(1, "a", "I", datetime(2024, 1, 1)), (2, "b", "I", datetime(2024, 1, 1))], schema
    )
    delete = spark.createDataFrame([(1, "a", "D", datetime(2024, 1, 5))], schema)
    spec = WriteSpec(
        strategy=strategy,
        primary_key=("id",),
        soft_delete_column="is_deleted",
        soft_delete_time_column="deleted_at",
        soft_delete_reason_column="deleted_why",
        cdc_op_field="op",
        cdc_delete_values=("D",),
        cdc_timestamp_field="ts",
        scd2=scd2_spec_from({"timestamp_field": "ts"}, keys=("id",)) if strategy == "scd2" else None,
    )
    target = make_target("iceberg")
    write_frame(spark, seed, target, spec, _stamp("s"))
    out = write_frame(spark, delete, target, spec, _stamp("d"))
    rows = read_back(spark, target)
    assert {"is_deleted", "deleted_at", "deleted_why"} <= set(rows[0])
    flagged = [r for r in rows if r["id"] == 1 and r["is_deleted"]]
    assert len(flagged) == 1 and flagged[0]["deleted_at"] == datetime(2024, 1, 5)
    assert flagged[0]["deleted_why"] == "D", "the reason column holds the op value"
    if strategy == "merge":
        assert out.rows_deleted == 0
    else:
        assert out.versions_closed == 1 and flagged[0]["is_current"] is False
    assert all(not r["is_deleted"] for r in rows if r["id"] == 2), "other keys are untouched"
    if strategy == "scd2":  # a later run recomputing the key's versions keeps the stored reason
        write_frame(
            spark,
            spark.createDataFrame([(1, "z", "I", datetime(2024, 1, 9))], schema),
            target,
            spec,
            _stamp("r"),
        )
        closed = [r for r in read_back(spark, target) if r["id"] == 1 and r["is_deleted"]]
        assert [(r["deleted_why"], r["deleted_at"]) for r in closed] == [("D", datetime(2024, 1, 5))]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_merge_inserts_the_unknown_member_once(spark: Any, make_target: Make, fmt: str) -> None:
    """§13.6 `materialization.unknown_member`: a merge target gets the placeholder member once."""
    member = {"enabled": True, "default_values": {"id": -1, "name": "Unknown"}}
    spec = WriteSpec(strategy="merge", primary_key=("id",), unknown_member=member)
    target = make_target(fmt)
    first = write_frame(
        spark, spark.createDataFrame([(1, "a")], "id int, name string"), target, spec, _stamp("1")
    )
    assert first.rows_inserted == 2
    write_frame(
        spark, spark.createDataFrame([(1, "b"), (2, "c")], "id int, name string"), target, spec, _stamp("2")
    )
    assert _pairs(read_back(spark, target), "id", "name") == [(-1, "Unknown"), (1, "b"), (2, "c")]
    with pytest.raises(MergeKeyError, match="default_values for the key column"):
        write_frame(
            spark,
            spark.createDataFrame([(3, "d")], "id int, name string"),
            make_target(fmt, "other"),
            WriteSpec(
                strategy="merge", primary_key=("id",), unknown_member={"default_values": {"name": "?"}}
            ),
            _stamp("3"),
        )


def test_block_level_unknown_member_reaches_merge_and_scd2() -> None:
    from lakelogic.tables.spec import write_spec_from_contract

    member = {"surrogate_key_value": "-1", "default_values": {"id": -1}}
    doc: dict[str, Any] = {
        "primary_key": ["id"],
        "materialization": {"strategy": "merge", "unknown_member": member},
    }
    assert write_spec_from_contract(doc).unknown_member == member
    doc["materialization"] = {"strategy": "scd2", "unknown_member": member, "scd2": {"surrogate_key": "sk"}}
    scd2 = write_spec_from_contract(doc).scd2
    assert scd2 is not None and scd2.unknown_member == member
