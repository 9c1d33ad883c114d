"""Key-range pruning for the target scans of keyed writes (merge, SCD2).

A merge or an SCD2 write has to find the batch's keys among the stored rows. A stored row can only match
when each of its key columns lies within the batch's [min, max] of that column, so every target scan of
those writes is restricted to that range. The filter never changes a result (it removes only rows that
cannot match); it lets the table's own statistics skip data: Iceberg file metrics, Delta data skipping,
Parquet row-group statistics. A batch whose keys are clustered (increasing ids, recent orders, one
customer range) then reads a few files of a large table instead of all of them; for keys spread over the
whole table the range is the whole table and the filter costs nothing measurable. This is the key-range
part of an upsert index (as in Hudi's range pruning) without an index to maintain.

Only key columns whose bounds have an exact SQL literal take part: integers, decimals, dates, strings, and
timestamps as ``timestamp_micros(<microseconds>)`` (a collected ``datetime`` is session-local, and a shifted
bound could prune a matching row). Doubles, timestamps without time zone and other types are not ranged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampType,
)

from lakelogic.tables.spark_batch import q
from lakelogic.tables.spark_merge import TimestampMicros, bounds_predicate, sql_literal

if TYPE_CHECKING:  # annotations only
    from lakelogic.tables.base import TableAdapter

_RANGED_TYPES = (ByteType, ShortType, IntegerType, LongType, DecimalType, DateType, StringType, TimestampType)


def ranged_type(data_type: DataType) -> bool:
    """True for key types whose min/max round-trip exactly through a SQL literal."""
    return isinstance(data_type, _RANGED_TYPES)


@dataclass(frozen=True)
class BatchKeys:
    """The batch's row count and, per key column with an exact literal, the range of its non-NULL values."""

    rows: int
    bounds: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)

    def predicate(self, alias: str = "") -> str | None:
        """``[alias.]k BETWEEN lo AND hi AND ...``, or None when no column can be restricted."""
        return bounds_predicate(self.bounds, alias) or None

    def restrict(self, target: DataFrame) -> DataFrame:
        """``target`` without the rows whose key lies outside the batch's range (they cannot match)."""
        condition = self.predicate()
        return target.where(condition) if condition is not None else target

    def read(self, adapter: TableAdapter) -> DataFrame:
        """The stored rows that can match the batch: files outside its range left unread where the format
        states per-file ranges (file_ranges.py), the rest filtered by :meth:`restrict`."""
        return self.restrict(adapter.read_in_range(self.bounds))


def batch_keys(batch: DataFrame, keys: Sequence[str]) -> BatchKeys:
    """One aggregation over ``batch``: its row count and the min/max of every rangeable key column.

    ``batch`` must already be aligned to the target's types: a bound compares with stored values, and a
    cast can change the order (the integers 9 < 10 are the strings '10' < '9').

    A key column whose values are all NULL gets no bound (such rows match nothing, and an empty range
    would have to be spelled differently per type); nor does a bound without an exact literal."""
    types = {f.name: f.dataType for f in batch.schema.fields}
    ranged = [k for k in keys if k in types and ranged_type(types[k])]
    aggregates = [F.count(F.lit(1)).alias("rows")]
    stamps = {k for k in ranged if isinstance(types[k], TimestampType)}
    for i, k in enumerate(ranged):
        smallest, largest = F.min(q(k)), F.max(q(k))
        if k in stamps:
            smallest, largest = F.unix_micros(smallest), F.unix_micros(largest)
        aggregates += [smallest.alias(f"lo{i}"), largest.alias(f"hi{i}")]
    row = batch.agg(*aggregates).first()
    assert row is not None  # an aggregation without GROUP BY always yields one row
    bounds: dict[str, tuple[Any, Any]] = {}
    for i, k in enumerate(ranged):
        low, high = row[f"lo{i}"], row[f"hi{i}"]
        if k in stamps and low is not None and high is not None:
            low, high = TimestampMicros(low), TimestampMicros(high)
        if sql_literal(low) is not None and sql_literal(high) is not None:
            bounds[k] = (low, high)
    return BatchKeys(rows=int(row["rows"]), bounds=bounds)


FileBounds = tuple[int, Mapping[str, tuple[Any, Any]]]
"""A data file's record count and, per key column, its lower and upper bound (None: not recorded)."""

_EPOCH = date(1970, 1, 1)


def comparable_bound(value: Any) -> Any:
    """A key bound in the form file metrics are compared in: timestamps as epoch microseconds
    (:class:`TimestampMicros`), dates as epoch days; other values as they are."""
    if isinstance(value, TimestampMicros):
        return int(value)
    if isinstance(value, date) and not isinstance(value, datetime):
        return (value - _EPOCH).days
    return value


def _column_share(lower: Any, upper: Any, low: Any, high: Any) -> float:
    """The share of a file's values of one column that lie in [low, high], from its [lower, upper] alone:
    0 when the two do not overlap; for numbers the overlapping part of [lower, upper] (values taken as
    evenly spread, counted as whole numbers when all four are integers); 1 for anything else that overlaps
    (strings have no length to measure) and for a file without bounds."""
    if lower is None or upper is None:
        return 1.0
    if upper < low or lower > high:
        return 0.0
    numbers = (int, float, Decimal)
    if not all(isinstance(v, numbers) and not isinstance(v, bool) for v in (lower, upper, low, high)):
        return 1.0
    if all(isinstance(v, int) for v in (lower, upper, low, high)):
        return (min(upper, high) - max(lower, low) + 1) / (upper - lower + 1)
    lower, upper, low, high = (float(v) for v in (lower, upper, low, high))
    width = upper - lower
    return 1.0 if width == 0 else (min(upper, high) - max(lower, low)) / width


def share_in_range(files: Iterable[FileBounds], bounds: Mapping[str, tuple[Any, Any]]) -> float:
    """The estimated share of the rows in ``files`` that overlap ``bounds`` whose keys lie inside them.

    A table scan restricted to the batch's key range reads every file that overlaps it; the rows inside the
    range (the ones a keyed write joins and shuffles) can be a small part of them, as when a batch of
    recent keys touches the end of a large file. Per file, the share of each key column's [lower, upper]
    that the range covers (:func:`_column_share`), multiplied over the columns; files outside the range do
    not count. 1.0 when no file overlaps or nothing can be measured."""
    wanted = {k: (comparable_bound(lo), comparable_bound(hi)) for k, (lo, hi) in bounds.items()}
    overlapping = inside = 0.0
    for rows, file_bounds in files:
        share = 1.0
        for column, (low, high) in wanted.items():
            lower, upper = file_bounds.get(column, (None, None))
            share *= _column_share(lower, upper, low, high)
        if share > 0:
            overlapping += rows
            inside += rows * share
    return inside / overlapping if overlapping else 1.0
