"""Spark execution of the ops that read links or replace the frame: lookup, join, sql."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.errors import PlanError
from tests.engines.test_ops_columns import make_ctx, rows, run

pytestmark = pytest.mark.spark


def test_lookup_duplicates_defaults_and_key_types(spark: Any) -> None:
    regions = spark.createDataFrame(
        [("1", "emea"), ("1", "amer"), ("2", None), ("3", "apac"), (None, "nowhere")],
        "code string, region string",
    )
    ctx = make_ctx(spark, regions=regions)
    df = spark.createDataFrame(
        [(1, 1, "x"), (2, 2, "y"), (3, 4, "z"), (4, None, "w"), (5, 1, "v")], "id int, c int, region string"
    )
    out = run(
        df,
        ctx,
        {"lookup": {"field": "region", "reference": "regions", "on": "c", "key": "code", "value": "region",
                    "default_value": "unknown"}},
    )  # fmt: skip
    assert out.columns == ["id", "c", "region"]  # replaced in place
    got = rows(out, "id")
    assert len(got) == 5  # row count never changes, even with duplicate reference keys
    # int key vs string key compared as text; duplicates -> smallest value; no match/NULL -> default
    assert [r["region"] for r in got] == ["amer", "unknown", "unknown", "unknown", "amer"]
    plain = rows(
        run(
            df,
            ctx,
            {"lookup": {"field": "r2", "reference": "regions", "on": "c", "key": "code", "value": "region"}},
        ),
        "id",
    )
    assert [r["r2"] for r in plain] == ["amer", None, None, None, "amer"]
    # Duplicate keys are found by an observation during the run's own action, not by an extra job.
    from lakelogic.engines.spark.ops import resolve_pending_warnings

    assert ctx.warnings == []
    warnings = resolve_pending_warnings(ctx, timeout=10.0)
    assert len(warnings) == 2, warnings  # both lookups ran (collected) and both saw key "1" twice
    for w in warnings:
        assert w.startswith("lookup_duplicate_keys: transformations[0]") and "(up to 2)" in w, w
    assert ctx.warnings == warnings and ctx.pending_warnings == []
    unique = spark.createDataFrame([("1", "emea")], "code string, region string")
    ctx_unique = make_ctx(spark, regions=unique)
    run(
        df,
        ctx_unique,
        {"lookup": {"field": "r", "reference": "regions", "on": "c", "key": "code", "value": "region"}},
    ).collect()
    assert resolve_pending_warnings(ctx_unique, timeout=10.0) == []
    # A lookup whose frame never ran (e.g. the run stopped early) yields no warning and does not hang.
    run(
        df,
        ctx_unique,
        {"lookup": {"field": "r", "reference": "regions", "on": "c", "key": "code", "value": "region"}},
    )
    assert resolve_pending_warnings(ctx_unique, timeout=0.2) == []
    with pytest.raises(PlanError) as info:
        run(
            df,
            ctx,
            {"lookup": {"field": "f", "reference": "nope", "on": "c", "key": "code", "value": "region"}},
        )
    assert info.value.yaml_path == "transformations[0].lookup.reference"
    with pytest.raises(PlanError, match="no column"):
        run(
            df,
            ctx,
            {"lookup": {"field": "f", "reference": "regions", "on": "c", "key": "code", "value": "nope"}},
        )


def test_keys_of_different_types_compare_as_their_5_3_text(spark: Any) -> None:
    """§9.2: differing key types compare as text, and §5.3 writes a timestamp as ISO 8601 (as
    ``map_values`` compares it): a timestamp key matches ``2024-01-15T10:00:00Z``, not only Spark's
    ``2024-01-15 10:00:00``."""
    slots = spark.createDataFrame(
        [("2024-01-15T10:00:00Z", "morning"), ("2024-01-15 12:00:00", "spark-text")],
        "ts string, label string",
    )
    ctx = make_ctx(spark, slots=slots)
    df = spark.createDataFrame([(1, "2024-01-15 10:00:00"), (2, "2024-01-15 12:00:00")], "id int, at string")
    df = df.selectExpr("id", "CAST(at AS TIMESTAMP) AS at")
    lookup = {"field": "label", "reference": "slots", "on": "at", "key": "ts", "value": "label"}
    assert [r["label"] for r in rows(run(df, ctx, {"lookup": lookup}), "id")] == ["morning", None]
    join = {"reference": "slots", "on": "at", "key": "ts", "fields": ["label"]}
    assert [r["label"] for r in rows(run(df, ctx, {"join": join}), "id")] == ["morning", None]


def test_join_types_prefix_defaults(spark: Any) -> None:
    seg = spark.createDataFrame(
        [(10, "vip", "EU"), (20, "std", None), (20, "std2", "US"), (30, "new", "APAC")],
        "cid int, segment string, region string",
    )
    ctx = make_ctx(spark, seg_ref=seg)
    df = spark.createDataFrame(
        [(1, 10, "old"), (2, 20, "old"), (3, 99, "old")], "id int, cid int, segment string"
    )
    left = run(
        df,
        ctx,
        {"join": {"reference": "seg_ref", "on": "cid", "key": "cid", "fields": ["segment", "region"],
                  "defaults": {"region": "??"}}},
    )  # fmt: skip
    assert left.columns == ["id", "cid", "segment", "region"]  # key not added; segment replaced in place
    got = [(r["id"], r["segment"], r["region"]) for r in rows(left, "id", "segment")]
    assert got == [(1, "vip", "EU"), (2, "std", "??"), (2, "std2", "US"), (3, None, "??")]  # fan-out kept
    inner = run(
        df,
        ctx,
        {
            "join": {
                "reference": "seg_ref",
                "on": "cid",
                "key": "cid",
                "fields": ["region"],
                "type": "inner",
                "prefix": "ref_",
            }
        },
    )
    assert inner.columns == ["id", "cid", "segment", "ref_region"]
    got_inner = sorted(((r["id"], r["ref_region"]) for r in rows(inner)), key=repr)
    assert got_inner == [(1, "EU"), (2, "US"), (2, None)]
    full = run(
        df,
        ctx,
        {
            "join": {
                "reference": "seg_ref",
                "on": "cid",
                "key": "cid",
                "fields": ["cid", "segment"],
                "type": "full",
            }
        },
    )
    got_full = sorted(((r["cid"], r["id"], r["segment"]) for r in rows(full)), key=repr)
    # the key listed under the frame's key name keeps the frame key, else takes the reference key
    assert got_full == [(10, 1, "vip"), (20, 2, "std"), (20, 2, "std2"), (30, None, "new"), (99, 3, None)]
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"join": {"reference": "seg_ref", "on": "nope", "key": "cid", "fields": ["region"]}})
    assert info.value.yaml_path == "transformations[0].join.on"


def test_sql_op_binds_source_dataset_and_links_to_private_views(spark: Any) -> None:
    regions = spark.createDataFrame([(1, "emea")], "c int, region string")
    ctx = make_ctx(spark, regions=regions)
    df = spark.createDataFrame([(1, 5), (1, 7), (2, 1)], "c int, v int")
    out = run(
        df,
        ctx,
        {"sql": "SELECT s.c, sum(v) AS total FROM source s GROUP BY s.c"},
        {
            "sql": "WITH t AS (SELECT * FROM {dataset}) "
            "SELECT t.c, t.total, r.region FROM t LEFT JOIN regions r ON t.c = r.c"
        },
        {"sql": "SELECT orders.* FROM orders WHERE total > 1"},  # the dataset's own name
        {"derive": {"field": "n_regions", "sql": "(SELECT count(*) FROM regions)"}},
    )
    assert rows(out, "c") == [{"c": 1, "total": 12, "region": "emea", "n_regions": 1}]
    # no view named `source` (or anything else of ours) is left in the session for other runs
    leftover = [t.name for t in spark.catalog.listTables() if t.name.startswith("__ll_")]
    assert leftover == []
    assert "source" not in [t.name for t in spark.catalog.listTables()]
    with pytest.raises(PlanError, match="placeholder"):
        run(df, ctx, {"sql": "SELECT * FROM {other}"})


def test_sql_views_are_unique_per_run(spark: Any) -> None:
    from lakelogic.engines.spark.ops import apply_transform
    from lakelogic.plan.ops import compile_transform

    step = compile_transform(0, {"sql": "SELECT v + 1 AS v FROM source"}, "transformations[0]")
    ctx_a, ctx_b = make_ctx(spark), make_ctx(spark)
    ctx_b.run_id = "another-run"
    a = apply_transform(step, spark.createDataFrame([(1,)], "v int"), ctx_a)
    b = apply_transform(step, spark.createDataFrame([(100,)], "v int"), ctx_b)
    # a and b were built from the same op on the same session; each still reads its own frame
    assert [r["v"] for r in a.collect()] == [2]
    assert [r["v"] for r in b.collect()] == [101]


def test_a_link_named_like_the_dataset_is_the_link_in_sql_ops(spark: Any, tmp_path: Any) -> None:
    """§4: links are named for sql ops; the dataset's own name is a synonym of ``source`` only while no
    link claims it (before, the link was silently replaced by the source and nothing was filtered)."""
    from lakelogic.api import DataProcessor

    allow = str(tmp_path / "allow")
    spark.createDataFrame([("1",)], "c string").write.parquet(allow)
    doc = {
        "version": "1.0.0",
        "info": {"title": "probe", "table_name": "probe"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "c", "type": "string"}]},
        "links": [{"name": "probe", "path": allow}],
        "transformations": [{"sql": "SELECT * FROM source WHERE c IN (SELECT c FROM probe)"}],
    }
    source = spark.createDataFrame([(1, "1"), (2, "7")], "id int, c string")
    result = DataProcessor(doc, spark=spark).run(source)
    assert [r["id"] for r in result.good.collect()] == [1]
    assert result.report.counts.filtered == 1


@pytest.mark.parametrize(
    ("extra", "key"),
    [({"filter": "nocol = 1"}, "filter"), ({"query": "SELECT code, nme AS name FROM {link}"}, "query")],
)
def test_a_link_filter_or_query_spark_rejects_names_the_link(
    spark: Any, tmp_path: Any, extra: dict[str, str], key: str
) -> None:
    from lakelogic.api import DataProcessor

    ref = str(tmp_path / "ref")
    spark.createDataFrame([("1", "one")], "code string, name string").write.parquet(ref)
    doc = {
        "version": "1.0.0",
        "info": {"title": "l", "table_name": "l"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "c", "type": "string"}]},
        "links": [{"name": "ref", "path": ref, **extra}],
        "transformations": [
            {"lookup": {"field": "nm", "reference": "ref", "on": "c", "key": "code", "value": "name"}}
        ],
    }
    report = DataProcessor(doc, spark=spark).run(spark.createDataFrame([(1, "1")], "id int, c string")).report
    assert report.status == "failed" and report.error is not None
    assert f"links[0].{key}" in report.error.message and "link 'ref'" in report.error.message
