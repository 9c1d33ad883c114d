"""A reprocess write (SEMANTICS §13.4) on real tables: its counts, and a batch row outside the window.

``rows_inserted`` is the batch rows written and ``rows_deleted`` the target rows of the window removed;
rows a format writes again because they share a file with removed ones (Iceberg copy-on-write rewrites
every file a ``NOT MATCHED BY SOURCE`` MERGE scans; path tables rewrite the files holding window rows)
are neither. A batch row outside the window would be appended beside the rows it should replace, so the
write fails and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import pytest

from lakelogic.errors import CommitError
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, day date"
WINDOW = (datetime(2024, 1, 2, tzinfo=UTC), datetime(2024, 1, 3, tzinfo=UTC))
# one day outside the window on each side, and four rows of the reprocessed day
SEED = [
    (1, date(2024, 1, 1)),
    (2, date(2024, 1, 2)),
    (3, date(2024, 1, 2)),
    (4, date(2024, 1, 2)),
    (5, date(2024, 1, 2)),
    (6, date(2024, 1, 3)),
    (7, date(2024, 1, 3)),
]


def _seed(spark: Any, target: ResolvedTarget) -> None:
    # one data file holding every day: replacing the window's rows rewrites the others with them
    seed = spark.createDataFrame(SEED, SCHEMA).coalesce(1)
    write_frame(spark, seed, target, WriteSpec(strategy="append"), CommitStamp("seed", "c"))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("batch_rows", [None, 1], ids=["direct", "counted"])
def test_a_reprocess_counts_the_batch_as_inserted_and_the_window_rows_as_deleted(
    spark: Any, make_target: Make, fmt: str, batch_rows: int | None
) -> None:
    target = make_target(fmt)
    _seed(spark, target)
    fix = spark.createDataFrame([(20, date(2024, 1, 2))], SCHEMA)
    # batch_rows: what a run knows of its good rows (materialize passes it); None: write_frame counts
    spec = WriteSpec(strategy="append", reprocess_date_column="day", batch_rows=batch_rows)
    outcome = write_frame(spark, fix, target, spec, CommitStamp("fix", "c"), reprocess_window=WINDOW)
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 6, 7, 20]
    assert outcome.committed
    assert (outcome.rows_inserted, outcome.rows_updated, outcome.rows_deleted) == (1, 0, 4)


@pytest.mark.parametrize("fmt", ["iceberg", "parquet"])
def test_a_partitioned_reprocess_counts_only_the_window(spark: Any, make_target: Make, fmt: str) -> None:
    target = make_target(fmt)
    spec = WriteSpec(strategy="append", partition_by=("day",), reprocess_date_column="day")
    write_frame(spark, spark.createDataFrame(SEED, SCHEMA), target, spec, CommitStamp("seed", "c"))
    fix = spark.createDataFrame([(20, date(2024, 1, 2)), (21, date(2024, 1, 2))], SCHEMA)
    outcome = write_frame(spark, fix, target, spec, CommitStamp("fix", "c"), reprocess_window=WINDOW)
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 6, 7, 20, 21]
    assert (outcome.rows_inserted, outcome.rows_deleted) == (2, 4)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reprocess_batch_row_outside_the_window_fails_and_writes_nothing(
    spark: Any, make_target: Make, fmt: str
) -> None:
    target = make_target(fmt)
    _seed(spark, target)
    before = read_back(spark, target)
    # the whole source again (an unwindowed read): only day 2 is replaced, days 1 and 3 would be doubled
    batch = spark.createDataFrame(
        [(1, date(2024, 1, 1)), (20, date(2024, 1, 2)), (6, date(2024, 1, 3))], SCHEMA
    )
    spec = WriteSpec(strategy="append", reprocess_date_column="day")
    with pytest.raises(CommitError, match=r"outside the window") as failure:
        write_frame(spark, batch, target, spec, CommitStamp("fix", "c"), reprocess_window=WINDOW)
    assert "day" in failure.value.message and "Nothing was written" in failure.value.message
    assert read_back(spark, target) == before


def test_a_batch_row_with_no_date_is_outside_every_window(spark: Any, make_target: Make) -> None:
    target = make_target("parquet")
    _seed(spark, target)
    batch = spark.createDataFrame([(20, date(2024, 1, 2)), (21, None)], SCHEMA)
    spec = WriteSpec(strategy="append", reprocess_date_column="day")
    with pytest.raises(CommitError, match=r"outside the window"):
        write_frame(spark, batch, target, spec, CommitStamp("fix", "c"), reprocess_window=WINDOW)
    assert sorted(r["id"] for r in read_back(spark, target)) == [r[0] for r in SEED]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reprocess_by_a_text_date_column_replaces_exactly_its_day(
    spark: Any, make_target: Make, fmt: str
) -> None:
    """Bronze keeps dates as text: compared as text, ``'2024-01-03' < '2024-01-03 00:00:00+00:00'`` put the
    next day inside the window, so its rows were deleted and the day's own rows stayed beside the batch."""
    target = make_target(fmt)
    seed = spark.createDataFrame([(i, d.isoformat()) for i, d in SEED], "id int, day string").coalesce(1)
    write_frame(spark, seed, target, WriteSpec(strategy="append"), CommitStamp("seed", "c"))
    fix = spark.createDataFrame([(20, "2024-01-02")], "id int, day string")
    spec = WriteSpec(strategy="append", reprocess_date_column="day")
    outcome = write_frame(spark, fix, target, spec, CommitStamp("fix", "c"), reprocess_window=WINDOW)
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 6, 7, 20]
    assert (outcome.rows_inserted, outcome.rows_deleted) == (1, 4)
