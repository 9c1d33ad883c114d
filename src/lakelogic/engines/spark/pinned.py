"""Runs see the session settings the contract semantics assume, whatever the session was given.

Three Spark settings change what the same contract and data mean:

* ``spark.sql.session.timeZone``: SEMANTICS §5.3 is in UTC (text without an offset is a UTC time, a
  timestamp's date is its UTC date, timestamps are written ``...Z``), but Spark reads all of these through
  the session's zone, so on a cluster set to ``America/Los_Angeles`` the same contract gave other
  timestamps, other dates and other rule verdicts than on the embedded (UTC) session.
* ``spark.sql.timestampType``: a model ``timestamp`` is an instant (§5.1: ``TimestampType``, UTC), and
  LakeLogic spells it ``TIMESTAMP`` in casts and DDL. In a session set to ``TIMESTAMP_NTZ`` that spelling
  means a timestamp without time zone, so columns, lineage times and SCD2 validity columns came out NTZ.
* ``spark.sql.ansi.enabled``: contract SQL is Spark SQL (SEMANTICS §0) with Spark's default semantics, in
  which a row-level arithmetic error (division by zero, overflow, a failed cast) is NULL, so the rule
  fails and the row is quarantined (§10.1: FALSE and NULL fail). In an ANSI session (Databricks SQL, Spark
  4's default) the same row raised an error and failed the whole run, so bad data decided whether a run
  finished, and after the run, evaluating ``RunResult.good`` raised it again.

A run therefore pins both while it plans and executes, and puts the session's own values back afterwards.
Frames built inside keep the pinned meaning: Spark binds the zone and parses type names when it analyses
them, so ``RunResult.good`` evaluated later still means the same rows. Runs of one session can overlap
(the driver runs independent contracts in threads), so the values are saved by the first run to enter and
restored by the last to leave. Other code using the same session while a run is in progress sees the
pinned values too.
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
UTC = "UTC"
_UTC_NAMES = (UTC, "Etc/UTC", "Z", "+00:00")
PINNED = {ZONE_KEY: UTC, TIMESTAMP_TYPE_KEY: "TIMESTAMP_LTZ", ANSI_KEY: "false"}

_lock = threading.Lock()
# id(session) -> (runs inside, the session's own values of the settings the first run changed)
_holders: dict[int, tuple[int, dict[str, str]]] = {}


def _already_pinned(key: str, value: str) -> bool:
    if key == ZONE_KEY:
        return value in _UTC_NAMES
    return value.lower() == PINNED[key].lower()


@contextmanager
def pinned_semantics(spark: SparkSession) -> Iterator[None]:
    """Pin ``spark``'s settings to :data:`PINNED` for the block (re-entrant and thread-safe): UTC, instants
    for ``TIMESTAMP``, no ANSI mode. A setting the session does not report is left alone."""
    key = id(spark)
    with _lock:
        inside, saved = _holders.get(key, (0, {}))
        if inside == 0:
            saved = {}
            for setting, value in PINNED.items():
                own = spark.conf.get(setting, None)
                if own is not None and not _already_pinned(setting, own):
                    saved[setting] = own
                    spark.conf.set(setting, value)
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


def _restore(spark: SparkSession, saved: dict[str, str]) -> None:
    # A session that died (often why the run failed) cannot take its values back; that must not replace
    # the run's own error, so it is logged instead.
    for setting, value in saved.items():
        try:
            spark.conf.set(setting, value)
        except Exception as exc:  # noqa: BLE001 - logged, and the run's outcome stands
            logger.warning("could not restore the session setting {}={}: {}", setting, value, exc)
