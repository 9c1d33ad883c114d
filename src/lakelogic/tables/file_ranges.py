"""Per-file value ranges and file skipping for keyed writes on path tables.

A Delta table records, per data file, the min and max of its columns (``minValues``/``maxValues``; our
delta-rs commits write them, tables/delta_stats.py). A merge or SCD2 write needs only the files that can
hold one of its keys, and a file whose stated range for a key column lies wholly outside the write's key
range [low, high] holds none. Leaving such files out of the scan is the file-level step of the key-range
pruning in tables/key_range.py (row-group statistics only spare the decoding; the file is still opened).

A skipped file that did hold a matching row would lose an update, so a stated range is used only where it
is exact and compares with the bound the way Spark orders the column:

* integers with integers, dates with dates (not timestamps: Delta keeps milliseconds) and strings with
  strings. Python orders strings by code point, which is the UTF-8 byte order Spark and Parquet use;
* a string max of 32 or more characters is not used: Delta writers cut long strings to a prefix (Spark's
  Delta keeps 32 characters) and a cut max may lie below the real one. A cut min is still a lower bound;
* anything else (decimals, floating point, booleans, timestamps, nested values) is ignored, and a file
  without statistics is always read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

STRING_PREFIX_LIMIT = 32


def _kind(value: Any) -> str | None:
    """The comparison family of a value, or None when it is not compared exactly."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "str"
    if isinstance(value, date) and not isinstance(value, datetime):
        return "date"
    return None


def stated_range(low: Any, high: Any) -> tuple[Any, Any] | None:
    """A file's [min, max] of one column as far as it can be trusted (either end may be None), or None."""
    if _kind(high) == "str" and len(high) >= STRING_PREFIX_LIMIT:
        high = None
    low = low if _kind(low) is not None else None
    high = high if _kind(high) is not None else None
    if low is None and high is None:
        return None
    return low, high


def may_hold(ranges: Mapping[str, tuple[Any, Any]], bounds: Mapping[str, tuple[Any, Any]]) -> bool:
    """False only when, for some bounded column, the file's stated range lies outside [low, high]."""
    for column, (low, high) in bounds.items():
        stated = ranges.get(column)
        if stated is None:
            continue
        file_min, file_max = stated
        if file_max is not None and _kind(file_max) == _kind(low) is not None and file_max < low:
            return False
        if file_min is not None and _kind(file_min) == _kind(high) is not None and file_min > high:
            return False
    return True


def top_level_ranges(
    action: Mapping[str, Any], columns: Iterable[str], nested: Iterable[str]
) -> dict[str, tuple[Any, Any]]:
    """The trusted ranges of top-level ``columns`` from one flattened Delta add action (``min.<c>`` /
    ``max.<c>``). A column whose name begins with ``<struct>.`` of a ``nested`` column is left out: its
    flattened name could be that struct's field."""
    prefixes = tuple(f"{n}." for n in nested)
    ranges: dict[str, tuple[Any, Any]] = {}
    for column in columns:
        if column.startswith(prefixes):
            continue
        stated = stated_range(action.get(f"min.{column}"), action.get(f"max.{column}"))
        if stated is not None:
            ranges[column] = stated
    return ranges
