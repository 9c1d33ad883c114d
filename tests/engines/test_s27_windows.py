"""A driver's last_success window with the contract's `lookback` (SEMANTICS §3.4, DRIVER §8)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from tests.engines.helpers import contract, rows_of

pytestmark = pytest.mark.spark

START = datetime(2026, 3, 10, tzinfo=UTC)
END = datetime(2026, 3, 11, tzinfo=UTC)


def _doc(**source: Any) -> dict[str, Any]:
    fields = [{"name": "id", "type": "integer"}, {"name": "event_ts", "type": "timestamp"}]
    return contract(
        fields,
        source={"type": "landing", "load_mode": "incremental", "watermark_field": "event_ts", **source},
    )


@pytest.mark.parametrize(("lookback", "expected"), [(None, [(2,)]), ("2 days", [(1,), (2,)])])
def test_a_last_success_window_moves_back_by_the_lookback(
    spark: Any, lookback: str | None, expected: list[tuple[int]]
) -> None:
    """The driver's window started at the last run's end, so a row arriving late with an earlier
    watermark was never read, lookback or not."""
    frame = spark.createDataFrame(
        [(1, "2026-03-09T12:00:00Z"), (2, "2026-03-10T12:00:00Z"), (3, "2026-03-11T12:00:00Z")],
        "id int, event_ts string",
    )
    window = {"label": "incremental", "start": START, "end": END, "reason": "last_success"}
    doc = _doc(**({"lookback": lookback} if lookback else {}))
    result = DataProcessor(doc, spark=spark).run(frame, window=window)
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id") == expected


def test_explicit_windows_ignore_the_lookback(spark: Any) -> None:
    """A range/backfill window selects by business date exactly (DRIVER §8)."""
    frame = spark.createDataFrame(
        [(1, "2026-03-09T12:00:00Z"), (2, "2026-03-10T12:00:00Z")], "id int, event_ts string"
    )
    window = {"label": "range", "start": START, "end": END}
    result = DataProcessor(_doc(lookback="2 days"), spark=spark).run(frame, window=window)
    assert rows_of(result.good, "id") == [(2,)]


def test_a_date_range_strategy_selects_files_by_the_date_in_their_name(spark: Any, tmp_path: Path) -> None:
    """`watermark_strategy: date_range` is a business-date range; it selected files by modification time
    (all of them landed today), so the run read nothing."""
    landing = tmp_path / "landing"
    landing.mkdir()
    for day in (1, 2, 3, 4):
        (landing / f"events_2024-01-0{day}.csv").write_text(f"id,event_ts\n{day},2024-01-0{day}T08:00:00Z\n")
    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "event_ts", "type": "timestamp"}],
        source={
            "type": "landing",
            "path": str(landing),
            "format": "csv",
            "load_mode": "incremental",
            "watermark_strategy": "date_range",
            "from_date": "2024-01-02",
            "to_date": "2024-01-03",
        },
    )
    result = DataProcessor(doc, spark=spark).run()
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id") == [(2,), (3,)]
    assert [Path(f).name for f in result.report.source.files] == [
        "events_2024-01-02.csv",
        "events_2024-01-03.csv",
    ]


def test_a_lookback_leaves_windows_of_files_by_arrival_alone() -> None:
    """Without `watermark_field` the files go by arrival time, so a late file is read anyway; moving the
    bound back would only append earlier files again."""
    from lakelogic.engines.spark.source_bounds import with_lookback
    from lakelogic.plan.steps import ReadSource
    from lakelogic.sources.windows import ReadWindow

    step = ReadSource(yaml_path="source", source_type="landing", path=None, format=None,
                      load_mode="incremental", settings={"lookback": "2 days"})  # fmt: skip
    window = ReadWindow("incremental", START, END, reason="last_success")
    assert with_lookback(None, step, window) is window  # type: ignore[arg-type]
