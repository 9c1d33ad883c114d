"""Delta file statistics from a Parquet footer: what a Delta reader skips files with.

A Delta ``add`` action may carry ``stats``: ``numRecords`` and, per column, ``minValues``, ``maxValues`` and
``nullCount``. Spark+Delta and delta-rs skip every file whose range cannot hold a filtered value, so a
wrong bound would make them drop rows. Only what the footer states exactly is written:

* min/max for integer, date and string columns, and only when every row group holding a non-NULL value
  has min/max in the footer (strings compare by bytes in Parquet, Spark and Arrow alike; Parquet writers
  record string bounds in that order or, in the old signed order, not at all as far as pyarrow reads them);
* ``nullCount`` for every top-level column whose row groups all state it.

Timestamps (Delta stores them with millisecond precision), decimals, floating-point and nested columns
get no bounds: leaving a statistic out only means the file is read.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _ranged(data_type: pa.DataType) -> bool:
    types = pa.types
    return bool(types.is_integer(data_type) or types.is_date32(data_type) or types.is_string(data_type))


def _json_value(value: Any) -> Any:
    """The stats JSON form of a footer bound (dates as ``yyyy-MM-dd``), or None when it has none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (int, str)):
        return value
    return None


def file_stats(metadata: pq.FileMetaData) -> dict[str, Any]:
    """The ``stats`` object of one data file from its footer (columns without exact bounds left out)."""
    stats: dict[str, Any] = {"numRecords": int(metadata.num_rows)}
    schema = metadata.schema.to_arrow_schema()
    minimums: dict[str, Any] = {}
    maximums: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    for field in schema:
        if field.name not in leaves or pa.types.is_nested(field.type):
            continue
        column = leaves[field.name]
        bounds = _column_bounds(metadata, column) if _ranged(field.type) else None
        if bounds is not None:
            minimums[field.name], maximums[field.name] = bounds
        count = _null_count(metadata, column)
        if count is not None:
            nulls[field.name] = count
    if minimums:
        stats["minValues"], stats["maxValues"] = minimums, maximums
    if nulls:
        stats["nullCount"] = nulls
    return stats


def _column_bounds(metadata: pq.FileMetaData, column: int) -> tuple[Any, Any] | None:
    lows: list[Any] = []
    highs: list[Any] = []
    for group in range(metadata.num_row_groups):
        chunk = metadata.row_group(group).column(column)
        statistics = chunk.statistics
        if statistics is None:
            return None
        if statistics.has_null_count and statistics.null_count == chunk.num_values:
            continue  # only NULLs here: no bound to take
        if not statistics.has_min_max:
            return None
        try:
            low, high = _json_value(statistics.min), _json_value(statistics.max)
        except (UnicodeDecodeError, ValueError, pa.ArrowException):
            return None  # e.g. string bounds that are not valid UTF-8: the column gets no bounds
        if low is None or high is None:
            return None
        lows.append(low)
        highs.append(high)
    if not lows:
        return None
    return min(lows, key=_order), max(highs, key=_order)


def _order(value: Any) -> Any:
    """Order of the stats values: strings by their UTF-8 bytes (Parquet's and Spark's order)."""
    return value.encode("utf-8") if isinstance(value, str) else value


def _null_count(metadata: pq.FileMetaData, column: int) -> int | None:
    total = 0
    for group in range(metadata.num_row_groups):
        statistics = metadata.row_group(group).column(column).statistics
        if statistics is None or not statistics.has_null_count:
            return None
        total += int(statistics.null_count)
    return total
