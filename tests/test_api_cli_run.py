"""``lakelogic run``: exit codes, JSON output on stdout only, staged outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from lakelogic.cli.main import app

CONTRACT = {
    "version": "1.0.0",
    "info": {"title": "Cli run", "table_name": "cli_run"},
    "source": {"type": "landing", "format": "csv"},
    "model": {
        "fields": [{"name": "id", "type": "integer", "required": True}, {"name": "v", "type": "double"}]
    },
    "quality": {"row_rules": [{"name": "v_positive", "sql": "v > 0"}]},
}


@pytest.fixture(autouse=True)
def _private_run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_RUNLOG", str(tmp_path / "runlog.duckdb"))


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_invalid_contract_exits_2(tmp_path: Path) -> None:
    bad = {**CONTRACT, "model": {"fields": [{"name": "id", "type": "strng"}]}}
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, bad))])
    assert result.exit_code == 2


def test_invalid_contract_with_json_prints_a_json_error_on_stdout(tmp_path: Path) -> None:
    bad = {**CONTRACT, "model": {"fields": [{"name": "id", "type": "strng"}]}}
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, bad)), "--json"])
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["error"]["type"] == "contract"
    assert any("model.fields[0].type" in p and "strng" in p for p in payload["error"]["problems"])


def test_set_typo_is_reported_against_the_option_not_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, CONTRACT)
    result = CliRunner().invoke(app, ["run", str(path), "--set", "materialization.stratgy=merge"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "override:--set: materialization.stratgy: unknown key; did you mean 'strategy'?" in text


@pytest.mark.spark
def test_run_json_and_outputs(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("id,v\n1,2.5\n2,-1\n")
    doc = {**CONTRACT, "source": {**CONTRACT["source"], "path": str(data)}}
    good, bad = tmp_path / "good", tmp_path / "bad"
    result = CliRunner().invoke(
        app,
        ["run", str(_write(tmp_path, doc)), "--json", "--output-good", str(good), "--output-bad", str(bad)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "succeeded"
    assert report["counts"]["good"] == 1 and report["counts"]["quarantined"] == 1
    assert spark.read.parquet(str(good)).count() == 1 and spark.read.parquet(str(bad)).count() == 1


@pytest.mark.spark
def test_failed_run_exits_1(spark: Any, tmp_path: Path) -> None:
    doc = {**CONTRACT, "source": {**CONTRACT["source"], "path": str(tmp_path / "missing.csv")}}
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, doc))])
    assert result.exit_code == 1
    assert "Traceback" not in result.output


@pytest.mark.spark
def test_approval_cli_stage_list_approve_and_reject(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lakelogic run --approval-required`` exits 3 with the batch staged; ``approvals`` lists it,
    ``approve`` publishes it, ``reject --yes`` drops another (DRIVER §11, §13)."""
    monkeypatch.setenv("LAKELOGIC_APPROVAL_DIR", str(tmp_path / "approvals"))
    data = tmp_path / "in.csv"
    data.write_text("id,v\n1,2.5\n2,-1\n")
    target = tmp_path / "target"
    doc = {
        **CONTRACT,
        "source": {**CONTRACT["source"], "path": str(data)},
        "materialization": {"strategy": "append", "format": "parquet", "target_path": str(target)},
    }
    path = _write(tmp_path, doc)
    runner = CliRunner()
    staged = runner.invoke(app, ["run", str(path), "--approval-required", "--json"])
    assert staged.exit_code == 3, staged.output
    run_id = json.loads(staged.stdout)["run_id"]
    assert not target.exists()
    listed = runner.invoke(app, ["approvals", "--json"])
    assert listed.exit_code == 0 and [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
    # named twice: one batch (it published, then crashed on the second pass)
    approved = runner.invoke(app, ["approve", "--run-id", run_id, "--run-id", run_id, "--approved-by", "ops"])
    assert approved.exit_code == 0, approved.output
    assert "published 1 staged batch" in approved.stdout
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1]
    again = runner.invoke(app, ["approve", "--run-id", run_id])
    assert again.exit_code == 2 and "no staged batch" in again.output

    other = runner.invoke(app, ["run", str(path), "--approval-required", "--json"])
    assert other.exit_code == 3
    other_id = json.loads(other.stdout)["run_id"]
    refused = runner.invoke(app, ["reject", "--run-id", other_id], input="n\n")
    assert refused.exit_code == 1
    rejected = runner.invoke(app, ["reject", "--run-id", other_id, "--yes"])
    assert rejected.exit_code == 0 and "rejected" in rejected.stdout
    assert json.loads(runner.invoke(app, ["approvals", "--json"]).stdout) == []
    assert spark.read.parquet(str(target)).count() == 1


