"""Runs see UTC, whatever time zone the session was given (SEMANTICS §5.3).

The contract semantics are in UTC: text without an offset is a UTC time, a timestamp's date is its UTC
date, §5.3 writes timestamps as ``...Z``. Spark reads all of these through
``spark.sql.session.timeZone``, so on a cluster set to ``America/Los_Angeles`` the same contract and data
gave other timestamps, other dates and other rule verdicts than on the embedded (UTC) session.

A run therefore pins the session to UTC while it plans and executes, and puts the zone back afterwards.
Frames built inside keep UTC: Spark binds the zone into their expressions when it analyses them, so
``RunResult.good`` evaluated later still means the same rows. Runs of one session can overlap (the driver
runs independent contracts in threads), so the zone is saved by the first run to enter and restored by the
last to leave. Other code using the same session while a run is in progress sees UTC too.
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
UTC = "UTC"

_lock = threading.Lock()
_holders: dict[int, tuple[int, str | None]] = {}  # id(session) -> (runs inside, zone to restore)


@contextmanager
def utc_session(spark: SparkSession) -> Iterator[None]:
    """Pin ``spark``'s session time zone to UTC for the block (re-entrant and thread-safe)."""
    key = id(spark)
    with _lock:
        inside, saved = _holders.get(key, (0, None))
        if inside == 0:
            zone = spark.conf.get(ZONE_KEY, None)
            saved = None if zone in (UTC, "Etc/UTC", "Z", "+00:00") else zone
            if saved is not None:
                spark.conf.set(ZONE_KEY, UTC)
        _holders[key] = (inside + 1, saved)
    try:
        yield
    finally:
        with _lock:
            inside, saved = _holders.pop(key)
            if inside > 1:
                _holders[key] = (inside - 1, saved)
            elif saved is not None:
                _restore(spark, saved)


def _restore(spark: SparkSession, zone: str) -> None:
    # A session that died (often why the run failed) cannot take the zone back; that must not replace
    # the run's own error, so it is logged instead.
    try:
        spark.conf.set(ZONE_KEY, zone)
    except Exception as exc:  # noqa: BLE001 - logged, and the run's outcome stands
        logger.warning("could not restore the session time zone {}: {}", zone, exc)
