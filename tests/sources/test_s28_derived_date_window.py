"""A reprocess of a contract whose date column a pre transformation makes (DRIVER §8, SEMANTICS §13.4).

The read cannot be limited by a column the source does not have, so the window filters the rows right
after the pre transformations; the rows of other dates are counted as filtered and the reprocess replaces
its own dates only. Before, every row went on to the write, which refused the rows outside the window,
and the reprocess failed whenever the source held other dates."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lakelogic.sources.windows import BY_DATE_COLUMN

pytestmark = pytest.mark.spark

REPROCESS = {
    "label": "reprocess",
    "start": datetime(2024, 1, 2, tzinfo=UTC),
    "end": datetime(2024, 1, 3, tzinfo=UTC),
}


def _contract(folder: Path, phase: str = "pre") -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "s28", "target_layer": "silver", "table_name": "s28_derived_day"},
        "source": {"type": "landing", "path": str(folder / "orders.csv"), "format": "csv"},
        "model": {
            "fields": [
                {"name": "id", "type": "int"},
                {"name": "amount", "type": "int"},
                {"name": "order_ts", "type": "timestamp"},
                {"name": "order_date", "type": "date"},
            ]
        },
        "transformations": [{"derive": {"field": "order_date", "sql": "to_date(order_ts)"}, "phase": phase}],
        "quality": {"row_rules": [{"name": "amount_positive", "sql": "amount > 0"}]},
        "materialization": {"strategy": "append", "partition_by": ["order_date"]},
    }


def _orders(folder: Path, amount_of_2: int) -> None:
    rows = (
        "1,10,2024-01-01T08:00:00Z\n"
        f"2,{amount_of_2},2024-01-02T09:00:00Z\n"
        "3,30,2024-01-03T10:00:00Z\n"
        "4,-1,2024-01-03T11:00:00Z\n"  # quarantined on its own day, never by a reprocess of another
        # cast failures quoting their value; no string column carries the message, so these rows are
        # evaluated again: that second evaluation must window them too
        "5,x,2024-01-03T12:00:00Z\n"
        "6,y,2024-01-02T12:00:00Z\n"
    )
    (folder / "orders.csv").write_text("id,amount,order_ts\n" + rows)


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["amount"], str(r["order_date"])) for r in spark.table(table).collect())


def test_a_reprocess_windows_the_rows_by_a_date_column_a_pre_transformation_makes(
    spark: Any, tmp_path: Path
) -> None:
    from lakelogic import DataProcessor

    table = f"lakelogic.tests.s28_{uuid.uuid4().hex[:8]}"
    contract = _contract(tmp_path)
    contract["materialization"]["reprocess_date_column"] = "order_date"
    _orders(tmp_path, 20)
    first = DataProcessor(contract, spark=spark).run(materialize=True, target=table).report
    assert first.error is None and first.counts.quarantined == 3
    _orders(tmp_path, 25)  # the correction of 2024-01-02
    report = DataProcessor(contract, spark=spark).run(materialize=True, target=table, window=REPROCESS).report
    assert report.error is None and report.status == "succeeded", report.error
    assert _rows(spark, table) == [(1, 10, "2024-01-01"), (2, 25, "2024-01-02"), (3, 30, "2024-01-03")]
    counts = report.counts
    assert (counts.source, counts.good, counts.quarantined, counts.filtered) == (6, 1, 1, 4)
    assert counts.reconciles()
    assert report.window.reason == BY_DATE_COLUMN
    assert not any("is not a source column" in w for w in report.warnings)
    mat = report.materialization
    assert mat is not None and (mat.rows_inserted, mat.rows_deleted) == (1, 1)
    assert mat.quarantine_target is not None
    quarantined = spark.table(mat.quarantine_target).where(f"_lakelogic_run_id = '{report.run_id}'")
    assert [r["_lakelogic_errors"] for r in quarantined.collect()] == [
        ['Rule failed: amount_type (cannot cast "y" to integer)', "Rule failed: amount_positive (amount > 0)"]
    ]


def test_a_date_column_made_after_the_split_still_leaves_the_read_unwindowed(
    spark: Any, tmp_path: Path
) -> None:
    """A post transformation runs after the rules: the window cannot apply there, and the report says so."""
    from lakelogic import DataProcessor

    contract = _contract(tmp_path, phase="post")
    _orders(tmp_path, 20)
    report = DataProcessor(contract, spark=spark).run(window=REPROCESS).report
    assert report.error is None and report.counts.source == 6 and report.counts.filtered == 0
    assert any("'order_date' is not a source column" in w for w in report.warnings)
