"""The materialization line of `lakelogic run`'s summary (issue: target, strategy, rows, the commit made)."""

from __future__ import annotations

from lakelogic.cli.run_cmd import materialization_line
from lakelogic.report import MaterializationInfo


def _info(**values: object) -> MaterializationInfo:
    base: dict[str, object] = {"target": "lakelogic.silver.customers", "format": "iceberg"}
    base["strategy"] = "scd2"
    return MaterializationInfo.model_validate(base | values)


def test_a_commit_shows_counts_closed_versions_snapshot_and_quarantine() -> None:
    line = materialization_line(
        _info(
            committed=True,
            snapshot="8812",
            rows_inserted=3,
            rows_updated=1,
            versions_closed=1,
            quarantine_target="lakelogic.quarantine.customers",
            quarantine_rows_written=2,
        )
    )
    assert line == (
        "materialized lakelogic.silver.customers (iceberg, scd2): inserted 3, updated 1, deleted 0, "
        "versions closed 1; committed snapshot 8812; quarantine lakelogic.quarantine.customers (2 rows)"
    )


def test_no_change_and_an_earlier_commit_say_why_nothing_was_written() -> None:
    unchanged = materialization_line(_info(strategy="merge"))
    assert unchanged.endswith("inserted 0, updated 0, deleted 0; nothing to commit")
    resumed = materialization_line(_info(strategy="append", already_committed=True, committed=True))
    assert "already committed (by this run before" in resumed
    assert "versions closed" not in resumed


def test_the_summary_shows_every_service_level_and_its_outcome() -> None:
    from rich.console import Console

    from lakelogic.cli.run_cmd import render_summary
    from lakelogic.report import RunReport, ServiceLevelResult

    report = RunReport(run_id="r", contract="orders")
    report.service_levels = [
        ServiceLevelResult(objective="row_count", passed=False, observed=2, threshold={"min_rows": 100}),
        ServiceLevelResult(objective="freshness", passed=None, observed=None, threshold=3600),
    ]
    console = Console(record=True, width=200)
    render_summary(report, console)
    text = console.export_text()
    assert "service levels" in text
    assert "row_count" in text and "no" in text and "{'min_rows': 100}" in text
    assert "freshness" in text and "not measured" in text
