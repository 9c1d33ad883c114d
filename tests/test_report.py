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
