"""Spark execution of the column ops (trim, case, coalesce, map_values, rename, select, drop, derive,
filter, split, json_extract, bucket) on small frames."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from lakelogic.errors import EngineError, PlanError
from lakelogic.plan.ops import compile_transform

pytestmark = pytest.mark.spark


def make_ctx(spark: Any, **links: Any) -> Any:
    from lakelogic.engines.spark.context import SparkRunContext

    return SparkRunContext(
        spark=spark, run_id="run-7f3a", as_of=datetime(2024, 3, 10, 15, 30, tzinfo=UTC), links=dict(links)
    )


def run(frame: Any, ctx: Any, *items: dict[str, Any]) -> Any:
    from lakelogic.engines.spark.ops import apply_transform

    for i, item in enumerate(items):
        frame = apply_transform(
            compile_transform(i, item, f"transformations[{i}]", dataset="orders"), frame, ctx
        )
    return frame


def rows(frame: Any, *order: str) -> list[dict[str, Any]]:
    ordered = frame.orderBy(*order) if order else frame
    return [r.asDict() for r in ordered.collect()]


def test_trim_case_and_in_place_replacement(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, " \t a b \n\x0b\x0c", "  x  ", "\u00a0keep\u00a0", "Straße"), (2, None, "", "y", "İi")],
        "id int, a string, b string, c string, d string",
    )
    out = run(
        df,
        ctx,
        {"trim": {"fields": ["a", "c", "id"]}},
        {"trim": {"fields": ["b"], "side": "left"}},
        {"upper": {"fields": ["d"]}},
    )
    assert out.columns == ["id", "a", "b", "c", "d"]  # replaced in place, nothing appended
    got = rows(out, "id")
    # ASCII whitespace only: a non-breaking space is not trimmed; the int column is untouched.
    assert got[0] == {"id": 1, "a": "a b", "b": "x  ", "c": "\u00a0keep\u00a0", "d": "STRASSE"}
    assert got[1]["a"] is None and got[1]["b"] == ""
    right = rows(
        run(df, ctx, {"trim": {"fields": ["b"], "side": "right"}}, {"lower": {"fields": ["d"]}}), "id"
    )
    assert right[0]["b"] == "  x" and right[0]["d"] == "straße"


def test_coalesce_map_values_and_derive(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, None, "b1", 10, True), (2, None, None, 20, False), (3, "a3", "b3", None, None)],
        "id int, a string, b string, n int, flag boolean",
    )
    out = run(
        df,
        ctx,
        {"coalesce": {"field": "a", "sources": ["a", "b"], "default": "none", "output": "ab"}},
        {"coalesce": {"field": "n", "default": 0}},
        {"map_values": {"field": "n", "mapping": {"10": "ten", "0": "zero"}, "output": "n_text"}},
        {"map_values": {"field": "flag", "mapping": {True: "Y"}, "default": "N", "output": "flag_text"}},
        {"map_values": {"field": "b", "mapping": {"b1": "B1"}}},
        {"map_values": {"field": "flag", "mapping": {"true": "yes"}, "output": "flag_word"}},
        {"derive": {"field": "id", "sql": "id * 100"}},
    )
    assert out.columns == ["id", "a", "b", "n", "flag", "ab", "n_text", "flag_text", "flag_word"]
    got = rows(out, "id")
    assert [r["ab"] for r in got] == ["b1", "none", "a3"]
    assert [r["n"] for r in got] == [10, 20, 0]
    # keys match the value's text; unmapped values stay as they are without a default
    assert [r["n_text"] for r in got] == ["ten", "20", "zero"]
    # NULL is unmapped too: it takes the default
    assert [r["flag_text"] for r in got] == ["Y", "N", "N"]
    assert [r["b"] for r in got] == ["B1", None, "b3"]
    # a boolean without a default: unmapped values stay as their text (no common type with "yes")
    assert [r["flag_word"] for r in got] == ["yes", "false", None]
    assert [r["id"] for r in got] == [100, 200, 300]
    # a timestamp's text is the §5.3 ISO form
    stamps = spark.sql(
        "SELECT TIMESTAMP'2024-01-05 10:00:00' AS t UNION ALL SELECT TIMESTAMP'2024-01-06 00:00:00'"
    )
    mapped = run(stamps, ctx, {"map_values": {"field": "t", "mapping": {"2024-01-05T10:00:00Z": "open"}}})
    assert sorted(r["t"] for r in rows(mapped)) == ["2024-01-06T00:00:00Z", "open"]


def test_rename_select_drop_filter(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame([(1, "x", 5), (2, "y", None), (3, "z", -1)], "a int, b string, c int")
    swapped = run(df, ctx, {"rename": {"mappings": {"a": "b", "b": "a"}}})
    assert swapped.columns == ["b", "a", "c"]
    assert rows(swapped, "b")[0] == {"b": 1, "a": "x", "c": 5}
    out = run(
        df,
        ctx,
        {"filter": {"sql": "c > 0"}},
        {"select": {"columns": ["c", "a"]}},
        {"drop": {"columns": ["a", "nope"]}},
    )
    assert out.columns == ["c"]
    assert rows(out) == [{"c": 5}]  # NULL and FALSE rows are removed
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"rename": {"from": "missing", "to": "m"}})
    assert info.value.yaml_path == "transformations[0].rename.from"  # the key the contract wrote
    with pytest.raises(PlanError, match="already exist") as info:
        run(df, ctx, {"rename": {"from": "a", "to": "c"}})
    assert info.value.yaml_path == "transformations[0].rename.to"
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"rename": {"mappings": {"missing": "m"}}})
    assert info.value.yaml_path == "transformations[0].rename.mappings"
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"drop": {"columns": ["zzz"]}}, {"select": {"columns": ["a", "nope"]}})
    assert info.value.yaml_path == "transformations[1].select.columns"
    assert "nope" in str(info.value)
    with pytest.raises(EngineError):
        run(df, ctx, {"cast": {"columns": {"a": "string"}}})
    # Spark's analysis errors in contract SQL are plan errors at the op's YAML path
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"trim": {"fields": ["b"]}}, {"derive": {"field": "x", "sql": "nope + 1"}})
    assert info.value.yaml_path == "transformations[1].derive.sql"
    assert "nope" in str(info.value)
    with pytest.raises(PlanError) as info:
        run(df, ctx, {"sql": "SELECT * FROM source JOIN missing_link USING (a)"})
    assert info.value.yaml_path == "transformations[0].sql"


def test_split_json_text(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, "a_b_c"), (2, ""), (3, None), (4, 'x"y_ z _'), (5, "a|b.c")], "id int, s string"
    )
    got = rows(run(df, ctx, {"split": {"field": "s", "delimiter": "_", "output": "parts"}}), "id")
    assert [r["parts"] for r in got] == ['["a","b","c"]', '[""]', None, '["x\\"y"," z ",""]', '["a|b.c"]']
    assert json.loads(got[3]["parts"]) == ['x"y', " z ", ""]
    piped = rows(run(df, ctx, {"split": {"field": "s", "delimiter": "|"}}), "id")
    assert piped[4]["s"] == '["a","b.c"]'  # the delimiter is literal, not a regex


def test_json_extract_paths_and_cast(spark: Any) -> None:
    ctx = make_ctx(spark)
    doc = '{"lat": 1.5, "name": "n", "a": [10, {"b": true}], "k.x": "dot", "o": {"p": 1}, "nil": null}'
    df = spark.createDataFrame(
        [(1, doc), (2, "not json"), (3, None), (4, '{"lat": "abc"}'), (5, '{"lat": 1} trailing')],
        "id int, j string",
    )
    out = run(
        df,
        ctx,
        {"json_extract": {"field": "lat", "source": "j", "path": "$.lat", "cast": "float"}},
        {"json_extract": {"field": "second", "source": "j", "path": "$.a[1]"}},
        {"json_extract": {"field": "flag", "source": "j", "path": "$.a[1].b", "cast": "boolean"}},
        {"json_extract": {"field": "dot", "source": "j", "path": "$['k.x']"}},
        {"json_extract": {"field": "name", "source": "j", "path": "$.name"}},
        {"json_extract": {"field": "missing", "source": "j", "path": "$.o.q"}},
        {"json_extract": {"field": "nil", "source": "j", "path": "$.nil"}},
    )
    got = rows(out, "id")
    assert got[0]["lat"] == pytest.approx(1.5)
    assert json.loads(got[0]["second"]) == {"b": True}
    assert got[0]["flag"] is True
    assert (got[0]["dot"], got[0]["name"], got[0]["missing"], got[0]["nil"]) == ("dot", "n", None, None)
    assert all(got[i][c] is None for i in (1, 2) for c in ("lat", "second", "name"))
    assert got[3]["lat"] is None  # "abc" does not cast: NULL, not an error
    assert got[4]["lat"] is None  # invalid JSON: NULL, not its first value's field
    # `cast` follows §5.3: "3.0" and 3.0 are integers, YYYYMMDD is a date, 1.234 is no decimal(5,2)
    typed = spark.createDataFrame(
        [(1, '{"n": "3.0", "m": 3.0, "d": "20240105", "x": "1.234", "a": [1, 2]}')], "id int, j string"
    )
    casts = {"n": "integer", "m": "integer", "d": "date", "x": "decimal(5,2)", "a": "array<integer>"}
    extracted = rows(
        run(
            typed,
            ctx,
            *[
                {"json_extract": {"field": f"{k}_out", "source": "j", "path": f"$.{k}", "cast": t}}
                for k, t in casts.items()
            ],
        )
    )[0]
    assert (extracted["n_out"], extracted["m_out"], str(extracted["d_out"])) == (3, 3, "2024-01-05")
    assert extracted["x_out"] is None and extracted["a_out"] == [1, 2]
    nested = spark.createDataFrame([(1, (2.5, "x"))], "id int, c struct<lat:double,tag:string>")
    assert (
        rows(run(nested, ctx, {"json_extract": {"field": "t", "source": "c", "path": "$.tag"}}))[0]["t"]
        == "x"
    )


def test_bucket(spark: Any) -> None:
    ctx = make_ctx(spark)
    df = spark.createDataFrame(
        [(1, 5.0), (2, 10.0), (3, 250.0), (4, None), (5, 1000.0), (6, 7.0)], "id int, p double"
    )
    bins = [
        {"label": "seven", "eq": 7},
        {"label": "small", "lt": 10},
        {"label": "mid", "gte": 10, "lte": 250},
        {"label": "big", "gt": 250, "lt": 1000},
    ]
    got = rows(
        run(df, ctx, {"bucket": {"field": "band", "source": "p", "bins": bins, "default": "other"}}), "id"
    )
    assert [r["band"] for r in got] == ["small", "mid", "mid", "other", "other", "seven"]
    catch_all = [{"label": "low", "lt": 10}, {"label": "rest"}]
    got = rows(run(df, ctx, {"bucket": {"field": "band", "source": "p", "bins": catch_all}}), "id")
    assert [r["band"] for r in got] == ["low", "rest", "rest", None, "rest", "low"]


def test_bucket_of_numeric_text_compares_numbers(spark: Any) -> None:
    """A pre op sees CSV text: against integer bounds Spark cast the text to an integer, so "100.7" was
    equal to 100 and "1e3" fell to the default."""
    ctx = make_ctx(spark)
    values = [(1, "99.5"), (2, "100"), (3, "100.7"), (4, "1e3"), (5, "abc"), (6, None)]
    df = spark.createDataFrame(values, "id int, amount string")
    bins = [{"label": "small", "lt": 100}, {"label": "exactly", "eq": 100}, {"label": "big", "gt": 100}]
    op = {"bucket": {"field": "band", "source": "amount", "bins": bins, "default": "unknown"}}
    got = [r["band"] for r in rows(run(df, ctx, op), "id")]
    assert got == ["small", "exactly", "big", "big", "unknown", "unknown"]


@pytest.mark.parametrize("side", ["BOTH", "LEADING", "TRAILING"])
def test_guarded_trim_equals_spark_trim_of_the_whitespace_set(spark: Any, side: str) -> None:
    """trim_sql skips values with nothing to strip; the result must be TRIM's on every kind of value."""
    from lakelogic.engines.spark.casting import trim_sql
    from lakelogic.plan.ops_columns import ASCII_WHITESPACE

    samples = ["", "a", "a b", "ab\u00a0", "\u00a0ab", " é ", "x\t", "\ry", None]
    samples += [ws + "v" + ws for ws in ASCII_WHITESPACE] + [ws * 3 for ws in ASCII_WHITESPACE]
    samples += [ASCII_WHITESPACE + "mixed" + ASCII_WHITESPACE[::-1], " \u2003 em space \u2003 "]
    df = spark.createDataFrame([(i, s) for i, s in enumerate(samples)], "i int, s string")
    chars = "'" + ASCII_WHITESPACE + "'"
    got = df.selectExpr(
        "i", f"{trim_sql('s', side)} AS guarded", f"trim({side} {chars} FROM s) AS plain"
    ).collect()
    differing = [r.asDict() for r in got if r["guarded"] != r["plain"]]
    assert differing == []
    # and the guard really strips (the comparison above would pass if both sides did nothing)
    stripped = {r["i"]: r["guarded"] for r in got}
    assert stripped[len(samples) - 2] == (
        "mixed"
        if side == "BOTH"
        else "mixed" + ASCII_WHITESPACE[::-1]
        if side == "LEADING"
        else ASCII_WHITESPACE + "mixed"
    )
