"""CLI of the driver layer: lakelogic-driver --dry-run, lakelogic dag / registry / runs (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakelogic.cli.driver_cmd import app as driver_app
from lakelogic.cli.main import app
from lakelogic.report import RunReport
from lakelogic.runlog import DuckDBRunLogStore, record_run
from lakelogic.types import RunStatus
from tests.driver.test_registry import contract, write

runner = CliRunner()


def test_driver_dry_run_lists_nodes_and_writes_nothing(project: Path) -> None:
    db = project / "rl.duckdb"
    result = runner.invoke(
        driver_app, ["--registry", str(project / "c"), "--dry-run", "--run-log-database", str(db)]
    )
    assert result.exit_code == 0, result.output
    assert "bronze.bronze_orders" in result.output and "silver.silver_orders" in result.output
    assert not db.exists()


def test_driver_dry_run_unscheduled_upstream_is_skipped(project: Path) -> None:
    result = runner.invoke(
        driver_app,
        ["--registry", str(project / "c"), "--dry-run", "--layers", "silver", "--run-log-database",
         str(project / "rl.duckdb")],
    )  # fmt: skip
    assert result.exit_code == 0
    assert "missing_upstream" in result.output


def test_driver_configuration_error_exits_2(project: Path) -> None:
    contract(project, "c/silver/x.yaml", "silver_x", "silver", "upstream: [ghost]\n")
    write(project / "c" / "_registry.yaml", """\
    version: 1
    entries:
      - {entity: x, contract_path: silver/x.yaml}
    """)  # fmt: skip
    result = runner.invoke(driver_app, ["--registry", str(project / "c"), "--dry-run"])
    assert result.exit_code == 2
    assert "unknown upstream 'ghost'" in result.output


def test_dag_formats(project: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["dag", "--registry", str(project / "c"), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["edges"] == [
        {"from": "bronze.bronze_orders", "to": "silver.silver_orders", "critical": True, "implicit": False}
    ]
    out = tmp_path / "dag.html"
    db = tmp_path / "rl.duckdb"
    report = RunReport(run_id="r1", pipeline_run_id="p9", contract="silver_orders", layer="silver",
                       status=RunStatus.FAILED)  # fmt: skip
    record_run(report, store=DuckDBRunLogStore(db))
    args = ["dag", "--registry", str(project / "c"), "--format", "html", "--output", str(out)]
    result = runner.invoke(app, [*args, "--pipeline-run-id", "p9", "--run-log-database", str(db)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "silver.silver_orders [failed]" in page and "#c62828" in page
    mermaid = runner.invoke(app, ["dag", "--registry", str(project / "c"), "--format", "mermaid"]).output
    assert "bronze__bronze_orders --> silver__silver_orders" in mermaid


def test_registry_validate_and_explain(project: Path) -> None:
    ok = runner.invoke(app, ["registry", "validate", str(project / "c")])
    assert ok.exit_code == 0 and "2 contracts" in ok.output
    explained = runner.invoke(
        app, ["registry", "explain", str(project / "c/silver/s.yaml"), "--key", "upstream", "--json"]
    )
    assert explained.exit_code == 0, explained.output
    leaves = json.loads(explained.output)["leaves"]
    assert leaves == [
        {"path": "upstream", "value": ["bronze_orders"], "origin": f"contract:{project / 'c/silver/s.yaml'}",
         "how": "declared"}
    ]  # fmt: skip


def test_dag_json_keeps_to_the_selected_layers(project: Path) -> None:
    args = ["dag", "--registry", str(project / "c"), "--format", "json", "--layers", "bronze"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [n["id"] for n in data["nodes"]] == ["bronze.bronze_orders"]
    assert data["edges"] == [] and [entry["layer"] for entry in data["layers"]] == ["bronze"]


def test_runs_lists_and_filters(tmp_path: Path) -> None:
    db = tmp_path / "rl.duckdb"
    store = DuckDBRunLogStore(db)
    record_run(RunReport(run_id="a", contract="x", status=RunStatus.SUCCEEDED), store=store)
    record_run(RunReport(run_id="b", contract="y", status=RunStatus.FAILED), store=store)
    result = runner.invoke(app, ["runs", "--status", "failed", "--json", "--run-log-database", str(db)])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["run_id"] for r in rows] == ["b"] and rows[0]["report"]["contract"] == "y"
    table = runner.invoke(app, ["runs", "--run-log-database", str(db)])
    assert "x" in table.output and "failed" in table.output


def test_runs_of_a_contract_file_come_from_the_run_log_it_names(project: Path, tmp_path: Path) -> None:
    own = tmp_path / "own.duckdb"
    path = contract(
        project, "e/bronze/a.yaml", "bronze_a", "bronze", f"metadata: {{run_log_database: '{own}'}}\n"
    )
    record_run(
        RunReport(run_id="mine", contract="bronze_a", status=RunStatus.SUCCEEDED),
        store=DuckDBRunLogStore(own),
    )
    other = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    record_run(RunReport(run_id="elsewhere", contract="bronze_a", status=RunStatus.FAILED), store=other)
    args = ["runs", "--contract-file", str(path), "--json", "--run-log-database", str(tmp_path / "rl.duckdb")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [r["run_id"] for r in json.loads(result.output)] == ["mine"]


def test_runs_say_when_rows_are_cut_and_list_a_whole_pipeline_run(tmp_path: Path) -> None:
    db = tmp_path / "rl.duckdb"
    store = DuckDBRunLogStore(db)
    for i in range(22):
        report = RunReport(run_id=f"r{i}", pipeline_run_id="p", contract=f"c{i}", status=RunStatus.SUCCEEDED)
        record_run(report, store=store)
    table = runner.invoke(app, ["runs", "--run-log-database", str(db)])
    assert "the newest 20 rows; more match" in table.output
    whole = runner.invoke(app, ["runs", "--pipeline-run-id", "p", "--json", "--run-log-database", str(db)])
    assert len(json.loads(whole.stdout)) == 22
    few = runner.invoke(app, ["runs", "--last", "30", "--run-log-database", str(db)])
    assert "more match" not in few.output


def test_registry_validate_strict_fails_on_warnings(project: Path) -> None:
    reg = project / "c" / "_registry.yaml"
    reg.write_text(
        reg.read_text().replace("  - entity: orders\n", "  - entity: orders\n    enabled: false\n")
    )
    lenient = runner.invoke(app, ["registry", "validate", str(project / "c")])
    assert (
        lenient.exit_code == 0
        and "bronze.bronze_orders is disabled but silver.silver_orders" in lenient.output
    )
    assert runner.invoke(app, ["registry", "validate", "--strict", str(project / "c")]).exit_code == 1


def test_dag_statuses_come_from_the_run_log_each_contract_names(project: Path, tmp_path: Path) -> None:
    own = tmp_path / "own.duckdb"
    contract(project, "d/bronze/a.yaml", "bronze_a", "bronze", f"metadata: {{run_log_database: '{own}'}}\n")
    contract(project, "d/bronze/b.yaml", "bronze_b", "bronze")
    write(project / "d" / "_registry.yaml", """\
    version: 1
    entries:
      - {entity: a, contract_path: bronze/a.yaml}
      - {entity: b, contract_path: bronze/b.yaml}
    """)  # fmt: skip
    pipeline_db = tmp_path / "rl.duckdb"
    for name, store in (("bronze_a", own), ("bronze_b", pipeline_db)):
        report = RunReport(run_id=f"r-{name}", pipeline_run_id="p1", contract=name, layer="bronze",
                           status=RunStatus.SUCCEEDED)  # fmt: skip
        record_run(report, store=DuckDBRunLogStore(store))
    args = ["dag", "--registry", str(project / "d"), "--format", "json", "--pipeline-run-id", "p1"]
    result = runner.invoke(app, [*args, "--run-log-database", str(pipeline_db)])
    assert result.exit_code == 0, result.output
    nodes = {n["id"]: n.get("status") for n in json.loads(result.output)["nodes"]}
    assert nodes == {"bronze.bronze_a": "succeeded", "bronze.bronze_b": "succeeded"}


def test_a_reset_keeps_to_the_selection_flags(project: Path) -> None:
    args = ["--registry", str(project / "c"), "--dry-run", "--run-log-database", str(project / "rl.duckdb")]
    result = runner.invoke(driver_app, [*args, "--reset-entities", "orders", "--layers", "silver"])
    assert result.exit_code == 0, result.output
    [line] = [x for x in result.output.splitlines() if "would reset" in x]
    assert line == "dry run: would reset silver.silver_orders"
    whole = runner.invoke(driver_app, [*args, "--reset-entities", "orders"])
    assert "would reset bronze.bronze_orders, silver.silver_orders" in whole.output


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--engine", "polars"], "--engine 'polars'"),
        (["--metrics-backend", "bogus"], "--metrics-backend 'bogus'"),
        (["--summary-table", "bad-name!"], "--summary-table 'bad-name!'"),
        (["--resume", "--state-path", "missing.json"], "no state file"),
    ],
)
def test_flags_a_run_would_trip_over_later_fail_a_dry_run_and_a_reset_first(
    project: Path, flags: list[str], named: str
) -> None:
    """§5: any flag problem is exit 2 before anything runs; a reset must not empty tables first."""
    args = ["--registry", str(project / "c"), "--run-log-database", str(project / "rl.duckdb")]
    result = runner.invoke(driver_app, [*args, "--dry-run", *flags])
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split())
    reset = runner.invoke(driver_app, [*args, "--reset-entities", "orders", "--yes", *flags])
    assert reset.exit_code == 2 and "reset bronze" not in reset.output


def test_a_backfill_dry_run_shows_its_first_window(project: Path) -> None:
    args = ["--registry", str(project / "c"), "--dry-run", "--run-log-database", str(project / "rl.duckdb")]
    flags = ["--backfill-start-date", "2024-01-01", "--backfill-end-date", "2024-01-03"]
    result = runner.invoke(driver_app, [*args, *flags])
    assert result.exit_code == 0, result.output
    assert "backfill of 3 window(s); the first, backfill_20240101" in result.output
    assert (
        "backfill_20240101" in result.output.split("the first")[1]
        and "no_previous_success" not in result.output
    )
    reset_only = runner.invoke(driver_app, [*args, "--reset-entities", "orders"])
    assert reset_only.exit_code == 0 and "would reset" in reset_only.output
    assert "what would run" not in reset_only.output  # a reset without reload runs nothing


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--window-start-date", "2024-01-01", "--window-end-date", "2024-01-03"], "need --window range"),
        (["--window", "yesterday", "--window-start-date", "2024-01-01"], "need --window range"),
        (["--reprocess-date", "2024-01-01", "--window", "range"], "chooses the window itself"),
        (
            ["--reprocess-date", "2024-01-01", "--reprocess-start-date", "2024-01-01"],
            "not both",
        ),
        (
            [
                "--reprocess-date",
                "2024-01-01",
                "--backfill-start-date",
                "2024-01-01",
                "--backfill-end-date",
                "2024-01-02",
            ],
            "runs its own windows",
        ),
    ],
)
def test_window_flags_no_mode_reads_are_configuration_errors(
    project: Path, flags: list[str], said: str
) -> None:
    """DRIVER §5/§8: a date no window mode reads was silently dropped (the run read a full window)."""
    contract(project, "c/silver/x.yaml", "silver_x", "silver", "")
    write(project / "c" / "_registry.yaml", """\
    version: 1
    entries:
      - {entity: x, contract_path: silver/x.yaml}
    """)  # fmt: skip
    result = runner.invoke(driver_app, ["--registry", str(project / "c"), "--dry-run", *flags])
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split())


def test_runs_and_dag_report_bad_run_logs_and_outputs_without_a_traceback(
    project: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "not-duckdb.duckdb"
    bad.write_text("garbage")
    result = runner.invoke(app, ["runs", "--run-log-database", str(bad)])
    assert result.exit_code == 2 and "cannot be opened as a DuckDB database" in " ".join(
        result.output.split()
    )
    assert runner.invoke(app, ["runs", "--run-log-backend", "bogus"]).exit_code == 2
    contract(project, "c/silver/x.yaml", "silver_x", "silver", "")
    write(project / "c" / "_registry.yaml", """\
    version: 1
    entries:
      - {entity: x, contract_path: silver/x.yaml}
    """)  # fmt: skip
    out = tmp_path / "new" / "dir" / "dag.txt"
    drawn = runner.invoke(app, ["dag", "--registry", str(project / "c"), "--output", str(out)])
    assert drawn.exit_code == 0 and out.exists()
