"""Schema evolution at write time (SEMANTICS §7.1) and reprocess windows (§13.4) on real tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lakelogic.errors import SchemaEvolutionError
from lakelogic.tables.spark_write import adapter_for, write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]


@pytest.mark.parametrize("fmt", FORMATS)
def test_new_column_is_added_and_old_rows_read_null(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    write_frame(
        spark,
        spark.createDataFrame([(1, "a")], "id int, v string"),
        target,
        WriteSpec(),
        CommitStamp("a", "c"),
    )
    wider = spark.createDataFrame([(2, "b", 7)], "id int, v string, extra bigint")
    out = write_frame(spark, wider, target, WriteSpec(evolution="append"), CommitStamp("b", "c"))
    assert any("added column(s) extra" in w for w in out.warnings)
    rows = {r["id"]: r for r in read_back(spark, target)}
    assert rows[1]["extra"] is None and rows[2]["extra"] == 7
    schema = adapter_for(spark, target).schema()
    assert schema is not None and schema["extra"].dataType.simpleString() == "bigint"
    with pytest.raises(SchemaEvolutionError, match="new column 'more'"):
        write_frame(
            spark,
            spark.createDataFrame([(3, "c", 1, 2)], "id int, v string, extra bigint, more int"),
            target,
            WriteSpec(evolution="strict"),
            CommitStamp("c", "c"),
        )


def test_iceberg_widens_int_to_bigint_natively(spark: Any, make_target: Make) -> None:
    target = make_target("iceberg")
    write_frame(spark, spark.createDataFrame([(1,)], "n int"), target, WriteSpec(), CommitStamp("a", "c"))
    write_frame(
        spark,
        spark.createDataFrame([(2**40,)], "n bigint"),
        target,
        WriteSpec(evolution="compatible"),
        CommitStamp("b", "c"),
    )
    assert spark.table(target.name).schema["n"].dataType.simpleString() == "bigint"
    assert sorted(r["n"] for r in read_back(spark, target)) == [1, 2**40]


def test_incompatible_type_refused_naming_both_types(spark: Any, make_target: Make) -> None:
    target = make_target("delta")
    write_frame(spark, spark.createDataFrame([(1,)], "n int"), target, WriteSpec(), CommitStamp("a", "c"))
    with pytest.raises(SchemaEvolutionError, match=r"'n'.*int.*string"):
        write_frame(
            spark,
            spark.createDataFrame([("x",)], "n string"),
            target,
            WriteSpec(evolution="compatible"),
            CommitStamp("b", "c"),
        )
    with pytest.raises(SchemaEvolutionError, match="'n'"):
        write_frame(
            spark,
            spark.createDataFrame([(5,)], "n bigint"),
            target,
            WriteSpec(evolution="compatible"),
            CommitStamp("c", "c"),
        )


def test_merge_policy_casts_batch_and_fails_on_bad_values(spark: Any, make_target: Make) -> None:
    target = make_target("parquet")
    write_frame(spark, spark.createDataFrame([(1,)], "n int"), target, WriteSpec(), CommitStamp("a", "c"))
    write_frame(
        spark,
        spark.createDataFrame([("2",)], "n string"),
        target,
        WriteSpec(evolution="merge"),
        CommitStamp("b", "c"),
    )
    assert sorted(r["n"] for r in read_back(spark, target)) == [1, 2]
    with pytest.raises(SchemaEvolutionError, match="'n' value oops"):
        write_frame(
            spark,
            spark.createDataFrame([("oops",)], "n string"),
            target,
            WriteSpec(evolution="merge"),
            CommitStamp("c", "c"),
        )
    assert sorted(r["n"] for r in read_back(spark, target)) == [1, 2], "nothing written"


@pytest.mark.parametrize("fmt", ["iceberg", "parquet"])
def test_a_cast_into_the_target_that_would_change_a_number_fails(
    spark: Any, make_target: Make, fmt: str
) -> None:
    """§7.1 (`allow`/`merge`): the batch is cast to the target's type, failure -> error. A double 2.5
    into a bigint column was written as 2, silently; a whole number still casts."""
    target = make_target(fmt)
    write_frame(
        spark, spark.createDataFrame([(1, 1)], "id int, n bigint"), target, WriteSpec(), CommitStamp("a", "c")
    )
    write_frame(
        spark,
        spark.createDataFrame([(2, 2.0)], "id int, n double"),
        target,
        WriteSpec(),
        CommitStamp("b", "c"),
    )
    # a computed double into a decimal column: its binary noise is no change, a rounded digit is
    decimals = make_target(fmt, "dec")
    first = spark.createDataFrame([(1, "1.00")], "id int, d string")
    write_frame(
        spark,
        first.selectExpr("id", "CAST(d AS DECIMAL(10,2)) AS d"),
        decimals,
        WriteSpec(),
        CommitStamp("a", "c"),
    )
    noisy = spark.createDataFrame([(2, 0.1 + 0.2), (3, 1.1 * 3)], "id int, d double")
    write_frame(spark, noisy, decimals, WriteSpec(), CommitStamp("b", "c"))
    assert sorted(str(r["d"]) for r in read_back(spark, decimals)) == ["0.30", "1.00", "3.30"]
    rounded = spark.createDataFrame([(4, 2.555)], "id int, d double")
    with pytest.raises(SchemaEvolutionError, match="cannot be cast to the target type decimal"):
        write_frame(spark, rounded, decimals, WriteSpec(), CommitStamp("c", "c"))
    for value in (2.5, float("nan")):
        with pytest.raises(
            SchemaEvolutionError, match=r"'n' value .* cannot be cast to the target type bigint"
        ):
            write_frame(
                spark,
                spark.createDataFrame([(3, value)], "id int, n double"),
                target,
                WriteSpec(),
                CommitStamp(f"c{value}", "c"),
            )
    assert sorted((r["id"], r["n"]) for r in read_back(spark, target)) == [(1, 1), (2, 2)]


@pytest.mark.parametrize("fmt", ["iceberg", "parquet"])
def test_reprocess_window_replaces_only_rows_in_the_window(spark: Any, make_target: Make, fmt: str) -> None:
    from datetime import date

    target = make_target(fmt)
    schema = "id int, day date"
    seed = spark.createDataFrame(
        [(1, date(2024, 1, 1)), (2, date(2024, 1, 2)), (3, date(2024, 1, 3))], schema
    )
    spec = WriteSpec(strategy="append", reprocess_date_column="day")
    write_frame(spark, seed, target, spec, CommitStamp("a", "c"))
    fix = spark.createDataFrame([(20, date(2024, 1, 2)), (21, date(2024, 1, 2))], schema)
    window = (date(2024, 1, 2), date(2024, 1, 3))
    write_frame(spark, fix, target, spec, CommitStamp("b", "c"), reprocess_window=window)  # type: ignore[arg-type]
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 3, 20, 21]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_overwrite_policy_replaces_the_schema(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    write_frame(
        spark,
        spark.createDataFrame([(1, "a")], "id int, v string"),
        target,
        WriteSpec(),
        CommitStamp("a", "c"),
    )
    spec = WriteSpec(strategy="overwrite", evolution="overwrite")
    write_frame(
        spark, spark.createDataFrame([("x", 2)], "id string, n bigint"), target, spec, CommitStamp("b", "c")
    )
    schema = adapter_for(spark, target).schema()
    assert schema is not None and [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("id", "string"),
        ("n", "bigint"),
    ]
    assert [(r["id"], r["n"]) for r in read_back(spark, target)] == [("x", 2)]


def test_write_side_drift_is_recorded_for_the_report(spark: Any, make_target: Make) -> None:
    """SEMANTICS §7.1: drift is always in the report; the write records new, missing and retyped columns."""
    from lakelogic.report import RunReport
    from lakelogic.tables.materialize import _report_write_drift

    target = make_target("iceberg")
    first = spark.createDataFrame([(1, 2, 3)], "id int, x int, z int")
    created = write_frame(spark, first, target, WriteSpec(), CommitStamp("a", "c"))
    assert (created.added_columns, created.missing_columns, created.type_changes) == ([], [], [])
    batch = spark.createDataFrame([(2, 2**40, "n")], "id int, x bigint, fresh string")
    out = write_frame(spark, batch, target, WriteSpec(evolution="compatible"), CommitStamp("b", "c"))
    assert out.added_columns == ["fresh"] and out.missing_columns == ["z"]
    assert out.type_changes == [
        {"column": "x", "target_type": "int", "batch_type": "bigint", "change": "widened"}
    ]
    report = RunReport(run_id="b", contract="c")
    report.schema_drift.missing_fields = ["z"]  # the read side may have seen it already
    _report_write_drift(report, out)
    drift = report.schema_drift
    assert (drift.unknown_fields, drift.missing_fields) == (["fresh"], ["z"])
    assert [c["column"] for c in drift.type_changes] == ["x"]


def test_a_refused_evolution_still_reports_the_drift(spark: Any, tmp_path: Any) -> None:
    """§7.1: drift is always in the report, also when the policy refuses it and nothing is written."""
    from lakelogic import DataProcessor

    target = str(tmp_path / "t")

    def doc(fields: list[dict[str, str]], **policy: str) -> dict[str, Any]:
        return {
            "version": "1.0.0",
            "info": {"title": "Evolving"},
            "model": {"fields": fields},
            "schema_policy": policy,
            "materialization": {"strategy": "append", "format": "delta"},
        }

    first = DataProcessor(
        doc([{"name": "id", "type": "integer"}, {"name": "v", "type": "bigint"}]), spark=spark
    )
    assert (
        first.run(
            spark.createDataFrame([(1, 1)], "id int, v bigint"), materialize=True, target=target
        ).report.error
        is None
    )
    second = DataProcessor(
        doc([{"name": "id", "type": "integer"}, {"name": "y", "type": "integer"}], evolution="strict"),
        spark=spark,
    )
    result = second.run(spark.createDataFrame([(2, 5)], "id int, y int"), materialize=True, target=target)
    assert result.report.status == "failed" and result.report.error is not None
    assert result.report.error.type == "schema_evolution"
    drift = result.report.schema_drift
    assert (drift.unknown_fields, drift.missing_fields) == (["y"], ["v"])


def test_drift_is_reported_when_the_schema_is_replaced_or_a_checked_cast_fails(
    spark: Any, tmp_path: Any
) -> None:
    """§7.1: drift is always in the report: a replaced schema lists added and missing columns, and a
    failed cast to the target type still lists the retyped column (and names both types)."""
    from lakelogic import DataProcessor

    def doc(fields: list[dict[str, str]], strategy: str, evolution: str) -> dict[str, Any]:
        return {
            "version": "1.0.0",
            "info": {"title": "Drifting"},
            "model": {"fields": fields},
            "schema_policy": {"evolution": evolution},
            "materialization": {"strategy": strategy, "format": "parquet"},
        }

    replaced = str(tmp_path / "replaced")
    first = doc(
        [{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}], "overwrite", "overwrite"
    )
    assert (
        DataProcessor(first, spark=spark)
        .run(spark.createDataFrame([(1, "a")], "id int, v string"), materialize=True, target=replaced)
        .report.error
        is None
    )
    second = doc(
        [{"name": "id", "type": "integer"}, {"name": "w", "type": "integer"}], "overwrite", "overwrite"
    )
    report = (
        DataProcessor(second, spark=spark)
        .run(spark.createDataFrame([(2, 5)], "id int, w int"), materialize=True, target=replaced)
        .report
    )
    assert report.error is None
    assert (report.schema_drift.unknown_fields, report.schema_drift.missing_fields) == (["w"], ["v"])

    cast = str(tmp_path / "cast")
    ints = doc([{"name": "id", "type": "integer"}, {"name": "v", "type": "integer"}], "append", "merge")
    assert (
        DataProcessor(ints, spark=spark)
        .run(spark.createDataFrame([(1, 1)], "id int, v int"), materialize=True, target=cast)
        .report.error
        is None
    )
    texts = doc([{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}], "append", "merge")
    failed = (
        DataProcessor(texts, spark=spark)
        .run(spark.createDataFrame([(3, "x")], "id int, v string"), materialize=True, target=cast)
        .report
    )
    assert failed.error is not None and "(string)" in failed.error.message and "int" in failed.error.message
    assert [c["column"] for c in failed.schema_drift.type_changes] == ["v"]
