"""Spark implementations of the date ops: date_diff and date_range_explode (SEMANTICS §9.2).

Both accept dates, timestamps, and text in ``YYYY-MM-DD``, ``YYYYMMDD`` or ISO 8601 form (``T`` or
space, optional fraction and offset/``Z``); unparseable values are NULL. Times are UTC (the session
time zone is UTC), so "calendar date" means the UTC date.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    IntegralType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from lakelogic.engines.spark.casting import strict_cast_sql
from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import NO_OUTPUT_ROW, col, field_type, require_columns, with_columns
from lakelogic.plan.ops_common import quote
from lakelogic.plan.steps import Transform
from lakelogic.types import parse_type

_MICROS = {"seconds": 1_000_000, "minutes": 60_000_000, "hours": 3_600_000_000, "weeks": 604_800_000_000}
_SEQUENCE_STEP = {"d": "DAY", "w": "DAY", "mo": "MONTH", "h": "HOUR"}


def _parse_text(text_sql: str) -> Column:
    """Text -> UTC timestamp by the strict cast rules (SEMANTICS §5.3): an ISO 8601 timestamp, or a date
    (``YYYY-MM-DD``, ``YYYYMMDD``) at midnight UTC; any other text is NULL."""
    stamp = strict_cast_sql(text_sql, StringType(), parse_type("timestamp"))
    day = strict_cast_sql(text_sql, StringType(), parse_type("date"))
    return F.expr(f"coalesce({stamp}, CAST({day} AS TIMESTAMP))")


def as_timestamp(name: str, data_type: DataType) -> Column:
    """Column ``name`` as a UTC timestamp when it holds dates, timestamps or date text (dates at midnight
    UTC); anything else is NULL."""
    column = col(name)
    if isinstance(data_type, TimestampType):
        return column
    if isinstance(data_type, (DateType, TimestampNTZType)):
        return column.cast("timestamp")
    if isinstance(data_type, StringType):
        return _parse_text(quote(name))
    if isinstance(data_type, IntegralType):  # 20240131 read from JSON as a number
        return _parse_text(f"CAST({quote(name)} AS STRING)")
    return F.lit(None).cast("timestamp")


def _timestamp_of(step: Transform, frame: DataFrame, name: str, key: str) -> Column:
    require_columns(step, frame, [name], key)
    return as_timestamp(name, field_type(frame, name))


def _time_of_day(ts: Column) -> Column:
    return F.unix_micros(ts) - F.unix_micros(F.to_date(ts).cast("timestamp"))


def _whole_months(start: Column, end: Column) -> Column:
    """Whole months elapsed, truncated toward zero: the largest ``n`` with ``start + n months <= end``
    (day of month clamped, time of day kept), negative when ``end`` is earlier.

    Spark's ``months_between`` is not used: it counts month-end to month-end as a whole month even
    when less time has passed (01-31 23:30 -> 02-29 00:10).
    """
    calendar = (F.year(end) * 12 + F.month(end)) - (F.year(start) * 12 + F.month(start))
    shifted = F.add_months(F.to_date(start), calendar.cast("int"))
    end_day, end_time, start_time = F.to_date(end), _time_of_day(end), _time_of_day(start)
    overshoots = (shifted > end_day) | ((shifted == end_day) & (start_time > end_time))
    undershoots = (shifted < end_day) | ((shifted == end_day) & (start_time < end_time))
    forward = calendar - F.when(overshoots, 1).otherwise(0)
    backward = calendar + F.when(undershoots, 1).otherwise(0)
    return F.when(end >= start, forward).otherwise(backward).cast("long")


def apply_date_diff(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    start = _timestamp_of(step, frame, p["from_col"], "from_col")
    end = _timestamp_of(step, frame, p["to_col"], "to_col")
    unit = p["unit"]
    if unit == "days":
        diff = F.datediff(F.to_date(end), F.to_date(start))
    elif unit in ("months", "years"):
        months = _whole_months(start, end)
        diff = months if unit == "months" else (months / 12).cast("long")
    else:
        elapsed = F.unix_micros(end) - F.unix_micros(start)
        # long / long is a double; both operands are exact and cast(long) truncates toward zero.
        diff = (elapsed / F.lit(_MICROS[unit])).cast("long")
    return with_columns(frame, {p["field"]: diff.cast("long")})


def _range_bounds(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> tuple[Column, Column, Column]:
    """(first, last, unreadable end): an end that holds a value but does not parse is no open end."""
    p = step.params
    start = _timestamp_of(step, frame, p["start_col"], "start_col")
    end = _timestamp_of(step, frame, p["end_col"], "end_col") if p.get("end_col") else F.lit(None)
    unreadable = col(p["end_col"]).isNotNull() & end.isNull() if p.get("end_col") else F.lit(False)
    if p["unit"] == "h":
        # Hourly steps produce timestamps; an open end is the run's as-of instant.
        return start, F.coalesce(end, F.lit(ctx.as_of).cast("timestamp")), unreadable
    # An open end is "today": the run's as-of date (UTC), so reruns of a run are reproducible.
    return F.to_date(start), F.coalesce(F.to_date(end), F.lit(ctx.as_of.date())), unreadable


def apply_date_range_explode(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    p = step.params
    unit, count = p["unit"], int(p["count"])
    first, last, unreadable_end = _range_bounds(step, frame, ctx)
    amount = count * 7 if unit == "w" else count
    step_interval = F.expr(f"INTERVAL {amount} {_SEQUENCE_STEP[unit]}")
    # A NULL start or an end before the start yields no rows (SEMANTICS §9.2), and so does an end that
    # does not parse, as an unparseable start does (read as "today" it expanded to the run date). Such a
    # row is kept once, marked NO_OUTPUT_ROW, so it is counted as filtered and the others' extra rows as
    # expanded (§12). CASE evaluates only the chosen branch, so sequence() never sees end < start.
    empty = first.isNull() | unreadable_end | (last < first)
    series = F.when(empty, F.lit(None)).otherwise(F.sequence(first, last, step_interval))
    output = p["output"]
    items = [F.explode_outer(series).alias(output) if c == output else col(c) for c in frame.columns]
    if output not in frame.columns:
        items.append(F.explode_outer(series).alias(output))
    return frame.select(*items, empty.alias(NO_OUTPUT_ROW))
