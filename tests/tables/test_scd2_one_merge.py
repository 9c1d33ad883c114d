"""SCD2 forward batches as one MERGE (tables/spark_scd2_merge.py) give exactly the change-set path's table.

A history is built by the general computation, copied into two merge-on-read Iceberg tables, and one more
batch is written to each: once by the one-statement path, once with it switched off. Tables and counts
must be identical; batches with rows that are not forward must fall back to the change-set path whole.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql.types import StructType

from lakelogic.tables import spark_scd2
from lakelogic.tables.spark_batch import DELETE_FLAG
from lakelogic.tables.spark_iceberg import quote_table
from lakelogic.tables.spark_observed import observed_metrics
from lakelogic.tables.spark_scd2_merge import KIND, KNOWN, classified_batch
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import ICEBERG_ROW_LEVEL_DEFAULTS, WriteSpec, scd2_spec_from
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import read_back
from tests.tables.test_scd2_forward import SCHEMA, TIERS, _day

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
KEYS = 10


def _spec(**overrides: Any) -> WriteSpec:
    settings: dict[str, Any] = {
        "timestamp_field": "updated_at",
        "track_columns": ["tier"],
        "version_column": "version",
        "surrogate_key": "sk",
    }
    settings.update(overrides)
    return WriteSpec(strategy="scd2", scd2=scd2_spec_from(settings, keys=("customer_id",)))


def _history(rng: random.Random) -> list[list[tuple[Any, ...]]]:
    """Two batches over days 0..39, several changes per key included."""
    batches = []
    for b in range(2):
        rows = {}
        for _ in range(12):
            key, day = rng.randrange(KEYS), rng.randrange(20 * b, 20 * b + 20)
            rows[(key, day)] = (key, rng.choice(TIERS), f"n{rng.randrange(3)}", _day(day), f"c{b}")
        batches.append(list(rows.values()))
    return batches


def _forward_batch(rng: random.Random) -> list[tuple[Any, ...]]:
    """One row per key, later than all history: changed, unchanged (with and without an untracked
    change) and new keys."""
    return [
        (key, rng.choice(TIERS), f"n{rng.randrange(3)}", _day(50 + rng.randrange(5)), "cf")
        for key in range(KEYS + 3)  # keys >= KEYS are new
    ]


def _tables(
    spark: Any, make_target: Make, spec: WriteSpec, seed: int
) -> tuple[ResolvedTarget, ResolvedTarget]:
    """Two merge-on-read copies of one history built by the general computation."""
    reference, fast = make_target("iceberg", "ref"), make_target("iceberg", "one")
    general = replace(spec, scd2_forward=False)
    for i, rows in enumerate(_history(random.Random(seed))):
        frame = spark.createDataFrame(rows, SCHEMA)
        write_frame(spark, frame, reference, general, CommitStamp(f"h{i}", "dim"))
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in ICEBERG_ROW_LEVEL_DEFAULTS.items())
    spark.sql(
        f"CREATE TABLE {quote_table(fast.name)} USING iceberg TBLPROPERTIES ({properties}) "
        f"AS SELECT * FROM {quote_table(reference.name)}"
    )
    return reference, fast


def _rows(spark: Any, target: ResolvedTarget, skip: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple((k, v) for k, v in sorted(r.items()) if k not in skip) for r in read_back(spark, target)),
        key=repr,
    )


def _counts(outcome: Any) -> tuple[int, int, int, int]:
    return outcome.rows_inserted, outcome.rows_updated, outcome.rows_deleted, outcome.versions_closed


@pytest.fixture
def one_merge_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each call of the one-statement path returned (None: it fell back)."""
    calls: list[Any] = []
    original = spark_scd2.scd2_one_merge

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(original(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(spark_scd2, "scd2_one_merge", spy)
    return calls


def _write_both(
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    reference: ResolvedTarget,
    fast: ResolvedTarget,
    rows: list[tuple[Any, ...]],
    spec: WriteSpec,
) -> tuple[Any, Any]:
    frame = spark.createDataFrame(rows, SCHEMA)
    got = write_frame(spark, frame, fast, spec, CommitStamp("final", "dim"))
    with monkeypatch.context() as off:
        off.setattr(spark_scd2, "one_merge_applies", lambda *a, **k: False)
        want = write_frame(spark, frame, reference, spec, CommitStamp("final", "dim"))
    return got, want


@pytest.mark.parametrize(
    ("seed", "overrides", "unique", "skip"),
    [
        (1, {}, True, ()),
        (2, {}, False, ()),  # keys not proven unique: checked by one aggregation first
        (3, {"surrogate_key_strategy": "uuid"}, True, ("sk",)),
        (4, {"track_columns": [], "version_column": None, "surrogate_key": None}, True, ()),
    ],
)
def test_one_merge_equals_the_change_set_path(
    spark: Any,
    make_target: Make,
    monkeypatch: pytest.MonkeyPatch,
    one_merge_calls: list[Any],
    seed: int,
    overrides: dict[str, Any],
    unique: bool,
    skip: tuple[str, ...],
) -> None:
    spec = replace(_spec(**overrides), primary_key=("customer_id",), keys_unique=unique)
    reference, fast = _tables(spark, make_target, spec, seed)
    got, want = _write_both(
        spark, monkeypatch, reference, fast, _forward_batch(random.Random(seed + 50)), spec
    )
    assert one_merge_calls and one_merge_calls[0] is not None  # the batch took the one-statement path
    assert _rows(spark, fast, skip) == _rows(spark, reference, skip)
    assert _counts(got) == _counts(want)
    assert got.rows_inserted > 0 and got.versions_closed > 0 and got.snapshot is not None


def test_without_a_timestamp_field_the_run_time_is_the_change_time(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_merge_calls: list[Any]
) -> None:
    first, second = datetime(2026, 1, 1, 6, tzinfo=UTC), datetime(2026, 2, 1, 6, 30, tzinfo=UTC)
    spec = replace(_spec(timestamp_field=None), primary_key=("customer_id",), keys_unique=True)
    reference, fast = make_target("iceberg", "ref"), make_target("iceberg", "one")
    rng = random.Random(7)
    history = [(k, rng.choice(TIERS), "n0", _day(0), "c0") for k in range(KEYS)]
    write_frame(
        spark,
        spark.createDataFrame(history, SCHEMA),
        reference,
        replace(spec, as_of=first, scd2_forward=False),
        CommitStamp("h0", "dim"),
    )
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in ICEBERG_ROW_LEVEL_DEFAULTS.items())
    spark.sql(
        f"CREATE TABLE {quote_table(fast.name)} USING iceberg TBLPROPERTIES ({properties}) "
        f"AS SELECT * FROM {quote_table(reference.name)}"
    )
    later = replace(spec, as_of=second)
    got, want = _write_both(spark, monkeypatch, reference, fast, _forward_batch(random.Random(8)), later)
    assert one_merge_calls and one_merge_calls[0] is not None  # the batch took the one-statement path
    assert _rows(spark, fast) == _rows(spark, reference)
    assert _counts(got) == _counts(want) and got.versions_closed > 0
    closed = [r for r in read_back(spark, fast) if not r["is_current"]]
    assert closed and {r["effective_to"].replace(tzinfo=None) for r in closed} == {
        second.astimezone().replace(tzinfo=None)
    }


def test_classifying_a_cached_batch_keeps_its_cache(spark: Any) -> None:
    """The classification must not release the caller's cache of the batch (a dropped temporary view
    over a frame uncaches it): the key range was read from that cache, and the MERGE must see the same
    rows."""
    scd = _spec(surrogate_key=None, version_column=None).scd2
    assert scd is not None
    schema = "customer_id int, tier string, updated_at string, effective_from string, effective_to string, "
    schema += "is_current boolean"
    batch = spark.createDataFrame(
        [(1, "pro", _day(3), None, None, None, False)], schema + f", {DELETE_FLAG} boolean"
    ).persist()
    try:
        batch.count()
        stored = spark.createDataFrame([(1, "free", _day(1), "1900-01-01", "9999-12-31", True)], schema)
        target = StructType([f for f in batch.schema.fields if f.name != DELETE_FLAG])
        spec = replace(_spec(surrogate_key=None, version_column=None), primary_key=("customer_id",))
        classified = classified_batch(batch, stored, target, scd=scd, spec=spec)
        kinds = [(r["customer_id"], r[KIND], r["effective_from"]) for r in classified.collect()]
        cache = spark._jsparkSession.sharedState().cacheManager()
        assert cache.lookupCachedData(batch._jdf).isDefined()
        assert kinds == [(1, KNOWN, _day(3))]
    finally:
        batch.unpersist()


def test_an_untracked_change_updates_the_current_version_in_place_and_is_counted(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_merge_calls: list[Any]
) -> None:
    spec = _spec()
    reference, fast = _tables(spark, make_target, spec, 7)
    current = {r["customer_id"]: r for r in read_back(spark, fast) if r["is_current"]}
    key = min(current)
    rows = [(key, current[key]["tier"], "changed note", _day(60), "cf")]  # same tier, new note
    got, want = _write_both(spark, monkeypatch, reference, fast, rows, spec)
    assert one_merge_calls[0] is not None
    assert _rows(spark, fast) == _rows(spark, reference)
    assert _counts(got) == _counts(want) == (0, 1, 0, 0)
    notes = [r["note"] for r in read_back(spark, fast) if r["customer_id"] == key and r["is_current"]]
    assert notes == ["changed note"]


def test_an_identical_rerun_commits_nothing(
    spark: Any, make_target: Make, one_merge_calls: list[Any]
) -> None:
    spec = _spec()
    _, fast = _tables(spark, make_target, spec, 8)
    frame = spark.createDataFrame(_forward_batch(random.Random(9)), SCHEMA)
    write_frame(spark, frame, fast, spec, CommitStamp("first", "dim"))
    before = _rows(spark, fast)
    again = write_frame(spark, frame, fast, spec, CommitStamp("second", "dim"))
    # the same rows are no longer later than their keys' history: the change-set path finds no change
    assert one_merge_calls[0] is not None and one_merge_calls[-1] is None
    assert _rows(spark, fast) == before
    assert (_counts(again), again.committed, again.snapshot) == ((0, 0, 0, 0), False, None)


@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("late", ["one", "all"])
def test_a_batch_with_rows_that_are_not_forward_takes_the_change_set_path_whole(
    spark: Any,
    make_target: Make,
    monkeypatch: pytest.MonkeyPatch,
    one_merge_calls: list[Any],
    unique: bool,
    late: str,
) -> None:
    """A late row (not later than its key's history) is found inside the MERGE when the keys are proven
    unique (the branch is dropped unpublished), or by the first check otherwise only if it repeats a key;
    a batch of only late rows leaves the MERGE's source without any row to act on."""
    spec = replace(_spec(), primary_key=("customer_id",), keys_unique=unique)
    reference, fast = _tables(spark, make_target, spec, 11)
    rows = _forward_batch(random.Random(12))
    late_rows = [(key, "gold", "late", _day(1), "cf") for key in range(KEYS)]
    rows = late_rows if late == "all" else [late_rows[0], *(r for r in rows if r[0] != 0)]
    got, want = _write_both(spark, monkeypatch, reference, fast, rows, spec)
    assert one_merge_calls == [None]
    assert _rows(spark, fast) == _rows(spark, reference)
    assert _counts(got) == _counts(want)
    table = quote_table(fast.name)
    published = spark.sql(
        f"SELECT count(*) AS n FROM {table}.snapshots WHERE summary['lakelogic.run_id'] = 'final'"
    ).first()
    branches = [r["name"] for r in spark.sql(f"SELECT name FROM {table}.refs").collect()]
    assert branches == ["main"]
    assert published is not None and published["n"] >= 1


def test_a_second_forward_batch_into_files_with_deletes_counts_exactly(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_merge_calls: list[Any]
) -> None:
    """The counts follow from the snapshot's added records and deleted positions: a second forward batch
    closes versions in files the first one already deleted from (their delete files are replaced and
    carry the earlier positions too), with changed, unchanged, in-place and new keys in each batch."""
    spec = _spec()
    reference, fast = _tables(spark, make_target, spec, 21)
    rng = random.Random(22)
    for batch in range(2):
        rows = [
            (key, rng.choice(TIERS), f"n{rng.randrange(3)}", _day(50 + 10 * batch + rng.randrange(5)), "cf")
            for key in range(KEYS + 3 * (batch + 1))  # three new keys per batch
        ]
        frame = spark.createDataFrame(rows, SCHEMA)
        stamp = CommitStamp(f"forward-{batch}", "dim")
        got = write_frame(spark, frame, fast, spec, stamp)
        with monkeypatch.context() as off:
            off.setattr(spark_scd2, "one_merge_applies", lambda *a, **k: False)
            want = write_frame(spark, frame, reference, spec, stamp)
        assert one_merge_calls[-1] is not None  # both batches took the one-statement path
        assert _counts(got) == _counts(want)
        assert got.versions_closed > 0 and got.rows_updated > got.versions_closed  # some in place
    assert _rows(spark, fast) == _rows(spark, reference)


def test_observed_metrics_of_a_plan_without_the_node_are_none(spark: Any) -> None:
    """The positive case is every count above: the one-statement path reads them from its MERGE's plan."""
    assert observed_metrics(spark.sql("SELECT 1 AS one"), "lakelogic_missing") is None


def test_observed_metrics_of_a_frame_without_a_jvm_plan_are_none() -> None:
    """A Spark Connect frame has no JVM query execution to read: counts unknown, not a crash."""

    class ConnectFrame:
        pass

    assert observed_metrics(ConnectFrame(), "lakelogic_any") is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attr_type", "before", "after"),
    [
        ("array<string>", ["a"], ["a", None]),  # Spark's hash skips a nested NULL; the text does not
        ("struct<a:string,b:string>", (None, "x"), ("x", None)),
        ("timestamp", "2024-01-01 00:00:00.000001", "2024-01-01 00:00:00.000002"),  # text keeps ms
        ("double", 0.0, -0.0),  # equal values, different text: a change on every path
        # compared as values in the one MERGE (equal text is equal value for these types)
        ("string", "same", "same"),
        ("string", None, "x"),
        ("decimal(10,2)", Decimal("1.10"), Decimal("1.20")),
        ("date", date(2024, 1, 1), date(2024, 1, 1)),
    ],
)
def test_tracked_values_change_as_their_text_changes_on_both_paths(
    spark: Any,
    make_target: Make,
    monkeypatch: pytest.MonkeyPatch,
    one_merge_calls: list[Any],
    attr_type: str,
    before: Any,
    after: Any,
) -> None:
    """Every SCD2 path compares the tracked values' JSON text; the one MERGE decides "changed" by that
    text too (a hash of the values themselves would call a nested-NULL move unchanged and then fail its
    exact check, or call a microsecond-only change a change)."""
    schema = f"customer_id int, attr {attr_type}, updated_at string"
    spec = WriteSpec(
        strategy="scd2",
        scd2=scd2_spec_from(
            {"timestamp_field": "updated_at", "track_columns": ["attr"], "version_column": "version"},
            keys=("customer_id",),
        ),
    )

    def frame(value: Any, day: int) -> Any:
        if attr_type == "timestamp":  # microseconds survive a string cast, not a Python datetime's zone
            rows = spark.createDataFrame(
                [(1, value, _day(day))], "customer_id int, attr string, updated_at string"
            )
            return rows.withColumn("attr", rows["attr"].cast("timestamp"))
        return spark.createDataFrame([(1, value, _day(day))], schema)

    reference, fast = make_target("iceberg", "ref"), make_target("iceberg", "one")
    write_frame(spark, frame(before, 0), reference, spec, CommitStamp("h", "dim"))
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in ICEBERG_ROW_LEVEL_DEFAULTS.items())
    spark.sql(
        f"CREATE TABLE {quote_table(fast.name)} USING iceberg TBLPROPERTIES ({properties}) "
        f"AS SELECT * FROM {quote_table(reference.name)}"
    )
    got = write_frame(spark, frame(after, 5), fast, spec, CommitStamp("final", "dim"))
    with monkeypatch.context() as off:
        off.setattr(spark_scd2, "one_merge_applies", lambda *a, **k: False)
        want = write_frame(spark, frame(after, 5), reference, spec, CommitStamp("final", "dim"))
    assert one_merge_calls and one_merge_calls[0] is not None
    assert _rows(spark, fast) == _rows(spark, reference)
    assert _counts(got) == _counts(want)
