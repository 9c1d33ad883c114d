"""A pipeline's window over LakeLogic's own stamp is ``(start, end]`` when it ends at the pipeline's ``as_of``
(``ReadWindow.stamped_end``); every other row window stays ``[start, end)``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lakelogic.sources.windows import PROCESSED_AT, ReadWindow, RowWindow, decide

START = datetime(2024, 3, 2, tzinfo=UTC)
END = datetime(2024, 3, 4, tzinfo=UTC)


def test_only_the_processed_at_stamp_of_a_stamped_window_is_start_exclusive_and_end_inclusive() -> None:
    stamped = ReadWindow("incremental", START, END, stamped_end=True)
    assert RowWindow.watermark(PROCESSED_AT, stamped) == RowWindow(
        PROCESSED_AT, START, END, start_exclusive=True, end_inclusive=True
    )
    # a business watermark may still receive rows at the end instant: it keeps [start, end)
    assert RowWindow.watermark("updated_at", stamped) == RowWindow("updated_at", START, END)
    plain = ReadWindow("incremental", START, END)
    assert RowWindow.watermark(PROCESSED_AT, plain) == RowWindow(PROCESSED_AT, START, END)
    decision = decide([], stamped, load_mode="incremental", watermark_field=PROCESSED_AT)
    assert decision.row_window is not None and decision.row_window.end_inclusive


@pytest.mark.spark
@pytest.mark.parametrize(("as_of", "expected"), [(END, [2, 3]), (None, [1, 2])])
def test_a_run_at_the_pipelines_as_of_reads_its_stamp_as_start_exclusive_end_inclusive(
    spark: Any, as_of: datetime | None, expected: list[int]
) -> None:
    from lakelogic.api import DataProcessor

    name = "default.s28_stamped_table_source"
    rows = [(1, START), (2, START + timedelta(hours=5)), (3, END), (4, END + timedelta(seconds=1))]
    spark.createDataFrame(rows, f"id int, {PROCESSED_AT} timestamp").write.mode("overwrite").saveAsTable(name)
    try:
        contract = {
            "version": "1.0.0",
            "info": {"title": "Stamped", "table_name": "s28_stamped"},
            "source": {"type": "table", "path": name, "load_mode": "incremental"},
            "model": {"fields": [{"name": "id", "type": "integer"}]},
            "lineage": {"enabled": True},
        }
        window = ReadWindow("incremental", START, END)
        result = DataProcessor(contract, spark=spark).run(window=window, as_of=as_of)
        assert result.report.status == "succeeded", result.report.error
        assert result.good is not None
        got = result.good.select("id", PROCESSED_AT).collect()
        assert sorted(r["id"] for r in got) == expected
        if as_of is not None:  # the run's clock is the pipeline's: its rows carry that stamp
            assert {r[PROCESSED_AT].astimezone(UTC) for r in got} == {as_of}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
