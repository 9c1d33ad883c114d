"""The run report's serialised shape (SEMANTICS §22) — no Spark session needed."""

from __future__ import annotations

import json

from lakelogic.report import Counts, RunReport


def test_quarantine_ratio_is_part_of_every_serialisation_of_the_report() -> None:
    report = RunReport(contract="c", run_id="r", counts=Counts(source=4, good=3, quarantined=1))
    assert report.model_dump()["counts"]["quarantine_ratio"] == 0.25
    assert json.loads(report.model_dump_json())["counts"]["quarantine_ratio"] == 0.25
    assert report.to_json_dict()["counts"]["quarantine_ratio"] == 0.25
    assert Counts().model_dump()["quarantine_ratio"] == 0.0, "no rows: ratio 0, not a division error"


def test_a_dumped_report_validates_again() -> None:
    report = RunReport(contract="c", run_id="r", counts=Counts(source=2, good=1, quarantined=1))
    again = RunReport.model_validate(report.model_dump())
    assert again.counts == report.counts and again.counts.quarantine_ratio == 0.5


def test_model_dump_is_json_serialisable_by_default() -> None:
    """SEMANTICS §22: the report is JSON-serialisable through ``model_dump()`` (timestamps as ISO text)."""
    report = RunReport(contract="c", run_id="r", counts=Counts(source=1, good=1))
    report.finish()
    dumped = report.model_dump()
    assert json.loads(json.dumps(dumped)) == dumped
    assert isinstance(dumped["started_at"], str) and dumped["started_at"].startswith("20")
    assert not isinstance(report.model_dump(mode="python")["started_at"], str)
