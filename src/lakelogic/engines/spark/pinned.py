"""Runs see the session settings the contract semantics assume, whatever the session was given.

These Spark settings change what the same contract and data mean (each was reproduced through
``DataProcessor`` with another value):

* ``spark.sql.session.timeZone``: SEMANTICS §5.3 is in UTC (text without an offset is a UTC time, a
  timestamp's date is its UTC date, timestamps are written ``...Z``), but Spark reads all of these through
  the session's zone, so on a cluster set to ``America/Los_Angeles`` the same contract gave other
  timestamps, other dates and other rule verdicts than on the embedded (UTC) session.
* ``spark.sql.timestampType``: a model ``timestamp`` is an instant (§5.1: ``TimestampType``, UTC), and
  LakeLogic spells it ``TIMESTAMP`` in casts and DDL. In a session set to ``TIMESTAMP_NTZ`` that spelling
  means a timestamp without time zone, so columns, lineage times and SCD2 validity columns came out NTZ.
* ``spark.sql.ansi.enabled``: contract SQL is Spark SQL (SEMANTICS §0) with Spark's default semantics, in
  which a row-level arithmetic error (division by zero, a failed cast) is NULL, so the rule fails and the
  row is quarantined (§10.2: FALSE and NULL fail). In an ANSI session (Databricks SQL, Spark 4's
  default) the same row raised an error and failed the whole run.
* ``spark.sql.decimalOperations.allowPrecisionLoss``: off, ``price * qty`` of two ``decimal(38,10)``
  overflowed to NULL and quarantined rows that pass on a default session.
* ``spark.sql.parser.escapedStringLiterals`` and ``spark.sql.legacy.exponentLiteralAsDecimal.enabled``:
  legacy parsing of string and number literals changed what rule SQL (regular expressions, quoted
  values) and LakeLogic's own expressions mean, or failed every run with a ``float`` field.
* ``spark.sql.parquet.outputTimestampType``: ``TIMESTAMP_MILLIS`` (a common setting for Hive/Impala
  readers) cut every timestamp written to milliseconds; §5.1 timestamps have microseconds. Spark's
  default, the deprecated INT96, is written as INT64 microseconds too (it was the slowest column of a
  write), but a session that chose INT96 itself keeps it: it loses nothing.
* ``spark.sql.jsonGenerator.ignoreNullFields`` and ``spark.sql.legacy.castComplexTypesToString.enabled``:
  the text of nested values (a ``json`` field, SCD2's tracked-value comparison) and the hash of a masked
  array changed with them (read when a frame executes: what a run writes is covered).
* ``spark.sql.files.ignoreCorruptFiles`` / ``ignoreMissingFiles``: on, a truncated or vanished file was
  skipped and its rows were lost while the counts still reconciled (sources/strict_read.py).

A run therefore pins them while it plans and executes, and puts the session's own values back afterwards
(a setting the session had not set is unset again). Everything a run writes (outputs, targets,
quarantine) follows the pinned values. Frames it returns keep most of them: Spark binds the zone, the
ANSI mode and type names and literals into an expression when it analyses it, so ``RunResult.good``
evaluated later still means the same rows. Two are read again when a frame executes: the Parquet
timestamp type (only writes read it) and the decimal precision rule (an optimizer copy of a decimal
product takes the session's value), so a returned frame evaluated after the run follows the session
there; file sources name their file-skipping options on the read itself (sources/strict_read.py).
Runs of one session can overlap (the driver runs independent contracts in threads), so the values are
saved by the first run to enter and restored by the last to leave. Other code using the same session
while a run is in progress sees the pinned values too. A setting this Spark does not know is left alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from loguru import logger

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ZONE_KEY = "spark.sql.session.timeZone"
TIMESTAMP_TYPE_KEY = "spark.sql.timestampType"
ANSI_KEY = "spark.sql.ansi.enabled"
PARQUET_TIMESTAMPS_KEY = "spark.sql.parquet.outputTimestampType"
UTC = "UTC"
_UTC_NAMES = (UTC, "Etc/UTC", "Z", "+00:00")
PINNED = {
    ZONE_KEY: UTC,
    TIMESTAMP_TYPE_KEY: "TIMESTAMP_LTZ",
    ANSI_KEY: "false",
    "spark.sql.decimalOperations.allowPrecisionLoss": "true",
    "spark.sql.parser.escapedStringLiterals": "false",
    "spark.sql.legacy.exponentLiteralAsDecimal.enabled": "false",
    PARQUET_TIMESTAMPS_KEY: "TIMESTAMP_MICROS",
    # text of nested values (json fields, SCD2 change detection) and of masked arrays, as Spark 3 writes it
    "spark.sql.jsonGenerator.ignoreNullFields": "true",
    "spark.sql.legacy.castComplexTypesToString.enabled": "false",
    # a truncated or vanished file (a source, staged rows, a link) fails the run, never a silent skip
    "spark.sql.files.ignoreCorruptFiles": "false",
    "spark.sql.files.ignoreMissingFiles": "false",
}

_lock = threading.Lock()
# id(session) -> (runs inside, the session's own values of the settings the first run changed; None:
# the session had not set it)
_holders: dict[int, tuple[int, dict[str, str | None]]] = {}


def _own_value(spark: SparkSession, setting: str) -> tuple[str | None, str | None]:
    """(the value the session set, or None; the value in effect, or None when this Spark does not know
    the setting). ``conf.get(key, None)`` is None for a setting left at its default."""
    explicit = spark.conf.get(setting, None)
    if explicit is not None:
        return explicit, explicit
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return None, spark.conf.get(setting)
    except (Py4JError, PySparkException):  # a setting this Spark does not know: nothing to pin
        return None, None


# values that mean the same for a run, so a session keeps them: more names of UTC, and INT96 when the
# session chose it (lossless nanoseconds, only deprecated; left at the default it is written as micros)
_SAME_MEANING = {ZONE_KEY: {n.lower() for n in _UTC_NAMES}}
_SAME_MEANING_WHEN_CHOSEN = {PARQUET_TIMESTAMPS_KEY: {"int96"}}


def _already_pinned(key: str, value: str, *, explicit: bool) -> bool:
    same = {PINNED[key].lower()} | _SAME_MEANING.get(key, set())
    if explicit:
        same |= _SAME_MEANING_WHEN_CHOSEN.get(key, set())
    return value.lower() in same


@contextmanager
def pinned_semantics(spark: SparkSession) -> Iterator[None]:
    """Pin ``spark``'s settings to :data:`PINNED` for the block (re-entrant and thread-safe): UTC, instants
    for ``TIMESTAMP``, no ANSI mode, Spark's default literal and decimal semantics, microsecond
    timestamps in Parquet."""
    key = id(spark)
    with _lock:
        inside, saved = _holders.get(key, (0, {}))
        if inside == 0:
            saved = {}
            try:
                for setting, value in PINNED.items():
                    own, effective = _own_value(spark, setting)
                    if effective is None or _already_pinned(setting, effective, explicit=own is not None):
                        continue  # unknown to this Spark, or already what the run needs
                    spark.conf.set(setting, value)
                    saved[setting] = own
            except BaseException:
                # a platform that refuses one setting fails the run, with the session as it was
                _restore(spark, saved)
                raise
        _holders[key] = (inside + 1, saved)
    try:
        yield
    finally:
        with _lock:
            inside, saved = _holders.pop(key)
            if inside > 1:
                _holders[key] = (inside - 1, saved)
            else:
                _restore(spark, saved)


def _restore(spark: SparkSession, saved: dict[str, str | None]) -> None:
    # A session that died (often why the run failed) cannot take its values back; that must not replace
    # the run's own error, so it is logged instead.
    for setting, value in saved.items():
        try:
            if value is None:
                spark.conf.unset(setting)
            else:
                spark.conf.set(setting, value)
        except Exception as exc:  # noqa: BLE001 - logged, and the run's outcome stands
            logger.warning("could not restore the session setting {}={}: {}", setting, value, exc)
