"""`source.partition` date-folder listing (SEMANTICS §3.1), as a pure function and through a run."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from lakelogic.errors import PlanError
from lakelogic.sources.date_folders import date_window, in_date_folders

ROOT = "/data/orders"
FILES = [
    f"{ROOT}/y_2024/m_01/d_01/a.json",
    f"{ROOT}/y_2024/m_01/d_05/a.json",
    f"{ROOT}/y_2024/m_01/d_05/b.csv",
    f"{ROOT}/y_2024/m_01/d_09/a.json",
    f"{ROOT}/y_2024/m_01/readme.json",  # not a date folder of the layout
    f"file:{ROOT}/y_2024/m_01/d_07/c.json",
]
FMT = "y_%Y/m_%m/d_%d"


def test_only_date_folders_inside_the_window_are_listed() -> None:
    window = {"format": FMT, "start_date": "2024-01-05", "end_date": "2024-01-07"}
    assert in_date_folders(FILES, ROOT, window, date(2024, 2, 1)) == [FILES[1], FILES[2], FILES[5]]
    patterned = {**window, "file_pattern": "*.json"}
    assert in_date_folders(FILES, ROOT, patterned, date(2024, 2, 1)) == [FILES[1], FILES[5]]


def test_lookback_days_count_back_from_the_as_of_date_and_an_open_start_reads_every_dated_folder() -> None:
    assert date_window({"format": FMT, "lookback_days": 2}, date(2024, 1, 9)) == (
        date(2024, 1, 7),
        date(2024, 1, 9),
    )
    chosen = in_date_folders(FILES, ROOT, {"format": FMT, "lookback_days": 2}, date(2024, 1, 9))
    assert chosen == [FILES[3], FILES[5]]
    every = in_date_folders(FILES, ROOT, {"format": FMT}, date(2024, 1, 6))
    assert every == [FILES[0], FILES[1], FILES[2]]


def test_a_bad_window_date_names_its_key() -> None:
    with pytest.raises(PlanError) as info:
        in_date_folders(FILES, ROOT, {"format": FMT, "start_date": "05/01/2024"}, date(2024, 1, 9))
    assert info.value.yaml_path == "source.partition.start_date"


@pytest.mark.spark
def test_a_run_reads_only_the_date_folders_in_the_window(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    for day, ident in (("01", 1), ("05", 5), ("09", 9)):
        folder = tmp_path / "landing" / "y_2024" / "m_01" / f"d_{day}"
        folder.mkdir(parents=True)
        (folder / "part.json").write_text(f'{{"id": {ident}}}\n')
    doc = {
        "version": "1.0.0",
        "info": {"title": "Dated", "table_name": "dated"},
        "model": {"fields": [{"name": "id", "type": "integer"}]},
        "source": {
            "type": "landing",
            "path": str(tmp_path / "landing"),
            "format": "json",
            "partition": {"format": FMT, "start_date": "2024-01-05", "end_date": "2024-01-05"},
        },
    }
    result = DataProcessor(doc, spark=spark).run()
    assert result.report.error is None
    assert [r["id"] for r in result.good.collect()] == [5]
