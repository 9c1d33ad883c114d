"""Strict casting (SEMANTICS §5.3): each source/target pair as Spark SQL, failures vs blanks vs values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from lakelogic.types import parse_type

pytestmark = pytest.mark.spark

FAIL = object()

# (target type, raw text, expected value or FAIL); blanks are NULL without failure.
TEXT_CASES: list[tuple[str, str | None, Any]] = [
    ("int", "3", 3),
    ("int", " -4 ", -4),
    ("int", "3.0", 3),
    ("int", "+7", 7),
    ("int", "3.5", FAIL),
    ("int", "abc", FAIL),
    ("int", "2147483648", FAIL),
    ("int", "", None),
    ("int", "   ", None),
    ("int", None, None),
    ("bigint", "9223372036854775807", 9223372036854775807),
    ("bigint", "9223372036854775808", FAIL),
    ("double", "1.5", 1.5),
    ("double", "x", FAIL),
    ("double", "1e3", 1000.0),
    ("double", "NaN", float("nan")),
    ("double", "-Infinity", float("-inf")),
    ("double", "1e309", FAIL),  # beyond double range: an overflow, not Infinity (§5.3)
    ("double", "-1E400", FAIL),
    ("double", "1.7976931348623157e308", 1.7976931348623157e308),
    # Java's Double.parseDouble syntax is no number a data file means (hexadecimal, type suffixes)
    ("double", "5d", FAIL),
    ("double", "2.5F", FAIL),
    ("double", "0x1p3", FAIL),
    ("float", "1.5f", FAIL),
    ("int", "3.0d", FAIL),
    ("int", "0x10", FAIL),
    ("decimal(5,2)", "12.34", 12.34),
    ("decimal(5,2)", "12345.6", FAIL),
    # exact, never rounded (§5.3): more fractional digits than the scale fail unless they are zeros
    ("decimal(5,2)", "1.234", FAIL),
    ("decimal(5,2)", "0.005", FAIL),
    ("decimal(5,2)", " 1.230 ", 1.23),
    ("decimal(5,2)", "1e2", 100.0),
    ("decimal(38,0)", "12345678901234567890123456789", 12345678901234567890123456789),
    # at any precision, up to 38 (the check must not lose the extra digits itself)
    ("decimal(38,2)", "1.234", FAIL),
    ("decimal(38,2)", "1.235", FAIL),
    ("decimal(38,2)", "-0.005", FAIL),
    ("decimal(38,2)", "1.2300", Decimal("1.23")),
    ("decimal(38,2)", "1.5e-1", Decimal("0.15")),
    ("decimal(38,2)", "1.5e-3", FAIL),
    ("decimal(38,0)", "1.5", FAIL),
    ("decimal(38,0)", "15e1", Decimal("150")),
    ("decimal(30,2)", "1.00000000001", FAIL),
    ("decimal(12,2)", "1e", FAIL),
    ("int", "3.0000000000000001", FAIL),
    ("int", "2147483647.0000000001", FAIL),
    ("int", "1e-400", FAIL),
    ("int", "1.5e1", 15),
    ("int", "10e-1", 1),
    ("int", "0e-5", 0),
    ("decimal(10,2)", "1230e-3", Decimal("1.23")),
    ("decimal(10,2)", "1234e-3", FAIL),
    ("decimal(10,2)", "-100.500", Decimal("-100.50")),
    ("int", "1e2", 100),
    ("bigint", "5.0000000000000000000001", FAIL),
    ("bigint", "9223372036854775807.000", 9223372036854775807),
    ("float", "3.4028235e38", 3.4028234663852886e38),  # Float.MAX_VALUE's own text
    ("float", "3.4028236e38", FAIL),
    ("boolean", "Yes", True),
    ("boolean", "f", False),
    ("boolean", "0", False),
    ("boolean", "maybe", FAIL),
    ("date", "2024-01-05", dt.date(2024, 1, 5)),
    ("date", "20240105", dt.date(2024, 1, 5)),
    ("date", "2024-02-30", FAIL),
    ("date", "05/01/2024", FAIL),
    # a timestamp as ISO 8601 text gives its UTC date (§5.3 "timestamps (UTC date)")
    ("date", "2024-01-15T10:00:00Z", dt.date(2024, 1, 15)),
    ("date", "2024-01-15T23:30:00-05:00", dt.date(2024, 1, 16)),
    ("date", "2024-01-15 10:00", dt.date(2024, 1, 15)),
    ("date", "2024-01-15T25:00:00Z", FAIL),
    ("timestamp", "2024-01-01T10:00:00Z", dt.datetime(2024, 1, 1, 10, 0)),
    ("timestamp", "2024-01-01 10:00:00.5+01:00", dt.datetime(2024, 1, 1, 9, 0, 0, 500000)),
    ("timestamp", "garbage", FAIL),
    # ISO 8601 without seconds, with and without a zone
    ("timestamp", "2024-01-15T10:00Z", dt.datetime(2024, 1, 15, 10, 0)),
    ("timestamp", "2024-01-15T10:00+02:00", dt.datetime(2024, 1, 15, 8, 0)),
    ("timestamp", "2024-01-15 10:00", dt.datetime(2024, 1, 15, 10, 0)),
    # the UTC fast path (`????-??-??T??:??:?dZ`) and its neighbours
    ("timestamp", "2024-12-31T23:59:59Z", dt.datetime(2024, 12, 31, 23, 59, 59)),
    ("timestamp", "2024-01-01 10:00:00Z", dt.datetime(2024, 1, 1, 10, 0)),
    ("timestamp", "2024-01-01T10:00:00.5Z", dt.datetime(2024, 1, 1, 10, 0, 0, 500000)),
    ("timestamp", "2024-01-01T00:00+01Z", FAIL),
    ("timestamp", "2024-01-01T00:00:0ZZ", FAIL),
    ("timestamp", "2024-13-01T00:00:00Z", FAIL),
    ("timestamp", "2024-01-01T0é:00:0Z", FAIL),
    ("array<int>", "[1,2]", [1, 2]),
    ("array<int>", '[1,"x"]', FAIL),
    ("array<int>", "nope", FAIL),
    ("json", '{"a":1}', '{"a":1}'),
    ("json", "{bad", FAIL),
    ("json", "null", "null"),
    ("json", ' [1, {"b": [true]}] ', ' [1, {"b": [true]}] '),
    ("json", '"text"', '"text"'),
    ("json", "3.5", "3.5"),
    # exactly one value: nothing after it, no second value
    ("json", '{"a":1} trailing', FAIL),
    ("json", '{"a":1}]', FAIL),
    ("json", "1] [2", FAIL),
    ("json", "1, 2", FAIL),
    ("json", "[1,]", FAIL),
    ("string", "  kept  ", "  kept  "),
]


def _evaluate(spark: Any, cases: list[tuple[str, Any, Any]], source_type: Any) -> list[tuple[Any, bool]]:
    from pyspark.sql.types import StructField, StructType

    from lakelogic.engines.spark.casting import cast_failed_sql, strict_cast_sql

    frame = spark.createDataFrame([(v,) for _, v, _ in cases], StructType([StructField("x", source_type)]))
    exprs = []
    for i, (target, _, _) in enumerate(cases):
        t = parse_type(target)
        value = strict_cast_sql("x", source_type, t)
        exprs.append(
            f"named_struct('v', {value}, 'failed', {cast_failed_sql('x', value, source_type, t)}) AS c{i}"
        )
    rows = frame.selectExpr(*exprs).collect()
    # Row i holds the input of case i; read case i's own column.
    return [(rows[i][f"c{i}"]["v"], bool(rows[i][f"c{i}"]["failed"])) for i in range(len(cases))]


def test_text_sources_cast_strictly(spark: Any) -> None:
    from pyspark.sql.types import StringType

    spark.conf.set("spark.sql.legacy.timeParserPolicy", "CORRECTED")
    results = _evaluate(spark, TEXT_CASES, StringType())
    for (target, raw, expected), (value, failed) in zip(TEXT_CASES, results, strict=True):
        if expected is FAIL:
            assert failed and value is None, f"{raw!r} -> {target} should fail, got {value!r}"
        else:
            assert not failed, f"{raw!r} -> {target} failed unexpectedly"
            if isinstance(expected, float) and expected != expected:
                assert value != value, f"{raw!r} -> {target}: {value!r} is not NaN"
            elif isinstance(expected, float):
                assert float(value) == pytest.approx(expected)
            else:
                assert value == expected, f"{raw!r} -> {target}: {value!r} != {expected!r}"


def test_numeric_sources_reject_fractions_and_overflow(spark: Any) -> None:
    from pyspark.sql.types import DoubleType, LongType

    doubles = [
        ("int", 3.0, 3),
        ("int", 3.5, FAIL),
        ("int", float("nan"), FAIL),
        ("float", 1e300, FAIL),
        ("boolean", 1.0, True),
        ("string", 1.5, "1.5"),
        ("date", 1.0, FAIL),
        ("decimal(3,0)", 1.5, FAIL),
        ("decimal(3,0)", -7.0, -7),
        ("decimal(12,2)", 0.1, Decimal("0.10")),
        ("decimal(12,2)", 0.125, FAIL),
        ("decimal(12,2)", float("nan"), FAIL),
    ]
    for (target, raw, expected), (value, failed) in zip(
        doubles, _evaluate(spark, doubles, DoubleType()), strict=True
    ):
        assert failed == (expected is FAIL), (target, raw, value)
        if expected is not FAIL:
            assert value == expected
    # YYYYMMDD read from JSON as a number is a date, as date_diff reads it; other numbers are not
    longs = [
        ("int", 2**40, FAIL),
        ("int", 12, 12),
        ("string", 12, "12"),
        ("date", 20240115, dt.date(2024, 1, 15)),
        ("date", 20240230, FAIL),
        ("date", 12, FAIL),
    ]
    for (target, raw, expected), (value, failed) in zip(
        longs, _evaluate(spark, longs, LongType()), strict=True
    ):
        assert failed == (expected is FAIL), (target, raw, value)
        if expected is not FAIL:
            assert value == expected, (target, raw, value)


def test_failure_message_shows_raw_value_as_json(spark: Any) -> None:
    from lakelogic.engines.spark.casting import cast_failure_message_sql

    msg = spark.sql(
        f"SELECT {cast_failure_message_sql('amount', 'x', parse_type('double'))} AS m FROM "
        "VALUES ('1,5\"') AS t(x)"
    ).first()["m"]
    assert msg == 'Rule failed: amount_type (cannot cast "1,5\\"" to double)'
    shown_sql = cast_failure_message_sql("ssn", "x", parse_type("int"), shown="'\"***\"'")
    shown = spark.sql(f"SELECT {shown_sql} AS m FROM VALUES ('12a') t(x)").first()["m"]
    assert shown == 'Rule failed: ssn_type (cannot cast "***" to integer)'


TRICKY_TEXTS = [
    "",
    "plain",
    'quote " and back\\slash \\" mixed',
    "".join(chr(c) for c in range(128)),  # every ASCII character, controls included
    "line\nbreak\ttab\r\x00nul\x1f\x7f",
    "é中文🙂\u2028\u2029/</script>",
]


NUMBERS = {
    "int": ["-12", "0", "2147483647"],
    "bigint": ["-9223372036854775808", "7"],
    "boolean": ["true", "false"],
    "decimal(5,2)": ["-12", "0", "999.99"],
    "decimal(20,10)": ["0.0000001", "0", "1234567890.1234567891"],
    "double": [
        *("1.5", "1e10", "1e-7", "0.1D + 0.2D", "-CAST(0 AS DOUBLE)", "1e21"),
        *("double('NaN')", "double('Infinity')", "-double('Infinity')"),
    ],
    "float": ["1.5", "float(0.1)", "1e-7", "float('NaN')", "-float('Infinity')"],
}


@pytest.mark.parametrize("source_type", ["string", *NUMBERS])
def test_raw_values_render_exactly_as_to_json_does(spark: Any, source_type: str) -> None:
    from pyspark.sql import functions as F

    from lakelogic.engines.spark.casting import raw_json_sql

    if source_type == "string":
        frame = spark.createDataFrame([(t,) for t in TRICKY_TEXTS], "x string")
    else:
        values = ", ".join(f"(CAST({v} AS {source_type}))" for v in NUMBERS[source_type])
        frame = spark.sql(f"SELECT * FROM VALUES {values} AS t(x)")
    source = frame.schema["x"].dataType
    reference = F.expr("to_json(named_struct('v', x))")
    rows = frame.select(F.expr(raw_json_sql("x", source)).alias("ours"), reference.alias("json")).collect()
    assert rows and all(r["json"] == '{"v":' + r["ours"] + "}" for r in rows), rows


def test_a_string_column_is_not_yet_a_json_field() -> None:
    """§5.2: `json` is stored as a string, but its text is checked, so a string column still gets a cast."""
    from pyspark.sql.types import StringType

    from lakelogic.engines.spark.casting import spark_type_matches

    assert not spark_type_matches(StringType(), parse_type("json"))
    assert spark_type_matches(StringType(), parse_type("string"))


def test_ancient_dates_and_timestamps_are_written_and_read_back(spark: Any, tmp_path: Any) -> None:
    """§5.2: any date; Spark 3.5 refuses pre-Gregorian dates and pre-1900 timestamps in Parquet by default."""
    from lakelogic import DataProcessor

    doc = {
        "version": "1.0.0",
        "info": {"title": "Ancient"},
        "model": {"fields": [{"name": "d", "type": "date"}, {"name": "t", "type": "timestamp"}]},
    }
    frame = spark.createDataFrame([("1500-01-01", "1899-12-31T23:00:00Z")], "d string, t string")
    out = tmp_path / "good"
    result = DataProcessor(doc, spark=spark).run(frame, output_good=out)
    assert result.report.status == "succeeded", result.report.error
    back = spark.read.parquet(str(out)).first()
    assert back is not None and back["d"] == dt.date(1500, 1, 1)
    assert back["t"] == dt.datetime(1899, 12, 31, 23, 0)
    again = DataProcessor(doc, spark=spark).run(str(out))  # a Parquet source holding them
    assert again.report.status == "succeeded" and again.report.counts.good == 1, again.report.error


def test_parquet_outputs_store_timestamps_as_int64_micros_unless_the_session_chose(
    spark: Any, tmp_path: Any
) -> None:
    """Parquet outputs use the INT64 microsecond logical type, not the deprecated INT96; a session
    that set ``spark.sql.parquet.outputTimestampType`` itself keeps its choice."""
    import pyarrow.parquet as pq

    from lakelogic import DataProcessor

    doc = {
        "version": "1.0.0",
        "info": {"title": "Stamps"},
        "model": {"fields": [{"name": "t", "type": "timestamp"}]},
    }
    frame = spark.createDataFrame([("2026-03-04T05:06:07Z",)], "t string")
    key = "spark.sql.parquet.outputTimestampType"

    def physical_type(out: Any) -> str:
        part = next(p for p in out.iterdir() if p.suffix == ".parquet")
        return str(pq.ParquetFile(part).schema.column(0).physical_type)

    chosen = spark.conf.get(key, None)
    try:
        spark.conf.unset(key)
        DataProcessor(doc, spark=spark).run(frame, output_good=tmp_path / "micros")
        assert physical_type(tmp_path / "micros") == "INT64"
        spark.conf.set(key, "INT96")
        DataProcessor(doc, spark=spark).run(frame, output_good=tmp_path / "int96")
        assert physical_type(tmp_path / "int96") == "INT96"
        assert spark.read.parquet(str(tmp_path / "micros")).first()["t"] == dt.datetime(2026, 3, 4, 5, 6, 7)
    finally:
        spark.conf.unset(key)
        if chosen is not None:
            spark.conf.set(key, chosen)
