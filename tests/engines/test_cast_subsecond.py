"""Strict casting (SEMANTICS §5.3) of timestamp text with more than 6 fractional digits: timestamps hold
microseconds, so a non-zero digit beyond the 6th is a cast failure, never truncated; zeros there are fine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from lakelogic.types import parse_type

pytestmark = pytest.mark.spark

FAIL = object()


def _ts(micros: int = 0, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, 1, hour, 0, 0, micros)


# (target type, raw text, expected value or FAIL), ISO 8601 text (no user formats)
ISO_CASES: list[tuple[str, str, Any]] = [
    # fewer digits, exactly 6, and zeros beyond the 6th are representable
    ("timestamp", "2026-01-01T00:00:00.1Z", _ts(100000)),
    ("timestamp", "2026-01-01T00:00:00.123Z", _ts(123000)),
    ("timestamp", "2026-01-01T00:00:00.123456Z", _ts(123456)),
    ("timestamp", "2026-01-01T00:00:00.1234560000Z", _ts(123456)),
    ("timestamp", "2026-01-01T00:00:00.000000000Z", _ts()),
    ("timestamp", "2026-01-01T02:00:00.123456000+02:00", _ts(123456)),
    ("timestamp", "2026-01-01 00:00:00.1234560", _ts(123456)),
    ("timestamp", " 2026-01-01T00:00:00,123456000Z ", _ts(123456)),
    # a non-zero digit beyond microseconds: not representable
    ("timestamp", "2026-01-01T00:00:00.1234567Z", FAIL),
    ("timestamp", "2026-01-01T02:00:00.123456789+02:00", FAIL),
    ("timestamp", "2026-01-01T00:00:00.0000001Z", FAIL),
    ("timestamp", "2026-01-01T00:00:00.1234560000001Z", FAIL),
    ("timestamp", "2026-01-01 00:00:00.123456789", FAIL),
    ("timestamp", " 2026-01-01T00:00:00,1234567Z", FAIL),  # the ISO path (trimmed, comma separator)
    ("timestamp", "2026-01-01T00:00:00.1234567 UTC", FAIL),
    ("timestamp_ntz", "2026-01-01T00:00:00.123456", _ts(123456)),
    ("timestamp_ntz", "2026-01-01T00:00:00.123456000", _ts(123456)),
    ("timestamp_ntz", "2026-01-01T00:00:00.12", _ts(120000)),
    ("timestamp_ntz", "2026-01-01T00:00:00.1234567", FAIL),
    ("timestamp_ntz", "2026-01-01 00:00:00.123456789", FAIL),
    # a date from timestamp text: the text must be a timestamp first
    ("date", "2026-01-01T00:00:00.123456Z", dt.date(2026, 1, 1)),
    ("date", "2026-01-01T00:00:00.123456000Z", dt.date(2026, 1, 1)),
    ("date", "2026-01-01T00:00:00.1234567Z", FAIL),
    ("date", "2026-01-01T23:00:00.123456789-05:00", FAIL),
]

# user formats: (target type, raw text, expected value or FAIL)
FORMAT_CASES: list[tuple[str, str, Any]] = [
    ("timestamp", "01/01/2026 00:00:00.123456789", FAIL),
    ("timestamp", "01/01/2026 00:00:00.1234567", FAIL),
    ("timestamp", "01/01/2026 00:00:00.123456000", _ts(123456)),
    ("timestamp", "01/01/2026 00:00:00.1234560", _ts(123456)),
    ("timestamp", "01/01/2026 00:00:00.123456", _ts(123456)),
    ("timestamp", "01/01/2026 00:00:00.12", _ts(120000)),
    ("timestamp", "01/01/2026 00:00:00.1234567890", FAIL),  # more digits than the format: no match
    ("timestamp", "2026.01.01 02:00:00.123456789 +02:00", FAIL),
    ("timestamp", "2026.01.01 02:00:00.123456000 +02:00", _ts(123456)),
    ("timestamp_ntz", "01/01/2026 00:00:00.123456789", FAIL),
    ("timestamp_ntz", "01/01/2026 00:00:00.12345600", _ts(123456)),
    ("date", "01/01/2026 10:00:00.123456789", FAIL),
    ("date", "01/01/2026 10:00:00.123456000", dt.date(2026, 1, 1)),
    ("date", "01/01/2026 10:00:00.5", dt.date(2026, 1, 1)),
]
TIMESTAMP_FORMATS = ("dd/MM/yyyy HH:mm:ss.SSSSSSSSS", "yyyy.MM.dd HH:mm:ss.SSSSSSSSS xxx")
DATE_FORMATS = ("dd/MM/yyyy HH:mm:ss.SSSSSSSSS",)


@pytest.fixture(params=["EXCEPTION", "CORRECTED"])
def parser_policy(request: pytest.FixtureRequest, spark: Any) -> Iterator[str]:
    """Spark's default policy raises when only its legacy parser reads a text; the variant patterns must
    not trip it."""
    key = "spark.sql.legacy.timeParserPolicy"
    before = spark.conf.get(key, None)
    spark.conf.set(key, request.param)
    yield request.param
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)


def _evaluate(spark: Any, cases: list[tuple[str, str, Any]], formats: Any = None) -> list[tuple[Any, bool]]:
    from pyspark.sql.types import StringType, StructField, StructType

    from lakelogic.engines.spark.casting import cast_failed_sql, strict_cast_sql

    frame = spark.createDataFrame([(v,) for _, v, _ in cases], StructType([StructField("x", StringType())]))
    exprs = []
    for i, (target, _, _) in enumerate(cases):
        t = parse_type(target)
        value = strict_cast_sql("x", StringType(), t, formats)
        failed = cast_failed_sql("x", value, StringType(), t)
        exprs.append(f"named_struct('v', {value}, 'failed', {failed}) AS c{i}")
    rows = frame.selectExpr(*exprs).collect()
    return [(rows[i][f"c{i}"]["v"], bool(rows[i][f"c{i}"]["failed"])) for i in range(len(cases))]


def _check(cases: list[tuple[str, str, Any]], results: list[tuple[Any, bool]]) -> None:
    for (target, raw, expected), (value, failed) in zip(cases, results, strict=True):
        if expected is FAIL:
            assert failed and value is None, f"{raw!r} -> {target} should fail, got {value!r}"
        else:
            assert not failed, f"{raw!r} -> {target} failed unexpectedly"
            assert value == expected, f"{raw!r} -> {target}: {value!r} != {expected!r}"


def test_iso_text_beyond_microseconds_fails(spark: Any, parser_policy: str) -> None:
    _check(ISO_CASES, _evaluate(spark, ISO_CASES))


def test_user_formats_beyond_microseconds_fail(spark: Any, parser_policy: str) -> None:
    from lakelogic.engines.spark.casting import CastFormats

    formats = CastFormats(date_formats=DATE_FORMATS, timestamp_formats=TIMESTAMP_FORMATS)
    _check(FORMAT_CASES, _evaluate(spark, FORMAT_CASES, formats))


def test_fraction_patterns_keep_quoted_text_and_short_fractions() -> None:
    from lakelogic.engines.spark.casting import _microsecond_patterns

    assert _microsecond_patterns("ss.SSS") == ["ss.SSS"]
    assert _microsecond_patterns("ss.SSSSSSSS'Z'") == ["ss.SSSSSS'Z'", "ss.SSSSSS0'Z'", "ss.SSSSSS00'Z'"]
    # letters inside quotes are literal text, an escaped quote ('') opens nothing
    assert _microsecond_patterns("'SSSSSSS' ''ss.SSSSSSS") == [
        "'SSSSSSS' ''ss.SSSSSS",
        "'SSSSSSS' ''ss.SSSSSS0",
    ]


def test_run_quarantines_sub_microsecond_timestamps(spark: Any, parser_policy: str) -> None:
    """Through the public API: each unrepresentable value quarantines its row as `<field>_type`, category
    schema; the representable ones (≤ 6 digits, zeros beyond) pass with their exact value."""
    from lakelogic import DataProcessor

    doc = {
        "version": "1.0.0",
        "info": {"title": "Sub-microsecond stamps"},
        "source": {
            "type": "landing",
            "path": "landing/x/",
            "format": "csv",
            "options": {"timestamp_formats": ["dd/MM/yyyy HH:mm:ss.SSSSSSSSS"]},
        },
        "model": {
            "fields": [
                {"name": "id", "type": "int"},
                {"name": "ts", "type": "timestamp"},
                {"name": "ntz", "type": "timestamp_ntz"},
                {"name": "d", "type": "date"},
            ]
        },
    }
    ok_ts, ok_ntz, ok_d = "2026-01-01T00:00:00.123456Z", "2026-01-01T00:00:00.5", "2026-01-01"
    rows = [
        (1, ok_ts, ok_ntz, ok_d),
        (2, "2026-01-01T00:00:00.1234560000Z", "2026-01-01 00:00:00.123456000", "2026-01-01T00:00:00.120Z"),
        (3, "2026-01-01T00:00:00.12Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00.1234560Z"),
        (4, "2026-01-01T00:00:00.1234567Z", ok_ntz, ok_d),
        (5, "2026-01-01T02:00:00.123456789+02:00", ok_ntz, ok_d),
        (6, ok_ts, "2026-01-01T00:00:00.1234567", ok_d),
        (7, ok_ts, ok_ntz, "2026-01-01T00:00:00.123456789Z"),
        (8, "01/01/2026 00:00:00.123456789", ok_ntz, ok_d),
        (9, "01/01/2026 00:00:00.123456000", ok_ntz, ok_d),
    ]
    frame = spark.createDataFrame(rows, "id int, ts string, ntz string, d string")
    result = DataProcessor(doc, spark=spark).run(frame)
    assert result.report.status != "failed", result.report.error
    assert result.good is not None and result.bad is not None
    good = {r["id"]: r for r in result.good.collect()}
    assert sorted(good) == [1, 2, 3, 9]
    assert good[1]["ts"] == good[2]["ts"] == good[9]["ts"] == _ts(123456)
    assert good[3]["ts"] == _ts(120000)
    assert good[2]["ntz"] == _ts(123456) and good[1]["ntz"] == _ts(500000)
    assert {good[i]["d"] for i in (1, 2, 3)} == {dt.date(2026, 1, 1)}
    bad = {r["id"]: r for r in result.bad.collect()}
    expected = {4: "ts", 5: "ts", 6: "ntz", 7: "d", 8: "ts"}
    assert sorted(bad) == sorted(expected)
    for i, name in expected.items():
        raw = rows[i - 1][["id", "ts", "ntz", "d"].index(name)]
        assert bad[i]["_lakelogic_categories"] == ["schema"], bad[i]
        assert bad[i]["_lakelogic_errors"][0].startswith(
            f'Rule failed: {name}_type (cannot cast "{raw}" to '
        ), bad[i]
    counts = result.report.counts
    assert (counts.source, counts.good, counts.quarantined) == (9, 4, 5)
