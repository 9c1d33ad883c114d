"""The window of a standalone incremental run (SEMANTICS §3.4): with no window from the caller (the driver
passes its own), ``incremental``/``cdc`` sources read ``lower <= cursor < as_of`` with the lower bound from
``watermark_strategy``:

* ``max_target`` (default): ``MAX(watermark_field)`` in ``source.target_path`` or the contract's own target
  (``watermark_field`` default ``_lakelogic_processed_at``); no target or no such column yet: full read.
  For an append/overwrite target and a timestamp watermark the bound is exclusive (rows strictly after
  the maximum): the rows at the maximum were written by the run that set it, so an inclusive bound
  appended them again on every run. A merge/SCD2 target absorbs them and keeps the bound inclusive, as
  does a date (or ``YYYYMMDD``) watermark, whose maximum day may still receive rows;
* ``lookback``: ``as_of - lookback`` (default 7 days);
* ``date_range``: ``[from_date, to_date + 1 day)``;
* ``manifest``: the files the manifest does not list (the source reader selects them);
* ``delta_version``: the commits after the version the last successful run read up to (its run-log
  cursor; the source reader selects their files);
* ``pipeline_log``: where the last successful run ended its window (``last_success``: a
  ``--no-write`` run committed nothing and does not count), in the run log the contract records to
  (``pipeline_log_table``: another table of that log; ``pipeline_name``: the name its runs are logged
  under); none: full read, reason ``no_previous_success`` (the driver's own windows do the same from
  the driver's run log).

``lookback`` beside another strategy moves its lower bound back by that duration; the moved bound is
inclusive (the rows read again are late rows that merge/SCD2 absorb).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from loguru import logger
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakelogic.errors import LakeLogicError, PlanError, SourceError
from lakelogic.plan.predicates import interval_sql
from lakelogic.plan.steps import ReadSource
from lakelogic.sources.delta_cursor import DELTA_VERSION_FIELD, DELTA_VERSION_STRATEGY
from lakelogic.sources.manifest import MANIFEST_STRATEGY
from lakelogic.sources.window_apply import watermark_value
from lakelogic.sources.windows import ReadWindow

INCREMENTAL = ("incremental", "cdc")
PROCESSED_AT = "_lakelogic_processed_at"


def with_lookback(spark: SparkSession, step: ReadSource | None, window: ReadWindow) -> ReadWindow:
    """A driver's ``last_success`` window with the contract's ``lookback`` applied (§3.4: it moves any
    strategy's lower bound back, for late rows). The driver gives every incremental contract the last
    successful window's end as its start; without this a row arriving late with an earlier watermark was
    never read. Only a row window (``watermark_field``) moves: files selected by arrival time already
    include a late file, and moving that bound would only read earlier files again."""
    lookback = step.settings.get("lookback") if step is not None else None
    if (
        step is None
        or not lookback
        or not step.watermark_field  # files go by arrival time: a late file is picked up anyway
        or window.start is None
        or window.label != "incremental"
        or step.load_mode.lower() not in INCREMENTAL
    ):
        return window
    return replace(window, start=minus_duration(spark, window.start, lookback), start_exclusive=False)


def _settled(spark: SparkSession, contract: Any) -> None:
    """A run of this contract that committed but stopped before its run-log row is recorded first, so the
    bound below starts after its rows (``commit_recovery``)."""
    from lakelogic.engines.spark.commit_recovery import settle_pending_commits
    from lakelogic.runlog import store_for_contract

    try:
        settle_pending_commits(spark, contract, store_for_contract(contract))
    except Exception as exc:  # noqa: BLE001 - e.g. an unreadable target: the log's own bound, as before
        logger.warning("checking the interrupted commits of the contract failed: {}", exc)


def _pipeline_log_start(spark: SparkSession, contract: Any, step: ReadSource) -> datetime | None:
    from lakelogic.runlog import store_for_metadata

    _settled(spark, contract)
    metadata = dict(getattr(contract, "metadata", None) or {})
    table = step.settings.get("pipeline_log_table")
    if table:
        metadata["run_log_table"] = str(table)
    store = store_for_metadata(metadata, getattr(contract, "source_file", None))
    name = str(step.settings.get("pipeline_name") or getattr(contract, "contract_name", "contract"))
    row = store.last_success(name) if store.exists() else None
    end = row.get("window_end") if row else None
    if not isinstance(end, datetime):
        return None
    return end if end.tzinfo else end.replace(tzinfo=UTC)  # run-log timestamps are naive UTC


def _delta_version_window(spark: SparkSession, contract: Any, as_of: datetime) -> ReadWindow:
    """The version of the contract's last successful run that stored one, from the run log ``lakelogic
    run`` records it to (the driver passes the one of its own run log with its window)."""
    from lakelogic.runlog import store_for_contract

    _settled(spark, contract)
    store = store_for_contract(contract)
    name = str(getattr(contract, "contract_name", "contract"))
    row = store.last_cursor(name, DELTA_VERSION_FIELD) if store.exists() else None
    return ReadWindow(
        "incremental",
        None,
        as_of,
        reason=DELTA_VERSION_STRATEGY,
        cursor_field=DELTA_VERSION_FIELD if row else None,
        cursor=row.get("watermark_value") if row else None,
    )


def standalone_window(
    spark: SparkSession, contract: Any, step: ReadSource | None, as_of: datetime, *, target: str | None
) -> ReadWindow | None:
    if step is None or step.load_mode.lower() not in INCREMENTAL:
        return None
    settings = step.settings
    strategy = str(settings.get("watermark_strategy") or "max_target").lower()
    lookback = settings.get("lookback")
    end = as_of
    exclusive = False
    if strategy == "lookback":
        start: datetime | None = minus_duration(spark, as_of, lookback or "7d")
    elif strategy == "date_range":
        start, end = _date_range(settings)
    elif strategy == "max_target":
        try:
            start, instant = _max_target(spark, contract, step, target)
        except _NoWatermarkColumn:
            # the target exists without the column: every run is a first load (an append target then
            # holds the source again after each run), which the report must say (runner warns)
            return ReadWindow("incremental", None, as_of, reason=NO_WATERMARK_COLUMN)
        exclusive = start is not None and instant and not lookback and not _absorbs_rereads(contract)
    elif strategy == MANIFEST_STRATEGY:  # the source reader selects the files the manifest lacks
        return ReadWindow("incremental", None, as_of, reason=MANIFEST_STRATEGY)
    elif strategy == DELTA_VERSION_STRATEGY:  # the source reader takes the commits after the cursor
        return _delta_version_window(spark, contract, as_of)
    elif strategy == "pipeline_log":
        start = _pipeline_log_start(spark, contract, step)
        if start is None:
            return ReadWindow("incremental", None, as_of, reason="no_previous_success")
    else:
        raise PlanError(
            f"unknown watermark_strategy {strategy!r}",
            yaml_path="source.watermark_strategy",
            hint="allowed: max_target, pipeline_log, lookback, date_range, manifest, delta_version",
        )
    if lookback and strategy != "lookback" and start is not None:
        start = minus_duration(spark, start, lookback)
    reason = strategy if start is not None or strategy != "max_target" else "no_previous_target_watermark"
    # a date range is a business-date window: files are selected by the date in their name, as for a
    # driver's range window, not by when they landed
    label = "range" if strategy == "date_range" else "incremental"
    return ReadWindow(label, start, end, reason=reason, start_exclusive=exclusive)


NO_WATERMARK_COLUMN = "target_has_no_watermark_column"


class _NoWatermarkColumn(Exception):
    """The target exists but has no watermark column. Private: it never leaves this module."""


def _absorbs_rereads(contract: Any) -> bool:
    """Whether the target absorbs rows read again (merge, SCD2): there the bound stays inclusive, so a row
    that arrives late with the stored maximum (a coarse, date-typed watermark) is still read."""
    materialization = getattr(contract, "materialization", None)
    return getattr(materialization, "strategy", None) in ("merge", "scd2")


def minus_duration(spark: SparkSession, moment: datetime, duration: Any) -> datetime:
    """``moment`` moved back by ``duration`` (a ``lookback`` value), in Spark's interval arithmetic."""
    interval = interval_sql(duration, yaml_path="source.lookback")
    micros = _micros(moment)
    row = spark.sql(f"SELECT unix_micros(timestamp_micros({micros}) - {interval}) AS t").first()
    assert row is not None
    return _from_micros(int(row["t"]))


def _micros(moment: datetime) -> int:
    return (moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _from_micros(micros: int) -> datetime:
    # epoch microseconds: PySpark would turn a timestamp into a naive local datetime
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)


def _date_range(settings: Any) -> tuple[datetime | None, datetime]:
    def day(key: str) -> date | None:
        value = settings.get(key)
        if value is None:
            return None
        try:
            return value if isinstance(value, date) else date.fromisoformat(str(value))
        except ValueError:
            raise PlanError(
                f"source.{key} {value!r} is not a YYYY-MM-DD date", yaml_path=f"source.{key}"
            ) from None

    def midnight(d: date) -> datetime:
        return datetime(d.year, d.month, d.day, tzinfo=UTC)

    start, last = day("from_date"), day("to_date")
    if last is None:
        raise PlanError("watermark_strategy date_range needs to_date", yaml_path="source.to_date")
    return (midnight(start) if start else None), midnight(last) + timedelta(days=1)


def _max_target(
    spark: SparkSession, contract: Any, step: ReadSource, target: str | None
) -> tuple[datetime | None, bool]:
    """``MAX(watermark_field)`` of the target (None: no target or column yet), and whether the stored
    column holds instants (a timestamp). Only an instant bound may be exclusive: rows of the maximum day
    of a date (or ``YYYYMMDD``) watermark that land after the run that stored it must still be read."""
    from pyspark.sql.types import TimestampNTZType, TimestampType

    from lakelogic.tables.spark_write import adapter_for
    from lakelogic.tables.target import resolve_target

    field = step.watermark_field or PROCESSED_AT
    location = step.settings.get("target_path") or target
    try:
        resolved = resolve_target(contract, target=location)
        adapter = adapter_for(spark, resolved)
        if not adapter.exists():
            return None, False
        stored = adapter.read()
    except LakeLogicError:
        return None, False  # no resolvable target yet: the first load reads everything
    if field not in stored.columns:
        raise _NoWatermarkColumn(field)
    instant = isinstance(stored.schema[field].dataType, TimestampType | TimestampNTZType)
    column = F.col("`" + field.replace("`", "``") + "`")
    row = stored.agg(
        F.unix_micros(F.max(watermark_value(stored, field))).alias("m"), F.max(column).alias("raw")
    ).first()
    if row is not None and row["m"] is None and row["raw"] is not None:
        # values no window can be placed by (epoch seconds, a sequence number): a full read every run
        # would append the whole source again each time
        raise SourceError(
            f"watermark_field {field!r}: the target's values (largest {str(row['raw'])[:40]!r}) are not "
            "dates or timestamps, so no incremental window can start after them",
            hint="a watermark is a date, a timestamp, ISO 8601 text or a YYYYMMDD number; "
            "use watermark_strategy: manifest or pipeline_log for other sources",
        )
    found = _from_micros(int(row["m"])) if row is not None and row["m"] is not None else None
    return found, instant
