"""SCD2 (SEMANTICS §13.3): close/open, multi-change batches, late arrival, re-runs, deletes, conflicts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from lakelogic.errors import MergeKeyError
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec, scd2_spec_from
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = (
    "customer_id int, tier string, updated_at string, is_current boolean, version int, "
    "effective_from string, effective_to string"
)


def _spec(**scd: Any) -> WriteSpec:
    settings = {
        "timestamp_field": "updated_at",
        "track_columns": ["tier"],
        "version_column": "version",
        "effective_to_default": "2200-01-01",
        "change_reason_column": "reason",
        "surrogate_key": "sk",
    }
    settings.update(scd)
    return WriteSpec(strategy="scd2", scd2=scd2_spec_from(settings, keys=("customer_id",)))


CDC_SCHEMA = "id int, tier string, op string, updated_at string"


def _cdc_spec(**scd: Any) -> WriteSpec:
    """SCD2 of ``CDC_SCHEMA`` rows keyed by ``id``, tracking ``tier``; op ``D`` deletes."""
    return WriteSpec(
        strategy="scd2",
        cdc_op_field="op",
        cdc_delete_values=("D",),
        cdc_timestamp_field="updated_at",
        scd2=scd2_spec_from(
            {"timestamp_field": "updated_at", "track_columns": ["tier"], **scd}, keys=("id",)
        ),
    )


def _rows(spark: Any, *values: tuple[Any, ...]) -> Any:
    return spark.createDataFrame([(*v, None, None, None, None) for v in values], SCHEMA)


def _versions(spark: Any, target: ResolvedTarget) -> list[tuple[Any, ...]]:
    cols = ("customer_id", "version", "tier", "effective_from", "effective_to", "is_current", "reason")
    return sorted(tuple(r[c] for c in cols) for r in read_back(spark, target))


@pytest.mark.parametrize("fmt", FORMATS)
def test_scd2_close_open_late_arrival_and_rerun(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    spec = _spec()
    write_frame(spark, _rows(spark, (1, "free", "2024-01-01")), target, spec, CommitStamp("r1", "dim"))
    second = write_frame(
        spark,
        _rows(spark, (1, "pro", "2024-02-01"), (2, "free", "2024-02-01")),
        target,
        spec,
        CommitStamp("r2", "dim"),
    )
    assert (second.rows_inserted, second.rows_updated, second.versions_closed) == (2, 1, 1)
    assert _versions(spark, target) == [
        (1, 1, "free", "1900-01-01", "2024-02-01", False, "initial_load"),
        (1, 2, "pro", "2024-02-01", "2200-01-01", True, "tier"),
        (2, 1, "free", "1900-01-01", "2200-01-01", True, "initial_load"),
    ]
    # several changes of one key in one batch, applied in time order; a late row slots in between;
    # a row equal to the version in force opens nothing
    batch = _rows(
        spark,
        (1, "gold", "2024-04-01"),
        (1, "pro", "2024-03-01"),
        (1, "basic", "2024-01-15"),
        (2, "free", "2024-03-01"),
    )
    write_frame(spark, batch, target, spec, CommitStamp("r3", "dim"))
    expected = [
        (1, 1, "free", "1900-01-01", "2024-01-15", False, "initial_load"),
        (1, 2, "basic", "2024-01-15", "2024-02-01", False, "tier"),
        (1, 3, "pro", "2024-02-01", "2024-04-01", False, "tier"),
        (1, 4, "gold", "2024-04-01", "2200-01-01", True, "tier"),
        (2, 1, "free", "1900-01-01", "2200-01-01", True, "initial_load"),
    ]
    assert _versions(spark, target) == expected
    rerun = write_frame(spark, batch, target, spec, CommitStamp("r4", "dim"))
    assert (rerun.rows_inserted, rerun.rows_updated, rerun.rows_deleted, rerun.snapshot) == (0, 0, 0, None)
    assert not rerun.committed and not rerun.already_committed
    assert _versions(spark, target) == expected


def test_scd2_late_row_older_than_first_version_becomes_first(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    spec = _spec()
    write_frame(spark, _rows(spark, (1, "pro", "2024-05-01")), target, spec, CommitStamp("r1", "dim"))
    write_frame(spark, _rows(spark, (1, "free", "2024-01-01")), target, spec, CommitStamp("r2", "dim"))
    assert _versions(spark, target) == [
        (1, 1, "free", "1900-01-01", "2024-05-01", False, "initial_load"),
        (1, 2, "pro", "2024-05-01", "2200-01-01", True, "tier"),
    ]


def test_scd2_untracked_change_updates_current_version_in_place(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    schema = "id int, tier string, email string, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        scd2=scd2_spec_from({"timestamp_field": "updated_at", "track_columns": ["tier"]}, keys=("id",)),
    )
    write_frame(
        spark,
        spark.createDataFrame([(1, "free", "a@x", "2024-01-01")], schema),
        target,
        spec,
        CommitStamp("a", "d"),
    )
    out = write_frame(
        spark,
        spark.createDataFrame([(1, "free", "b@x", "2024-02-01")], schema),
        target,
        spec,
        CommitStamp("b", "d"),
    )
    rows = read_back(spark, target)
    assert out.rows_updated == 1 and len(rows) == 1
    assert (rows[0]["email"], rows[0]["updated_at"], rows[0]["is_current"]) == ("b@x", "2024-01-01", True)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_scd2_rows_of_one_batch_apply_in_time_order_and_rerun_unchanged(
    spark: Any, make_target: Make, fmt: str
) -> None:
    """§13.3 (2): a row with the current version's tracked values updates its untracked columns in place
    before a later row of the same batch closes it; one batch and three batches agree; an identical re-run
    changes nothing; a late row for a closed version does not touch it."""
    schema = "id int, tier string, email string, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        scd2=scd2_spec_from(
            {"timestamp_field": "updated_at", "track_columns": ["tier"], "version_column": "v"}, keys=("id",)
        ),
    )
    rows = [
        (1, "free", "a@x", "2024-01-01"),
        (1, "free", "b@x", "2024-02-01"),
        (1, "pro", "c@x", "2024-03-01"),
    ]

    def versions(target: ResolvedTarget) -> list[tuple[Any, ...]]:
        return sorted((r["v"], r["tier"], r["email"], r["is_current"]) for r in read_back(spark, target))

    want = [(1, "free", "b@x", False), (2, "pro", "c@x", True)]
    one = make_target(fmt, "one")
    write_frame(spark, spark.createDataFrame(rows, schema), one, spec, CommitStamp("a", "d"))
    assert versions(one) == want
    again = write_frame(spark, spark.createDataFrame(rows, schema), one, spec, CommitStamp("b", "d"))
    assert (again.rows_inserted, again.rows_updated) == (0, 0) and versions(one) == want
    three = make_target(fmt, "three")
    for i, row in enumerate(rows):
        write_frame(spark, spark.createDataFrame([row], schema), three, spec, CommitStamp(f"t{i}", "d"))
    assert versions(three) == want
    late = spark.createDataFrame([(1, "free", "late@x", "2024-02-15")], schema)
    write_frame(spark, late, one, spec, CommitStamp("c", "d"))
    assert versions(one) == want, "version 1 is closed: a late row with its values changes nothing"


def test_scd2_same_key_and_time_with_different_values_is_an_error(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    batch = _rows(spark, (1, "free", "2024-01-01"), (1, "pro", "2024-01-01"))
    with pytest.raises(MergeKeyError, match="customer_id=1 at 2024-01-01"):
        write_frame(spark, batch, target, _spec(), CommitStamp("r1", "dim"))
    exact = _rows(spark, (1, "free", "2024-01-01"), (1, "free", "2024-01-01"))
    assert write_frame(spark, exact, target, _spec(), CommitStamp("r2", "dim")).rows_inserted == 1


def test_scd2_same_key_and_time_with_different_untracked_values_is_an_error(
    spark: Any, make_target: Make
) -> None:
    """Equal tracked values but another untracked value at the same key and time: which row becomes the
    version is ambiguous (it depended on partitioning, and an identical re-run rewrote it), so nothing is
    written, as for tracked values."""
    schema = "id int, tier string, city string, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        scd2=scd2_spec_from({"timestamp_field": "updated_at", "track_columns": ["tier"]}, keys=("id",)),
    )
    target = make_target("delta")
    batch = spark.createDataFrame(
        [(1, "gold", "Paris", "2024-01-01"), (1, "gold", "Berlin", "2024-01-01")], schema
    )
    with pytest.raises(MergeKeyError, match="different untracked values: id=1"):
        write_frame(spark, batch, target, spec, CommitStamp("r1", "dim"))


def test_scd2_untracked_values_a_microsecond_apart_differ_and_repeated_deletes_do_not(
    spark: Any, make_target: Make
) -> None:
    """The compared text keeps microseconds (Spark's default JSON timestamp text stops at milliseconds,
    so such rows tied with nothing to order them). Two CDC deletes of one key at one time are one delete,
    whatever before-image each carries."""
    from datetime import datetime

    schema = "id int, tier string, loaded_at timestamp, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        scd2=scd2_spec_from({"timestamp_field": "updated_at", "track_columns": ["tier"]}, keys=("id",)),
    )
    rows = [(1, "gold", datetime(2024, 1, 1, 0, 0, 0, us), "2024-01-01") for us in (1, 2)]
    with pytest.raises(MergeKeyError, match="different untracked values"):
        write_frame(
            spark,
            spark.createDataFrame(rows, schema),
            make_target("delta", "us"),
            spec,
            CommitStamp("r", "d"),
        )
    target = make_target("delta", "cdc")
    seed = spark.createDataFrame([(1, "gold", "I", "2024-01-01")], CDC_SCHEMA)
    write_frame(spark, seed, target, _cdc_spec(), CommitStamp("a", "d"))
    deletes = spark.createDataFrame(
        [(1, "gold", "D", "2024-02-01"), (1, None, "D", "2024-02-01")], CDC_SCHEMA
    )
    assert write_frame(spark, deletes, target, _cdc_spec(), CommitStamp("b", "d")).versions_closed == 1


def test_scd2_rows_differing_only_in_lineage_keep_the_same_one_whatever_the_partitioning(
    spark: Any, make_target: Make
) -> None:
    """Rows of one key and time that differ only in a lineage column (two source files) are one change;
    the one kept does not depend on input order or partitioning."""
    schema = "id int, tier string, _lakelogic_source string, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        lineage_columns=("_lakelogic_source",),
        scd2=scd2_spec_from({"timestamp_field": "updated_at", "track_columns": ["tier"]}, keys=("id",)),
    )
    rows = [(1, "gold", f"file_{n}.csv", "2024-01-01") for n in range(6)]
    kept = set()
    for order, partitions in ((rows, 1), (rows[::-1], 5), (rows[3:] + rows[:3], 3)):
        target = make_target("delta", f"p{partitions}")
        batch = spark.createDataFrame(order, schema).repartition(partitions)
        assert write_frame(spark, batch, target, spec, CommitStamp("r", "dim")).rows_inserted == 1
        kept |= {r["_lakelogic_source"] for r in read_back(spark, target)}
    assert kept == {"file_0.csv"}


def test_scd2_cdc_delete_closes_current_version(spark: Any, make_target: Make) -> None:
    target = make_target("iceberg")
    schema = CDC_SCHEMA
    spec = _cdc_spec(change_reason_column="why")
    seed = spark.createDataFrame([(1, "free", "I", "2024-01-01"), (2, "pro", "I", "2024-01-01")], schema)
    write_frame(spark, seed, target, spec, CommitStamp("a", "d"))
    delete = spark.createDataFrame([(1, None, "D", "2024-03-01")], schema)
    out = write_frame(spark, delete, target, spec, CommitStamp("b", "d"))
    assert out.versions_closed == 1
    rows = {r["id"]: r for r in read_back(spark, target)}
    assert (rows[1]["is_current"], str(rows[1]["effective_to"])[:10], rows[1]["why"]) == (
        False,
        "2024-03-01",
        "delete",
    )
    assert rows[2]["is_current"] is True
    again = write_frame(spark, delete, target, spec, CommitStamp("c", "d"))
    assert (again.rows_updated, again.rows_inserted) == (0, 0), "a replayed delete changes nothing"
    back = spark.createDataFrame([(1, "free", "I", "2024-04-01")], schema)  # same values as before
    write_frame(spark, back, target, spec, CommitStamp("e", "d"))
    reopened = [r for r in read_back(spark, target) if r["id"] == 1 and r["is_current"]]
    assert [r["why"] for r in reopened] == ["initial_load"], "a key back after a delete lists no change"


def test_scd2_without_its_own_timestamp_field_orders_cdc_events_by_their_cdc_time(
    spark: Any, make_target: Make
) -> None:
    """§3.5: several CDC events for one key apply in `cdc_timestamp_field` order; §13.6: a delete closes at
    its CDC time. Without `scd2.timestamp_field` both used the run's as-of, so two events of one key were
    "the same key and time with different values" (an error) and a delete closed at the run time."""
    target = make_target("delta")
    spec = _cdc_spec(change_reason_column="why")
    assert spec.scd2 is not None
    spec = replace(spec, scd2=replace(spec.scd2, timestamp_field=None))
    batch = spark.createDataFrame(
        [(1, "pro", "U", "2024-02-01"), (1, "free", "I", "2024-01-01"), (2, "free", "I", "2024-01-01")],
        CDC_SCHEMA,
    )
    write_frame(spark, batch, target, spec, CommitStamp("a", "d"))
    delete = spark.createDataFrame([(2, None, "D", "2024-03-01")], CDC_SCHEMA)
    write_frame(spark, delete, target, spec, CommitStamp("b", "d"))
    rows = sorted(
        (r["id"], r["tier"], str(r["effective_from"])[:10], str(r["effective_to"])[:10], r["is_current"])
        for r in read_back(spark, target)
    )
    assert [r for r in rows if r[0] == 1] == [
        (1, "free", "1900-01-01", "2024-02-01", False),
        (1, "pro", "2024-02-01", "9999-12-31", True),
    ]
    assert [r for r in rows if r[0] == 2] == [(2, "free", "1900-01-01", "2024-03-01", False)]


def test_scd2_defaults_as_of_timestamp_and_uuid_keys_are_stable(spark: Any, make_target: Make) -> None:
    target = make_target("parquet")
    schema = "id int, tier string"
    as_of = datetime(2024, 6, 1, tzinfo=UTC)
    spec = WriteSpec(
        strategy="scd2",
        as_of=as_of,
        scd2=scd2_spec_from({"surrogate_key": "sk", "surrogate_key_strategy": "uuid"}, keys=("id",)),
    )
    batch = spark.createDataFrame([(1, "free")], schema)
    write_frame(spark, batch, target, spec, CommitStamp("a", "d"))
    first = read_back(spark, target)
    assert first[0]["effective_from"] == datetime(1900, 1, 1) or str(first[0]["effective_from"]).startswith(
        "1900-01-01"
    )
    assert str(first[0]["effective_to"]).startswith("9999-12-31")
    rerun = write_frame(spark, batch, target, spec, CommitStamp("b", "d"))
    assert rerun.rows_updated == 0 and read_back(spark, target)[0]["sk"] == first[0]["sk"]
    later = WriteSpec(strategy="scd2", as_of=datetime(2024, 7, 1, tzinfo=UTC), scd2=spec.scd2)
    write_frame(spark, spark.createDataFrame([(1, "pro")], schema), target, later, CommitStamp("c", "d"))
    rows = sorted(read_back(spark, target), key=lambda r: str(r["effective_from"]))
    assert [r["tier"] for r in rows] == ["free", "pro"]
    assert str(rows[1]["effective_from"]).startswith("2024-07-01")
    assert rows[0]["sk"] == first[0]["sk"] and rows[1]["sk"] != rows[0]["sk"]


@pytest.mark.parametrize("forward", [True, False])
def test_scd2_uuid_keys_on_a_copy_on_write_iceberg_table(
    spark: Any, make_target: Make, forward: bool
) -> None:
    """A copy-on-write MERGE refuses a non-deterministic source (Spark's uuid()); the random keys are
    generated by a deterministic expression instead."""
    target = make_target("iceberg")
    spark.sql(
        f"CREATE TABLE {target.name} (customer_id int, tier string, updated_at string, is_current boolean, "
        "version int, effective_from string, effective_to string, sk string, reason string) USING iceberg "
        "TBLPROPERTIES ('write.merge.mode'='copy-on-write', 'write.update.mode'='copy-on-write')"
    )
    spec = replace(_spec(surrogate_key_strategy="uuid"), scd2_forward=forward)
    write_frame(spark, _rows(spark, (1, "free", "2024-01-01")), target, spec, CommitStamp("a", "dim"))
    first = read_back(spark, target)[0]["sk"]
    # a later change (forward) and a late row (general computation) both close and open versions
    batch = _rows(spark, (1, "pro", "2024-03-01"), (2, "free", "2024-03-01"), (2, "pro", "2024-02-01"))
    write_frame(spark, batch, target, spec, CommitStamp("b", "dim"))
    rows = read_back(spark, target)
    keys = [r["sk"] for r in rows]
    assert len(rows) == 4 and len(set(keys)) == 4
    layout = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}"
    assert all(re.fullmatch(layout, k) for k in keys)
    assert first in keys  # the first version keeps its key when it is closed


def test_scd2_unknown_member_inserted_once(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    spec = _spec(
        unknown_member={"enabled": True, "surrogate_key_value": "-1", "default_values": {"tier": "unknown"}}
    )
    write_frame(spark, _rows(spark, (1, "free", "2024-01-01")), target, spec, CommitStamp("a", "dim"))
    write_frame(spark, _rows(spark, (1, "pro", "2024-02-01")), target, spec, CommitStamp("b", "dim"))
    members = [r for r in read_back(spark, target) if r["sk"] == "-1"]
    assert len(members) == 1
    assert (members[0]["tier"], members[0]["customer_id"], members[0]["is_current"]) == (
        "unknown",
        None,
        True,
    )
    assert members[0]["reason"] == "initial_load"  # §13.3: initial_load, changed columns or delete
    assert len(read_back(spark, target)) == 3


def test_scd2_late_row_keeps_the_gap_of_a_deleted_key_that_came_back(spark: Any, make_target: Make) -> None:
    """A key deleted and later re-inserted with the same tracked values keeps both versions and the gap
    between them when a late row makes the general computation re-normalise its history."""
    target = make_target("iceberg")
    schema = CDC_SCHEMA
    spec = _cdc_spec(version_column="v")

    def write(run: str, *rows: tuple[Any, ...]) -> None:
        write_frame(spark, spark.createDataFrame(list(rows), schema), target, spec, CommitStamp(run, "d"))

    def history() -> list[tuple[Any, ...]]:
        cols = ("v", "tier", "effective_from", "effective_to", "is_current")
        return sorted(
            tuple(str(r[c])[:10] if "effective" in c else r[c] for c in cols)
            for r in read_back(spark, target)
        )

    write("a", (1, "free", "I", "2024-01-01"))
    write("b", (1, None, "D", "2024-03-01"))
    write("c", (1, "free", "I", "2024-05-01"))
    before = history()
    assert [(tier, start, end, current) for _, tier, start, end, current in before][1:] == [
        ("free", "2024-05-01", before[1][3], True)
    ]
    assert before[0][1:] == ("free", before[0][2], "2024-03-01", False)

    write("d", (1, "pro", "I", "2023-06-01"))  # late: older than every stored version
    after = history()
    assert [row[1:] for row in after] == [
        ("pro", after[0][2], "2024-01-01", False),
        ("free", "2024-01-01", "2024-03-01", False),  # still closed by the delete
        ("free", "2024-05-01", before[1][3], True),  # the return is still its own version
    ]
    assert [row[0] for row in after] == [1, 2, 3]
