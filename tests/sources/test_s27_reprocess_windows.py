"""Explicit windows on ``full`` contracts (DRIVER §8, SEMANTICS §3.4, §13.4).

A ``full`` contract reads everything, except under an explicit window (range, yesterday, backfill,
reprocess) when it has a column to window its rows by: ``watermark_field``, else its date column
(``materialization.reprocess_date_column``, else the first ``partition_by``). The batch is then the
window's rows only, so the report counts them alone and a reprocess replaces the window's slice of the
target without appending the other dates again.

The read step carries the date column (``ReadSource.reprocess_date_column``). A column the model does
not declare a date or timestamp holds no dates to window by (a region partition): such a contract
reads everything, as before.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lakelogic.sources.windows import BY_DATE_COLUMN, WINDOW_NOT_APPLICABLE, ReadWindow, decide

DAY = datetime(2024, 1, 2, tzinfo=UTC)
NEXT = datetime(2024, 1, 3, tzinfo=UTC)


@pytest.mark.parametrize("label", ["reprocess", "range", "yesterday", "backfill_20240102"])
def test_an_explicit_window_filters_a_full_contract_by_its_date_column(label: str) -> None:
    decision = decide(
        ["/l/orders.csv"],
        ReadWindow(label, DAY, NEXT),
        load_mode="full",
        watermark_field=None,
        date_column="order_date",
    )
    assert decision.files == ["/l/orders.csv"] and decision.reason is None
    assert decision.basis == BY_DATE_COLUMN and decision.applied
    rows = decision.row_window
    assert rows is not None and (rows.field, rows.start, rows.end) == ("order_date", DAY, NEXT)
    assert decision.watermark is None  # a date column filters rows but is no cursor


def test_watermark_field_wins_over_the_date_column() -> None:
    window = ReadWindow("reprocess", DAY, NEXT)
    decision = decide([], window, load_mode="full", watermark_field="updated_at", date_column="order_date")
    assert decision.row_window is not None and decision.row_window.field == "updated_at"
    assert decision.watermark is decision.row_window


def test_the_date_column_applies_to_full_contracts_under_explicit_windows_only(tmp_path: Path) -> None:
    listed = ["/l/orders.csv"]
    regular = decide(
        listed, ReadWindow("incremental", DAY, NEXT), load_mode="full", watermark_field=None, date_column="d"
    )
    assert regular.reason == WINDOW_NOT_APPLICABLE and regular.row_window is None
    without = decide(listed, ReadWindow("reprocess", DAY, NEXT), load_mode="full", watermark_field=None)
    assert without.reason == WINDOW_NOT_APPLICABLE and without.row_window is None
    # incremental contracts keep selecting their files by the date in the name under range windows ...
    named = str(tmp_path / "orders_2024-01-02.csv")
    other = str(tmp_path / "orders_2024-01-05.csv")
    for path in (named, other):
        Path(path).write_text("id\n1\n")
    ranged = ReadWindow("range", DAY, NEXT)
    files = decide([named, other], ranged, load_mode="incremental", watermark_field=None, date_column="d")
    assert files.files == [named] and files.row_window is None and files.basis == "file_name_date"
    # ... but a reprocess takes its dates' rows from every file (a late row sits in a later day's file),
    # so the write, which refuses rows outside the window, gets exactly them
    window = ReadWindow("reprocess", DAY, NEXT)
    rows = decide([named, other], window, load_mode="incremental", watermark_field=None, date_column="d")
    assert rows.files == [named, other] and rows.basis == BY_DATE_COLUMN
    assert rows.row_window is not None and rows.row_window.field == "d" and rows.watermark is None


def test_only_a_column_the_model_declares_a_date_or_timestamp_windows_the_rows() -> None:
    from types import SimpleNamespace

    from lakelogic.engines.spark.sources_read import window_date_column
    from lakelogic.types import LogicalType

    types = {
        "order_date": LogicalType("date"),
        "loaded_at": LogicalType("timestamp"),
        "region": LogicalType("string"),
        "day_key": LogicalType("integer"),
    }
    for column, expected in [
        ("order_date", "order_date"),
        ("loaded_at", "loaded_at"),
        ("region", None),
        ("day_key", None),
        ("undeclared", None),
    ]:
        step: Any = SimpleNamespace(reprocess_date_column=column)
        assert window_date_column(step, types) == expected


# --- through the API ---------------------------------------------------------------------------------


def _contract(folder: Path, table: str) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "s27", "target_layer": "silver", "table_name": table},
        "source": {"type": "landing", "path": str(folder / "orders.csv"), "format": "csv"},
        "model": {
            "fields": [
                {"name": "id", "type": "int"},
                {"name": "amount", "type": "int"},
                {"name": "order_date", "type": "date"},
            ]
        },
        "materialization": {"strategy": "append", "partition_by": ["order_date"]},
    }


def _orders(folder: Path, amount_of_2: int) -> None:
    rows = f"1,10,2024-01-01\n2,{amount_of_2},2024-01-02\n3,30,2024-01-03\n"
    (folder / "orders.csv").write_text("id,amount,order_date\n" + rows)


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["amount"], str(r["order_date"])) for r in spark.table(table).collect())


REPROCESS = {"label": "reprocess", "start": DAY, "end": NEXT}
FIXED = [(1, 10, "2024-01-01"), (2, 25, "2024-01-02"), (3, 30, "2024-01-03")]


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["file", "dataframe"])
def test_a_reprocess_of_a_full_contract_replaces_only_its_dates(
    spark: Any, tmp_path: Path, kind: str
) -> None:
    from lakelogic import DataProcessor

    table = f"lakelogic.tests.s27_{uuid.uuid4().hex[:8]}"
    contract = _contract(tmp_path, table)
    _orders(tmp_path, 20)
    assert DataProcessor(contract, spark=spark).run(materialize=True, target=table).report.error is None
    _orders(tmp_path, 25)  # the correction of 2024-01-02
    source = None
    if kind == "dataframe":
        source = spark.read.option("header", True).csv(str(tmp_path / "orders.csv"))
    report = (
        DataProcessor(contract, spark=spark)
        .run(source, materialize=True, target=table, window=REPROCESS)
        .report
    )
    assert report.error is None and report.status == "succeeded"
    assert _rows(spark, table) == FIXED
    assert (report.counts.source, report.counts.good) == (1, 1)  # the window's rows only
    assert report.window.reason == BY_DATE_COLUMN and report.watermark.field is None
    mat = report.materialization
    assert mat is not None and (mat.rows_inserted, mat.rows_deleted) == (1, 1)


@pytest.mark.spark
def test_a_reprocess_never_appends_the_dates_outside_its_window_again(spark: Any, tmp_path: Path) -> None:
    """Whatever the read takes, the dates outside the window keep exactly their rows."""
    from lakelogic import DataProcessor

    table = f"lakelogic.tests.s27_{uuid.uuid4().hex[:8]}"
    contract = _contract(tmp_path, table)
    _orders(tmp_path, 20)
    assert DataProcessor(contract, spark=spark).run(materialize=True, target=table).report.error is None
    _orders(tmp_path, 25)
    report = DataProcessor(contract, spark=spark).run(materialize=True, target=table, window=REPROCESS).report
    rows = _rows(spark, table)
    assert [r for r in rows if r[2] != "2024-01-02"] == [(1, 10, "2024-01-01"), (3, 30, "2024-01-03")]
    if report.error is None:  # the read was limited to the window
        assert rows == FIXED
    else:  # the batch held other dates: refused, nothing written
        assert report.error.type == "commit" and "outside the window" in report.error.message
        assert rows == [(1, 10, "2024-01-01"), (2, 20, "2024-01-02"), (3, 30, "2024-01-03")]


@pytest.mark.spark
def test_a_date_column_the_source_lacks_leaves_the_read_unwindowed(spark: Any, tmp_path: Path) -> None:
    """A column a transformation makes cannot limit the read: the window is not applied, and said so."""
    from lakelogic import DataProcessor

    _orders(tmp_path, 20)
    contract = _contract(tmp_path, "s27_lacks")
    contract["model"]["fields"].append({"name": "order_day", "type": "date"})
    contract["materialization"]["reprocess_date_column"] = "order_day"
    report = DataProcessor(contract, spark=spark).run(window=REPROCESS).report
    assert report.error is None and report.counts.source == 3
    assert report.window.reason == WINDOW_NOT_APPLICABLE
    assert any("'order_day' is not a source column" in w for w in report.warnings)


@pytest.mark.spark
def test_the_date_column_is_read_with_the_sources_date_formats(spark: Any, tmp_path: Path) -> None:
    """The filter read the column only as ISO text, so `02/01/2024` under `date_formats: [dd/MM/yyyy]` was
    NULL and a range window read nothing (empty source)."""
    from lakelogic import DataProcessor

    (tmp_path / "orders.csv").write_text(
        "id,amount,order_date\n1,10,01/01/2024\n2,20,02/01/2024\n3,30,03/01/2024\n"
    )
    contract = _contract(tmp_path, "s27_formats")
    contract["source"]["options"] = {"date_formats": ["dd/MM/yyyy"]}
    ranged = {"label": "range", "start": DAY, "end": NEXT}
    result = DataProcessor(contract, spark=spark).run(window=ranged)
    assert result.report.status == "succeeded", result.report.error
    assert [(r["id"], str(r["order_date"])) for r in result.good.collect()] == [(2, "2024-01-02")]