@pytest.mark.spark
def test_run_records_in_the_run_log_the_contract_names(spark: Any, tmp_path: Path) -> None:
    """DRIVER §15.1: `metadata.run_log_*` (or a system's `storage.run_log`) is where `lakelogic run`
    writes, as the driver and the run's own SLO/alert history read it."""
    from lakelogic.runlog import DuckDBRunLogStore

    data = tmp_path / "in.csv"
    data.write_text("id,v\n1,2.5\n")
    own = tmp_path / "own.duckdb"
    doc = {
        **CONTRACT,
        "source": {**CONTRACT["source"], "path": str(data)},
        "metadata": {"run_log_database": str(own)},
    }
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, doc))])
    assert result.exit_code == 0, result.output
    assert [r["contract"] for r in DuckDBRunLogStore(own).query()] == ["cli_run"]
    default = DuckDBRunLogStore(tmp_path / "runlog.duckdb")
    assert not default.exists() or default.query() == []


@pytest.mark.spark
def test_target_option_materializes_a_contract_without_a_materialization_block(
    spark: Any, tmp_path: Path
) -> None:
    """`--target` was silently ignored when the contract had no `materialization` (exit 0, nothing
    written); it appends there, as `run(materialize=True, target=...)` does."""
    data = tmp_path / "in.csv"
    data.write_text("id,v\n1,2.5\n2,-1\n")
    doc = {**CONTRACT, "source": {**CONTRACT["source"], "path": str(data)}}
    target = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, doc)), "--json", "--target", str(target)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["materialization"]["target"] and report["materialization"]["rows_inserted"] == 1
    skipped = CliRunner().invoke(
        app, ["run", str(_write(tmp_path, doc)), "--json", "--target", str(target), "--no-write"]
    )
    assert skipped.exit_code == 0 and json.loads(skipped.stdout)["materialization"] is None


def test_a_crash_with_the_engines_report_still_prints_and_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.api import DataProcessor
    from lakelogic.report import RunReport

    recorded: list[RunReport] = []

    def crash(self: Any, *args: Any, **kwargs: Any) -> Any:
        report = RunReport(run_id="r-crash", contract="cli_run")
        error = RuntimeError("internal")
        error.__dict__["lakelogic_report"] = report
        raise error

    monkeypatch.setattr(DataProcessor, "run", crash)
    monkeypatch.setattr("lakelogic.cli.run_cmd._record", lambda report, *a, **k: recorded.append(report))
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, CONTRACT)), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["run_id"] == "r-crash"
    assert [r.run_id for r in recorded] == ["r-crash"]


def test_a_crash_without_a_report_still_prints_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lakelogic.api import DataProcessor

    def crash(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(DataProcessor, "run", crash)
    result = CliRunner().invoke(app, ["run", str(_write(tmp_path, CONTRACT)), "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["error"]["type"] == "internal"
    assert "disk on fire" in payload["error"]["message"]


def test_a_contract_that_is_not_utf8_is_a_clean_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(yaml.safe_dump(CONTRACT).replace("Cli run", "Caf\xe9").encode("latin-1"))
    for command in (["validate", str(path)], ["run", str(path), "--json"], ["plan", str(path)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code in (1, 2), result.output  # validate: 1 = invalid; run/plan: 2
        assert "not UTF-8" in result.output and "Traceback" not in result.output
