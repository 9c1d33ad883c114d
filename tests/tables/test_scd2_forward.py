"""SCD2 forward keys (tables/spark_scd2_forward.py) give exactly the general computation's table.

Histories are built by the general computation from seeded random batches (several changes per key,
late rows, untracked changes, re-appearing values), then one more batch mixing forward keys (new keys,
one later change, one later unchanged row) with keys only the general computation handles is written
with and without the forward path. The two tables and the reported counts must be identical.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from lakelogic.tables import spark_scd2
from lakelogic.tables.spark_scd2_forward import one_row_per_key
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec, scd2_spec_from
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "customer_id int, tier string, note string, updated_at string, _lakelogic_created_at string"
TIERS = ("free", "pro", "gold")
KEYS = 12


def _spec(**overrides: Any) -> WriteSpec:
    settings: dict[str, Any] = {
        "timestamp_field": "updated_at",
        "track_columns": ["tier"],
        "version_column": "version",
        "change_reason_column": "reason",
        "surrogate_key": "sk",
    }
    settings.update(overrides)
    return WriteSpec(strategy="scd2", scd2=scd2_spec_from(settings, keys=("customer_id",)))


def _day(n: int) -> str:
    return f"2024-{1 + n // 28:02d}-{1 + n % 28:02d}"


def _history_batches(rng: random.Random) -> list[list[tuple[Any, ...]]]:
    """Three batches over days 0..59: repeated keys, late rows and unchanged rows included."""
    batches = []
    for b in range(3):
        rows: dict[tuple[int, str], tuple[Any, ...]] = {}
        for _ in range(10):
            key = rng.randrange(KEYS)
            day = rng.randrange(20 * b, 20 * b + 20) if rng.random() < 0.8 else rng.randrange(0, 60)
            rows[(key, _day(day))] = (key, rng.choice(TIERS), f"n{rng.randrange(3)}", _day(day), f"c{b}")
        batches.append(list(rows.values()))
    return batches


def _final_batch(rng: random.Random) -> list[tuple[Any, ...]]:
    """Forward rows (later than all history: days 70+) for most keys, new keys, and some keys that need
    the general computation (two changes, a late row)."""
    rows = []
    for key in range(KEYS + 4):  # keys >= KEYS are new
        kind = rng.random()
        if kind < 0.6:
            rows.append((key, rng.choice(TIERS), f"n{rng.randrange(3)}", _day(70 + rng.randrange(10)), "cf"))
        elif kind < 0.75:
            rows.append((key, rng.choice(TIERS), "n9", _day(70), "cf"))
            rows.append((key, rng.choice(TIERS), "n8", _day(75), "cf"))
        elif kind < 0.85:
            rows.append((key, rng.choice(TIERS), "late", _day(rng.randrange(0, 60)), "cf"))
    return rows


def _table(spark: Any, target: ResolvedTarget, *, skip: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple((k, v) for k, v in sorted(row.items()) if k not in skip) for row in read_back(spark, target)),
        key=repr,  # a NULL key sorts too
    )


def _build_history(spark: Any, target: ResolvedTarget, spec: WriteSpec, seed: int) -> None:
    general = replace(spec, scd2_forward=False)
    for i, rows in enumerate(_history_batches(random.Random(seed))):
        write_frame(spark, spark.createDataFrame(rows, SCHEMA), target, general, CommitStamp(f"h{i}", "dim"))


@pytest.mark.parametrize(
    ("seed", "overrides", "skip"),
    [
        (1, {}, ()),
        (3, {"surrogate_key_strategy": "uuid"}, ("sk",)),
        (4, {"track_columns": [], "version_column": None, "change_reason_column": None}, ()),
    ],
)
def test_forward_path_equals_general_computation(
    spark: Any, make_target: Make, seed: int, overrides: dict[str, Any], skip: tuple[str, ...]
) -> None:
    spec = _spec(**overrides)
    fast, reference = make_target("iceberg", "fwd"), make_target("iceberg", "ref")
    _build_history(spark, reference, spec, seed)
    spark.sql(f"CREATE TABLE {fast.name} USING iceberg AS SELECT * FROM {reference.name}")
    final = spark.createDataFrame(_final_batch(random.Random(seed + 100)), SCHEMA)
    got = write_frame(spark, final, fast, spec, CommitStamp("f", "dim"))
    want = write_frame(spark, final, reference, replace(spec, scd2_forward=False), CommitStamp("f", "dim"))
    assert _table(spark, fast, skip=skip) == _table(spark, reference, skip=skip)
    assert (got.rows_inserted, got.rows_updated, got.rows_deleted, got.versions_closed) == (
        want.rows_inserted,
        want.rows_updated,
        want.rows_deleted,
        want.versions_closed,
    )
    assert got.rows_inserted > 0 and got.versions_closed > 0  # the final batch did change things


def test_all_forward_batch_skips_the_general_computation(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = make_target("iceberg", "only")
    spec = _spec()
    first = [(k, "free", "n0", _day(1), "c0") for k in range(4)]
    write_frame(spark, spark.createDataFrame(first, SCHEMA), target, spec, CommitStamp("a", "dim"))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general computation ran for a batch of forward keys")

    monkeypatch.setattr(spark_scd2, "compute_versions", refuse)
    batch = [
        (0, "pro", "n0", _day(5), "c1"),  # closes version 1, opens version 2
        (1, "free", "n1", _day(5), "c1"),  # same tier: the note is updated in place
        (2, "free", "n0", _day(5), "c1"),  # nothing changes
        (9, "gold", "n0", _day(5), "c1"),  # a new key
    ]
    out = write_frame(spark, spark.createDataFrame(batch, SCHEMA), target, spec, CommitStamp("b", "dim"))
    assert (out.rows_inserted, out.rows_updated, out.versions_closed) == (2, 2, 1)
    fields = ("tier", "note", "effective_to", "is_current", "reason")
    rows = {(r["customer_id"], r["version"]): tuple(r[f] for f in fields) for r in read_back(spark, target)}
    end = rows[(2, 1)][2]
    assert rows == {
        (0, 1): ("free", "n0", _day(5), False, "initial_load"),
        (0, 2): ("pro", "n0", end, True, "tier"),
        (1, 1): ("free", "n1", end, True, "initial_load"),
        (2, 1): ("free", "n0", end, True, "initial_load"),
        (3, 1): ("free", "n0", end, True, "initial_load"),
        (9, 1): ("gold", "n0", end, True, "initial_load"),
    }


def test_key_with_two_current_versions_takes_the_general_computation(spark: Any, make_target: Make) -> None:
    """Hand-edited history (two current versions of key 1) is not forward: both paths give one table."""
    spec = _spec()
    fast, reference = make_target("iceberg", "fwd2"), make_target("iceberg", "ref2")
    first = [(k, "free", "n0", _day(1), "c0") for k in range(3)]
    write_frame(
        spark,
        spark.createDataFrame(first, SCHEMA),
        reference,
        replace(spec, scd2_forward=False),
        CommitStamp("a", "d"),
    )
    spark.sql(
        f"INSERT INTO {reference.name} SELECT customer_id, 'pro', note, '2024-01-05', _lakelogic_created_at, "
        f"'2024-01-05', effective_to, true, 2, sk, reason FROM {reference.name} WHERE customer_id = 1"
    )
    spark.sql(f"CREATE TABLE {fast.name} USING iceberg AS SELECT * FROM {reference.name}")
    batch = spark.createDataFrame(
        [(1, "gold", "n0", _day(9), "c1"), (2, "gold", "n0", _day(9), "c1")], SCHEMA
    )
    got = write_frame(spark, batch, fast, spec, CommitStamp("b", "d"))
    want = write_frame(spark, batch, reference, replace(spec, scd2_forward=False), CommitStamp("b", "d"))
    assert _table(spark, fast) == _table(spark, reference)
    assert (got.rows_inserted, got.rows_updated) == (want.rows_inserted, want.rows_updated)
    assert sum(1 for r in read_back(spark, fast) if r["customer_id"] == 1 and r["is_current"]) == 1


def test_batch_row_with_a_null_key_is_not_dropped(spark: Any, make_target: Make) -> None:
    """A NULL business key is never forward: its row goes to the general computation like any other
    non-forward row, so both paths write the same table and the row is in it."""
    spec = _spec()
    fast, reference = make_target("iceberg", "fwdnull"), make_target("iceberg", "refnull")
    first = [(k, "free", "n0", _day(1), "c0") for k in range(3)]
    general = replace(spec, scd2_forward=False)
    write_frame(spark, spark.createDataFrame(first, SCHEMA), reference, general, CommitStamp("a", "d"))
    spark.sql(f"CREATE TABLE {fast.name} USING iceberg AS SELECT * FROM {reference.name}")
    batch = spark.createDataFrame(
        [(None, "gold", "n0", _day(9), "c1"), (2, "pro", "n0", _day(9), "c1")], SCHEMA
    )
    got = write_frame(spark, batch, fast, spec, CommitStamp("b", "d"))
    want = write_frame(spark, batch, reference, general, CommitStamp("b", "d"))
    assert _table(spark, fast) == _table(spark, reference)
    assert (got.rows_inserted, got.rows_updated) == (want.rows_inserted, want.rows_updated)
    assert [r["tier"] for r in read_back(spark, fast) if r["customer_id"] is None] == ["gold"]


def test_batch_proven_unique_on_the_key_gives_the_same_table(spark: Any, make_target: Make) -> None:
    """``keys_unique`` (a passed `unique` rule over the primary key) skips the per-key count; a unique rule
    lets several NULL keys through, and those rows still reach the general computation."""
    spec = replace(_spec(), primary_key=("customer_id",), keys_unique=True)
    fast, reference = make_target("iceberg", "fwduq"), make_target("iceberg", "refuq")
    _build_history(spark, reference, spec, 7)
    spark.sql(f"CREATE TABLE {fast.name} USING iceberg AS SELECT * FROM {reference.name}")
    one_per_key = {row[0]: row for row in _final_batch(random.Random(107))}
    rows = [*one_per_key.values(), (None, "gold", "n0", _day(80), "cf"), (None, "pro", "n1", _day(81), "cf")]
    final = spark.createDataFrame(rows, SCHEMA)
    got = write_frame(spark, final, fast, spec, CommitStamp("f", "dim"))
    want = write_frame(spark, final, reference, replace(spec, scd2_forward=False), CommitStamp("f", "dim"))
    assert _table(spark, fast) == _table(spark, reference)
    assert (got.rows_inserted, got.rows_updated, got.versions_closed) == (
        want.rows_inserted,
        want.rows_updated,
        want.versions_closed,
    )
    assert sum(1 for r in read_back(spark, fast) if r["customer_id"] is None) == 2


def test_per_key_count_is_known_only_when_the_business_key_holds_the_proven_key() -> None:
    proven = replace(_spec(), primary_key=("customer_id",), keys_unique=True)
    assert one_row_per_key(proven, ["customer_id"])
    assert one_row_per_key(proven, ["customer_id", "region"])  # a superset of a unique key is unique
    assert not one_row_per_key(replace(proven, primary_key=("customer_id", "region")), ["customer_id"])
    assert not one_row_per_key(replace(proven, keys_unique=False), ["customer_id"])
    assert not one_row_per_key(replace(proven, primary_key=()), ["customer_id"])
