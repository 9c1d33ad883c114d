"""Incremental `max_target` windows whose watermark is not plain ISO text (session 31 audit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sources.test_windows import _contract, _target_ids

pytestmark = pytest.mark.spark


def test_a_watermark_in_the_sources_own_timestamp_format_windows_later_runs(
    spark: Any, tmp_path: Path
) -> None:
    """The row filter reads the watermark as enforcement does (the model's type and the source's
    `timestamp_formats`): read as ISO it was NULL, so every run after the first dropped every new row."""
    from lakelogic.api import DataProcessor

    landing, target = tmp_path / "landing", tmp_path / "target"
    landing.mkdir()
    doc = _contract(
        landing, target, watermark_field="updated_at", options={"timestamp_formats": ["dd/MM/yyyy HH:mm"]}
    )
    (landing / "f1.csv").write_text("id,updated_at\n1,01/01/2024 10:00\n")
    one = DataProcessor(doc, spark=spark).run(materialize=True)
    assert one.report.error is None and one.report.watermark.current is not None
    (landing / "f2.csv").write_text("id,updated_at\n2,02/01/2024 10:00\n")
    two = DataProcessor(doc, spark=spark).run(materialize=True)
    assert (two.report.status, two.report.counts.source) == ("succeeded", 1)
    assert _target_ids(target) == [1, 2]


def test_a_target_watermark_that_is_no_date_fails_instead_of_reading_everything_again(
    spark: Any, tmp_path: Path
) -> None:
    """Epoch seconds in a `long` field: the target's maximum read as no date, so every run was a full
    read and an append target held the source twice."""
    from lakelogic.api import DataProcessor

    landing, target = tmp_path / "landing", tmp_path / "target"
    landing.mkdir()
    doc = _contract(landing, target, watermark_field="updated_at")
    doc["model"] = {"fields": [{"name": "id", "type": "integer"}, {"name": "updated_at", "type": "long"}]}
    (landing / "f1.csv").write_text("id,updated_at\n1,1704103200\n")
    assert DataProcessor(doc, spark=spark).run(materialize=True).report.error is None
    again = DataProcessor(doc, spark=spark).run(materialize=True).report
    assert again.status == "failed" and again.error is not None
    assert "are not dates or timestamps" in again.error.message and "1704103200" in again.error.message
    assert _target_ids(target) == [1]


def test_a_target_without_the_watermark_column_is_reported(spark: Any, tmp_path: Path) -> None:
    """The default watermark is the lineage column `_lakelogic_processed_at`; with lineage off the
    target never has it, every run reads the whole source, and the report now says so."""
    from lakelogic.api import DataProcessor

    landing, target = tmp_path / "landing", tmp_path / "target"
    landing.mkdir()
    doc = _contract(landing, target)
    (landing / "f1.csv").write_text("id,updated_at\n1,2024-01-01T10:00:00Z\n")
    first = DataProcessor(doc, spark=spark).run(materialize=True).report
    assert first.window.reason == "no_previous_target_watermark"
    assert not any("max_target watermark" in w for w in first.warnings)
    second = DataProcessor(doc, spark=spark).run(materialize=True).report
    assert second.window.reason == "target_has_no_watermark_column"
    [warning] = [w for w in second.warnings if "max_target watermark" in w]
    assert "'_lakelogic_processed_at'" in warning and "enable lineage" in warning
