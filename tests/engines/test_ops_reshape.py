"""Spark execution of rollup, pivot and unpivot."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from tests.engines.test_ops_columns import make_ctx, rows, run

pytestmark = pytest.mark.spark


def test_rollup_keys_counts_and_upstream_run_ids(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [
            ("a", 1, "k1", "x", 10, "run-2"),
            ("a", 2, "k1", "x", 5, "run-1"),
            ("a", 3, "k0", None, 1, "run-2"),
            (None, 4, "k9", "y", 2, None),
            (None, 5, None, "y", 3, "run-3"),
        ],
        "g string, id int, k string, part string, v int, _lakelogic_run_id string",
    )
    out = run(
        df,
        ctx,
        {
            "rollup": {
                "group_by": ["g"],
                "aggregations": {"total": "sum(v)", "n": "count(*)"},
                "keys": ["k", "part"],
            }
        },
    )
    assert out.columns == [
        "g",
        "total",
        "n",
        "_lakelogic_rollup_keys",
        "_lakelogic_rollup_keys_count",
        "_upstream_lakelogic_run_ids",
    ]
    got = {r["g"]: r for r in rows(out)}
    assert set(got) == {"a", None}  # NULL group_by values group together
    assert (got["a"]["total"], got["a"]["n"]) == (16, 3)
    # multi-column keys joined with "|"; a key with a NULL part is skipped; distinct and sorted
    assert got["a"]["_lakelogic_rollup_keys"] == ["k1|x"]
    assert got["a"]["_lakelogic_rollup_keys_count"] == 1
    assert got[None]["_lakelogic_rollup_keys"] == ["k9|y"]
    # upstream_run_id_column is absent, so the frame's own _lakelogic_run_id is used
    assert got["a"]["_upstream_lakelogic_run_ids"] == ["run-1", "run-2"]
    assert got[None]["_upstream_lakelogic_run_ids"] == ["run-3"]
    single = run(df, ctx, {"rollup": {"group_by": ["g"], "keys": ["id"], "distinct": False}})
    by_g = {r["g"]: r["_lakelogic_rollup_keys"] for r in rows(single)}
    assert by_g == {"a": ["1", "2", "3"], None: ["4", "5"]}
    expr = run(df.drop("_lakelogic_run_id"), ctx, {"rollup": {"group_by": ["g"], "key_expr": "upper(k)"}})
    assert "_upstream_lakelogic_run_ids" not in expr.columns
    assert {r["g"]: r["_lakelogic_rollup_keys_count"] for r in rows(expr)} == {"a": 2, None: 1}


def test_pivot_declared_and_inferred_values(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [
            (1, "q1", 10, 1),
            (1, "q1", 30, 2),
            (1, "q2", 5, 3),
            (2, "q2", None, 4),
            (2, "q3", 7, 5),
            (3, None, 9, 6),
        ],
        "id int, quarter string, amount int, n int",
    )
    declared = run(
        df,
        ctx,
        {"pivot": {"id_vars": ["id"], "pivot_col": "quarter", "value_col": "amount", "values": ["q1", "q2"],
                   "value_aliases": {"q1": "first_q"}}},
    )  # fmt: skip
    assert declared.columns == ["id", "first_q", "q2"]
    got = {r["id"]: (r["first_q"], r["q2"]) for r in rows(declared)}
    assert got == {1: (10, 5), 2: (None, None), 3: (None, None)}  # first = smallest non-NULL
    several = run(
        df,
        ctx,
        {"pivot": {"id_vars": ["id"], "pivot_col": "quarter", "value_cols": ["amount", "n"], "values": ["q1"],
                   "agg": "last", "aggs": {"n": "count"}, "fill_value": 0}},
    )  # fmt: skip
    assert several.columns == ["id", "amount_q1", "n_q1"]
    assert {r["id"]: (r["amount_q1"], r["n_q1"]) for r in rows(several)} == {1: (30, 2), 2: (0, 0), 3: (0, 0)}
    assert ctx.warnings == []
    inferred = run(
        df, ctx, {"pivot": {"id_vars": ["id"], "pivot_col": "quarter", "value_col": "amount", "agg": "sum"}}
    )
    assert inferred.columns == ["id", "q1", "q2", "q3"]  # distinct non-NULL values sorted as text
    assert {r["id"]: (r["q1"], r["q2"], r["q3"]) for r in rows(inferred)}[1] == (40, 5, None)
    assert len(ctx.warnings) == 1 and ctx.warnings[0].startswith("pivot_values_inferred")
    # several pivot columns: each value is a list; names join the value texts with the separator
    two = spark.createDataFrame(
        [(1, "a", 1, 5), (1, "a", 2, 6), (1, "b", 1, 7)], "id int, p string, q int, v int"
    )
    wide = run(
        two,
        ctx,
        {"pivot": {"id_vars": ["id"], "pivot_cols": ["p", "q"], "value_col": "v",
                   "values": [["a", 1], ["b", 1]], "separator": "-", "agg": "count"}},
    )  # fmt: skip
    assert wide.columns == ["id", "a-1", "b-1"]
    assert rows(wide) == [{"id": 1, "a-1": 1, "b-1": 1}]


def test_unpivot_types_nulls_aliases(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, 2, 3.5, "x", date(2024, 1, 1)), (2, None, 1.0, None, None)],
        "id int, a int, b double, s string, d date",
    )
    numbers = run(
        df, ctx, {"unpivot": {"id_vars": ["id"], "value_vars": ["a", "b"], "value_aliases": {"a": "alpha"}}}
    )
    assert numbers.columns == ["id", "key", "value"]
    assert dict(numbers.dtypes)["value"] == "double"  # numeric values widen to their common type
    got = [(r["id"], r["key"], r["value"]) for r in rows(numbers, "id", "key")]
    assert got == [(1, "alpha", 2.0), (1, "b", 3.5), (2, "b", 1.0)]  # NULL dropped
    mixed = run(
        df,
        ctx,
        {
            "unpivot": {
                "id_vars": ["id"],
                "value_cols": ["a", "s", "d"],
                "key_field": "k",
                "value_field": "v",
                "include_nulls": True,
            }
        },
    )
    assert dict(mixed.dtypes)["v"] == "string"  # no common type: text
    got = [(r["id"], r["k"], r["v"]) for r in rows(mixed, "id", "k")]
    assert got == [
        (1, "a", "2"),
        (1, "d", "2024-01-01"),
        (1, "s", "x"),
        (2, "a", None),
        (2, "d", None),
        (2, "s", None),
    ]
