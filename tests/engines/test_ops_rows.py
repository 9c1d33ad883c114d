"""Spark execution of the row-changing ops: deduplicate(_by_latest), explode, date_diff,
date_range_explode."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import pytest

from lakelogic.errors import PlanError
from tests.engines.test_ops_columns import make_ctx, rows, run

pytestmark = pytest.mark.spark


def test_deduplicate_ties_nulls_and_determinism(spark: Any) -> None:
    ctx = make_ctx(spark)
    data = [
        (1, "2024-01-02", "b", 2),
        (1, "2024-01-02", "a", 9),  # tie on ts: the remaining columns decide ("a" < "b")
        (1, "2024-01-01", "z", 0),
        (1, None, "y", 0),  # NULL sort value comes last in either order
        (2, None, "p", 1),
        (2, None, "q", None),
        (None, "2024-01-05", "n1", 1),  # NULL keys are never collapsed
        (None, "2024-01-05", "n1", 1),
    ]
    df = spark.createDataFrame(data, "id int, ts string, v string, w int")
    expected_desc = [(None, "n1"), (None, "n1"), (1, "a"), (2, "p")]
    for partitions in (1, 3):
        shuffled = df.repartition(partitions)
        out = run(shuffled, ctx, {"deduplicate": {"on": ["id"], "sort_by": ["ts"]}})
        assert out.columns == ["id", "ts", "v", "w"]
        assert [(r["id"], r["v"]) for r in rows(out, "id", "v")] == expected_desc
    asc = rows(run(df, ctx, {"deduplicate": {"by": ["id"], "sort_by": ["ts"], "order": "asc"}}), "id", "v")
    assert [(r["id"], r["v"]) for r in asc] == [(None, "n1"), (None, "n1"), (1, "z"), (2, "p")]
    latest = run(df, ctx, {"deduplicate_by_latest": {"key_columns": ["id"], "timestamp_column": "ts"}})
    assert [(r["id"], r["v"]) for r in rows(latest, "id", "v")] == expected_desc
    # No key columns: all columns are the key; identical rows collapse, rows with a NULL are kept.
    full = spark.createDataFrame([(1, "x"), (1, "x"), (2, None), (2, None)], "a int, b string")
    assert len(rows(run(full, ctx, {"deduplicate": {}}))) == 3
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"deduplicate_by_latest": {"key_columns": ["id"], "timestamp_column": "nope"}})
    assert info.value.yaml_path == "transformations[0].deduplicate_by_latest.timestamp_column"


def test_deduplicate_keeps_the_same_zero_whatever_the_order(spark: Any) -> None:
    """Spark sorts 0.0 and -0.0 as equal, so the survivor of rows differing only there depended on input
    order and partitioning (and its sign shows in text and Parquet)."""
    ctx = make_ctx(spark)
    for schema, zero, negative in (
        ("id int, x double", 0.0, -0.0),
        ("id int, x array<double>", [0.0], [-0.0]),
        ("id int, x struct<y: double>", (0.0,), (-0.0,)),
    ):
        data = [(1, zero), (1, negative)]
        kept = set()
        for order, partitions in ((data, 1), (data[::-1], 1), (data, 3), (data[::-1], 3)):
            frame = spark.createDataFrame(order, schema).repartition(partitions)
            out = run(frame, ctx, {"deduplicate": {"on": ["id"]}})
            kept |= {str(r["x"]) for r in rows(out, "id", "x")}
        assert len(kept) == 1, (schema, kept)


def test_deduplicate_by_latest_compares_in_the_column_type(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, datetime(2024, 1, 9), "old"), (1, datetime(2024, 1, 10), "new")],
        "id int, ts timestamp, v string",
    )
    out = run(df, ctx, {"deduplicate_by_latest": {"key_columns": ["id"], "timestamp_column": "ts"}})
    assert [r["v"] for r in rows(out)] == ["new"]  # as text "2024-01-9" would not even be comparable


def test_explode_arrays_and_json_text(spark: Any) -> None:
    ctx = make_ctx(spark)
    arrays = spark.createDataFrame([(1, ["a", "b"]), (2, []), (3, None)], "id int, tags array<string>")
    out = run(arrays, ctx, {"explode": {"field": "tags", "output": "tag"}})
    assert out.columns == ["id", "tags", "tag"]
    assert [(r["id"], r["tag"]) for r in rows(out, "id", "tag")] == [(1, "a"), (1, "b"), (2, None), (3, None)]
    text = spark.createDataFrame(
        [(1, '["x",2,{"k":1}]'), (2, "[]"), (3, "oops"), (4, None), (5, "[1,2] trailing")], "id int, t string"
    )
    out = run(text, ctx, {"explode": {"field": "t"}})
    assert out.columns == ["id", "t"]  # output = field: replaced in place
    got = [(r["id"], r["t"]) for r in rows(out, "id", "t")]
    assert got == [(1, "2"), (1, "x"), (1, '{"k":1}'), (2, None), (3, None), (4, None), (5, None)]
    # split then explode round-trips the parts
    split = spark.createDataFrame([(1, "a,b,")], "id int, s string")
    parts = run(split, ctx, {"split": {"field": "s"}}, {"explode": {"field": "s", "output": "p"}})
    assert sorted(r["p"] for r in rows(parts)) == ["", "a", "b"]
    with pytest.raises(PlanError, match="not an array"):
        run(spark.createDataFrame([(1,)], "id int"), ctx, {"explode": {"field": "id"}})


def test_date_diff_units_and_inputs(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [
            (1, "2024-01-01", "20240131"),
            (2, "2024-01-31T23:30:00Z", "2024-02-29 00:10:00"),
            (3, "2024-03-10T10:00:00+02:00", "2024-03-10"),
            (4, "garbage", "2024-01-01"),
            (5, None, "2024-01-01"),
            (6, "2023-02-28", "2024-02-27"),
            # neither YYYY-MM-DD, YYYYMMDD nor ISO 8601 (Spark's own parser reads them): NULL
            (7, "2024-01-01", "2024-1-5"),
            (8, "2024-01-01", "2024-01-05T10:00:00Europe/Paris"),
            (9, "2024-01-01", "2024/01/05"),
        ],
        "id int, a string, b string",
    )
    units = ("days", "hours", "minutes", "weeks", "months", "years", "seconds")
    items = [{"date_diff": {"field": u, "from_col": "a", "to_col": "b", "unit": u}} for u in units]
    got = {r["id"]: r for r in rows(run(df, ctx, *items))}
    assert (got[1]["days"], got[1]["hours"], got[1]["weeks"], got[1]["months"]) == (30, 720, 4, 0)
    assert got[2]["days"] == 29  # calendar dates 01-31 -> 02-29
    assert got[2]["hours"] == 672  # 28 days and 40 minutes, truncated
    assert got[2]["minutes"] == 28 * 24 * 60 + 40
    assert got[2]["months"] == 0  # 01-31 23:30 -> 02-29 00:10 is not a whole month
    # 10:00+02:00 is 08:00 UTC; to midnight of the same day is -8 hours (truncated toward zero)
    assert (got[3]["days"], got[3]["hours"], got[3]["seconds"]) == (0, -8, -8 * 3600)
    assert all(got[i][u] is None for i in (4, 5, 7, 8, 9) for u in units)
    assert (got[6]["months"], got[6]["years"]) == (11, 0)
    months = spark.createDataFrame(
        [(1, "2024-01-31", "2024-02-29"), (2, "2024-03-15", "2024-01-20"), (3, "2020-05-01", "2024-04-30"),
         (4, "2024-01-15T10:00:00", "2023-12-15T09:00:00")],
        "id int, a string, b string",
    )  # fmt: skip
    got_m = rows(run(months, ctx, items[4], items[5]), "id")
    assert [(r["months"], r["years"]) for r in got_m] == [(1, 0), (-1, 0), (47, 3), (-1, 0)]
    typed = spark.createDataFrame(
        [(date(2024, 1, 1), datetime(2024, 1, 3, 5, 0), 20240105)], "d date, t timestamp, n bigint"
    )
    out = rows(
        run(
            typed,
            ctx,
            {"date_diff": {"field": "dt", "from_col": "d", "to_col": "t"}},
            {"date_diff": {"field": "dn", "from_col": "d", "to_col": "n"}},
            {"date_diff": {"field": "h", "from_col": "d", "to_col": "t", "unit": "hours"}},
        )
    )[0]
    assert (out["dt"], out["dn"], out["h"]) == (2, 4, 53)


def test_date_range_explode(spark: Any) -> None:
    ctx = make_ctx(spark)  # as_of 2024-03-10 15:30 UTC
    df = spark.createDataFrame(
        [
            (1, "2024-01-01", "2024-01-03"),
            (2, "2024-03-08", None),  # open end: through the run's as-of date
            (3, "2024-01-05", "2024-01-01"),  # end before start: no rows
            (4, None, "2024-01-01"),  # no start: no rows
            (5, "2024-02-01", "2024-02-01"),
            (6, "2024-01-01", "2024-01-0x"),  # an end that does not parse is no open end: no rows
        ],
        "id int, s string, e string",
    )
    out = run(df, ctx, {"date_range_explode": {"output": "day", "start_col": "s", "end_col": "e"}})
    assert out.columns == ["id", "s", "e", "day"]
    got = [(r["id"], r["day"]) for r in rows(out, "id", "day")]
    assert got == [
        (1, date(2024, 1, 1)),
        (1, date(2024, 1, 2)),
        (1, date(2024, 1, 3)),
        (2, date(2024, 3, 8)),
        (2, date(2024, 3, 9)),
        (2, date(2024, 3, 10)),
        (5, date(2024, 2, 1)),
    ]
    weekly = run(
        df.where("id = 1"),
        ctx,
        {"date_range_explode": {"output": "s", "start_col": "s", "end_col": "e", "interval": "1w"}},
    )
    assert [r["s"] for r in rows(weekly)] == [date(2024, 1, 1)]  # replaces `s` in place
    monthly = spark.createDataFrame([(1, date(2024, 1, 31), date(2024, 4, 30))], "id int, s date, e date")
    got_months = rows(
        run(
            monthly,
            ctx,
            {"date_range_explode": {"output": "m", "start_col": "s", "end_col": "e", "interval": "1mo"}},
        ),
        "m",
    )
    assert [r["m"] for r in got_months] == [
        date(2024, 1, 31),
        date(2024, 2, 29),
        date(2024, 3, 31),
        date(2024, 4, 30),
    ]
    hourly = spark.createDataFrame([(1, "2024-03-10T12:00:00Z")], "id int, s string")
    got_hours = rows(
        run(hourly, ctx, {"date_range_explode": {"output": "h", "start_col": "s", "interval": "2h"}}), "h"
    )
    assert [r["h"].hour for r in got_hours] == [12, 14]  # until the as-of instant 15:30


def test_deduplicate_on_all_columns_compares_map_columns_by_content(spark: Any) -> None:
    """Empty `on` = all columns (§9.2), maps included: rows differing only in a map are kept, equal maps
    (whatever their entry order) collapse, and the survivor is decided by the tie rule."""
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [
            (1, {"a": "1"}, "x"),
            (1, {"a": "2"}, "x"),
            (2, {"a": "1", "b": "2"}, "y"),
            (2, {"b": "2", "a": "1"}, "y"),
        ],
        "id int, m map<string,string>, t string",
    )
    out = rows(run(df, ctx, {"deduplicate": {}}), "id")
    assert [(r["id"], r["m"]) for r in sorted(out, key=lambda r: (r["id"], sorted(r["m"].items())))] == [
        (1, {"a": "1"}),
        (1, {"a": "2"}),
        (2, {"a": "1", "b": "2"}),
    ]
    # a map column as the key, and as the tie-breaker for the survivor of a key
    keyed = rows(run(df, ctx, {"deduplicate": {"on": ["id"]}}), "id")
    assert [(r["id"], r["m"]) for r in keyed] == [(1, {"a": "1"}), (2, {"a": "1", "b": "2"})]
    by_map = run(df, ctx, {"deduplicate": {"on": ["m"]}})
    assert by_map.count() == 3
