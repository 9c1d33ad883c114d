"""A run means the same rows whatever session settings Spark was given: time zone, timestamp type, ANSI
mode (SEMANTICS §0, §5.1, §5.3)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.engines.spark.pinned import ANSI_KEY, TIMESTAMP_TYPE_KEY, ZONE_KEY, pinned_semantics

CONTRACT: dict[str, Any] = {
    "version": "1.0.0",
    "info": {"title": "zones"},
    "model": {
        "fields": [
            {"name": "id", "type": "int", "required": True},
            {"name": "ts", "type": "timestamp"},
            {"name": "d", "type": "date"},
        ]
    },
    "quality": {"row_rules": [{"name": "ts_after_noon", "sql": "ts >= TIMESTAMP '2024-01-15 12:00:00'"}]},
}
ROWS = [
    (1, "2024-01-15T10:00:00Z", "2024-01-15T23:30:00Z"),
    (2, "2024-01-15 23:30:00", "2024-01-15T23:30:00+02:00"),  # no offset: a UTC time
    (3, "2024-01-15T23:30:00+02:00", "20240115"),
    (4, "not a time", "2024-01-16 01:00:00"),
]


def _outcome(spark: Any, zone: str) -> tuple[Any, ...]:
    saved = spark.conf.get(ZONE_KEY)
    spark.conf.set(ZONE_KEY, zone)
    try:
        source = spark.createDataFrame(ROWS, "id int, ts string, d string")
        good_rows, bad_rows = DataProcessor(CONTRACT, spark=spark).run(source)
        assert good_rows is not None and bad_rows is not None
        assert spark.conf.get(ZONE_KEY) == zone, "the session's own zone is back after the run"
        # evaluated after the run, in the session's own zone: the frames keep the run's meaning
        good = sorted(
            (r["id"], r["micros"], str(r["d"]))
            for r in good_rows.selectExpr("id", "unix_micros(ts) AS micros", "d").collect()
        )
        bad = sorted((r["id"], tuple(r["_lakelogic_errors"])) for r in bad_rows.collect())
        return good, bad
    finally:
        spark.conf.set(ZONE_KEY, saved)


@pytest.mark.spark
def test_session_time_zone_does_not_change_a_runs_rows(spark: Any) -> None:
    utc = _outcome(spark, "UTC")
    good, bad = utc
    assert good == [(2, 1705361400000000, "2024-01-15"), (3, 1705354200000000, "2024-01-15")]
    assert [row_id for row_id, _ in bad] == [1, 4]
    for zone in ("America/Los_Angeles", "Asia/Tokyo"):
        assert _outcome(spark, zone) == utc, zone


class _Conf:
    def __init__(self, zone: str) -> None:
        self.values = {ZONE_KEY: zone}
        self.sets: list[str] = []

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value
        self.sets.append(value)


class _Session:
    def __init__(self, zone: str) -> None:
        self.conf = _Conf(zone)


def test_overlapping_runs_restore_the_zone_once_the_last_one_leaves() -> None:
    session = _Session("Europe/Paris")
    first_inside = threading.Event()
    second_left = threading.Event()
    seen: list[str | None] = []

    def first() -> None:
        with pinned_semantics(session):  # type: ignore[arg-type]
            first_inside.set()
            second_left.wait(5)
            seen.append(session.conf.get(ZONE_KEY))

    worker = threading.Thread(target=first)
    worker.start()
    first_inside.wait(5)
    with pinned_semantics(session):  # type: ignore[arg-type]
        seen.append(session.conf.get(ZONE_KEY))
    second_left.set()
    worker.join(5)
    assert seen == ["UTC", "UTC"], "the run still inside keeps UTC after the other one left"
    assert session.conf.get(ZONE_KEY) == "Europe/Paris"
    assert session.conf.sets == ["UTC", "Europe/Paris"], "set once, restored once"


def test_a_utc_session_is_left_alone() -> None:
    session = _Session("UTC")
    with pinned_semantics(session):  # type: ignore[arg-type]
        assert session.conf.get(ZONE_KEY) == "UTC"
    assert session.conf.sets == []


@pytest.mark.spark
def test_a_timestamp_ntz_session_still_gives_instants(spark: Any) -> None:
    """SEMANTICS §5.1: a model `timestamp` is TimestampType (an instant), whatever
    `spark.sql.timestampType` the session was given; the session gets its own value back."""
    from pyspark.sql.types import TimestampType

    contract = {**CONTRACT, "lineage": {"enabled": True}}
    spark.conf.set(TIMESTAMP_TYPE_KEY, "TIMESTAMP_NTZ")
    try:
        source = spark.createDataFrame(ROWS, "id int, ts string, d string")
        good, bad = DataProcessor(contract, spark=spark).run(source)
        assert spark.conf.get(TIMESTAMP_TYPE_KEY) == "TIMESTAMP_NTZ"
    finally:
        spark.conf.unset(TIMESTAMP_TYPE_KEY)
    assert good.schema["ts"].dataType == TimestampType()
    assert good.schema["_lakelogic_processed_at"].dataType == TimestampType()
    assert bad.schema["_lakelogic_quarantined_at"].dataType == TimestampType()
    assert sorted(r["id"] for r in good.collect()) == [2, 3]


def test_both_settings_are_pinned_and_restored() -> None:
    session = _Session("Europe/Paris")
    session.conf.values[TIMESTAMP_TYPE_KEY] = "TIMESTAMP_NTZ"
    with pinned_semantics(session):  # type: ignore[arg-type]
        assert session.conf.get(ZONE_KEY) == "UTC"
        assert session.conf.get(TIMESTAMP_TYPE_KEY) == "TIMESTAMP_LTZ"
    assert session.conf.get(ZONE_KEY) == "Europe/Paris"
    assert session.conf.get(TIMESTAMP_TYPE_KEY) == "TIMESTAMP_NTZ"


@pytest.mark.spark
def test_an_ansi_session_still_quarantines_arithmetic_errors(spark: Any) -> None:
    """A division by zero or a failed cast is NULL in contract SQL, so the rule fails and the row is
    quarantined; in an ANSI session it raised and failed the run (and evaluating the frames later)."""
    contract = {
        "version": "1.0.0",
        "info": {"title": "ansi"},
        "model": {"fields": [{"name": "id", "type": "int"}, {"name": "qty", "type": "int"}]},
        "transformations": [{"derive": {"field": "per_unit", "sql": "100 / qty"}, "phase": "post"}],
        "quality": {
            "row_rules": [
                {"name": "qty_share", "sql": "10 / qty < 20"},
                {"name": "id_cast", "sql": "CAST(IF(id = 2, 'two', CAST(id AS STRING)) AS INT) IS NOT NULL"},
            ]
        },
    }
    spark.conf.set(ANSI_KEY, "true")
    try:
        source = spark.createDataFrame([(1, 0), (2, 5), (3, 1)], "id int, qty int")
        good, bad = DataProcessor(contract, spark=spark).run(source)
        assert spark.conf.get(ANSI_KEY) == "true", "the session's own value is back"
        # evaluated after the run, in the ANSI session: the frames keep the run's meaning
        good_rows = sorted((r["id"], r["per_unit"]) for r in good.collect())
        bad_rules = sorted((r["id"], tuple(r["_lakelogic_errors"])) for r in bad.collect())
    finally:
        spark.conf.unset(ANSI_KEY)
    assert good_rows == [(3, 100.0)]
    assert [row_id for row_id, _ in bad_rules] == [1, 2]
    assert "qty_share" in bad_rules[0][1][0] and "id_cast" in bad_rules[1][1][0]


# (setting, the value a user's session may carry, fields, row rules, a source row, good ids expected)
LEGACY_SESSIONS = [
    (
        "spark.sql.decimalOperations.allowPrecisionLoss",
        "false",  # the product of two decimal(38,10) overflowed to NULL and quarantined the row
        [{"name": "price", "type": "decimal(38,10)"}, {"name": "qty", "type": "decimal(38,10)"}],
        [{"name": "positive_total", "sql": "price * qty > 0"}],
        {"price": "900000000000000000.5", "qty": "2.0"},
    ),
    (
        "spark.sql.parser.escapedStringLiterals",
        "true",  # `\d` in a rule pattern meant a literal backslash
        [{"name": "code", "type": "string"}],
        [{"regex_match": {"field": "code", "pattern": "^O\\d+$"}}],
        {"code": "O12"},
    ),
    (
        "spark.sql.legacy.exponentLiteralAsDecimal.enabled",
        "true",  # every run with a float field failed (the float range check's literal became a decimal)
        [{"name": "x", "type": "float"}, {"name": "y", "type": "double"}],
        [{"name": "small", "sql": "y < 1e3"}],
        {"x": "2.5", "y": 5.0},
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize(("setting", "value", "fields", "rules", "row"), LEGACY_SESSIONS)
def test_legacy_session_settings_do_not_change_a_run(
    spark: Any, tmp_path: Any, setting: str, value: str, fields: Any, rules: Any, row: dict[str, Any]
) -> None:
    """The same contract and row pass on a session carrying a legacy setting; its value is back after."""
    import json

    (tmp_path / "in.json").write_text(json.dumps({"id": 1, **row}) + "\n")
    contract = {
        "version": "1.0.0",
        "info": {"title": "legacy"},
        "source": {"type": "landing", "path": str(tmp_path / "in.json"), "format": "json"},
        "model": {"fields": [{"name": "id", "type": "int"}, *fields]},
        "quality": {"row_rules": rules},
    }
    spark.conf.set(setting, value)
    try:
        # what the run writes (the returned frames follow the session for settings Spark reads again
        # when a frame executes: engines/spark/pinned.py)
        DataProcessor(contract, spark=spark).run(output_good=tmp_path / "good", output_bad=tmp_path / "bad")
        assert spark.conf.get(setting) == value, "the session's own value is back"
    finally:
        spark.conf.unset(setting)
    good_ids = [r["id"] for r in spark.read.parquet(str(tmp_path / "good")).collect()]
    assert good_ids == [1]
    assert not (tmp_path / "bad").exists() or spark.read.parquet(str(tmp_path / "bad")).count() == 0


@pytest.mark.spark
def test_timestamps_keep_microseconds_on_a_millisecond_session(spark: Any, tmp_path: Any) -> None:
    """`spark.sql.parquet.outputTimestampType=TIMESTAMP_MILLIS` cut written timestamps to milliseconds."""
    key = "spark.sql.parquet.outputTimestampType"
    source = spark.createDataFrame([(1, "2024-01-15T13:00:00.123456Z")], "id int, ts string")
    spark.conf.set(key, "TIMESTAMP_MILLIS")
    try:
        DataProcessor(CONTRACT, spark=spark).run(source, output_good=tmp_path / "good")
        assert spark.conf.get(key) == "TIMESTAMP_MILLIS"
    finally:
        spark.conf.unset(key)
    [written] = spark.read.parquet(str(tmp_path / "good")).selectExpr("unix_micros(ts) AS us").collect()
    assert written["us"] % 1_000_000 == 123456


@pytest.mark.spark
def test_a_corrupt_source_file_fails_the_run_even_where_the_session_ignores_them(
    spark: Any, tmp_path: Any
) -> None:
    """With `spark.sql.files.ignoreCorruptFiles` on (common on Databricks), a truncated file was skipped and
    the run reported the rows it read as the whole source. The run fails instead, naming the file."""

    data = tmp_path / "in"
    spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string").coalesce(1).write.parquet(str(data))
    [part] = list(data.glob("part-*.parquet"))
    broken = data / "part-broken.parquet"
    broken.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])
    contract = {
        "version": "1.0.0",
        "info": {"title": "corrupt"},
        "source": {"type": "landing", "path": str(data), "format": "parquet"},
        "model": {"fields": [{"name": "id", "type": "int"}, {"name": "v", "type": "string"}]},
    }
    key = "spark.sql.files.ignoreCorruptFiles"
    spark.conf.set(key, "true")
    try:
        result = DataProcessor(contract, spark=spark).run()
    finally:
        spark.conf.unset(key)
    assert result.report.status == "failed" and result.good is None
    error = result.report.error
    assert error is not None and error.type == "source"
    assert "could not read the parquet source files" in error.message and "part-broken" in error.message


def test_a_refused_setting_fails_the_pin_and_leaves_the_session_as_it_was() -> None:
    """A platform may refuse a setting (Databricks serverless: CONFIG_NOT_AVAILABLE): the run fails, and
    the settings already changed are put back."""

    class Refusing(_Conf):
        def set(self, key: str, value: str) -> None:
            if key == ANSI_KEY and value == "false":
                raise RuntimeError("CONFIG_NOT_AVAILABLE")
            super().set(key, value)

    session = _Session("Europe/Paris")
    session.conf = Refusing("Europe/Paris")
    session.conf.values[ANSI_KEY] = "true"
    with pytest.raises(RuntimeError, match="CONFIG_NOT_AVAILABLE"), pinned_semantics(session):  # type: ignore[arg-type]
        pass
    assert session.conf.get(ZONE_KEY) == "Europe/Paris" and session.conf.get(ANSI_KEY) == "true"
    with pinned_semantics(_Session("UTC")):  # type: ignore[arg-type]
        pass  # nothing was left counted for the failed session
