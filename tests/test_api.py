"""The public API: DataProcessor / RunResult behaviour independent of any particular rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic import DataProcessor, RunResult
from lakelogic.errors import ContractError

DOC = {"version": "1.0.0", "info": {"title": "Api"}, "model": {"fields": [{"name": "id", "type": "integer"}]}}


def test_invalid_contract_raises_at_construction() -> None:
    with pytest.raises(ContractError):
        DataProcessor(
            {
                "version": "1.0.0",
                "info": {"title": "x"},
                "model": {"fields": [{"name": "a", "type": "strng"}]},
            }
        )


def test_run_result_unpacks() -> None:
    from lakelogic.report import RunReport

    result = RunResult("g", "b", RunReport(run_id="r", contract="c"))  # type: ignore[arg-type]
    good, bad = result
    assert (good, bad) == ("g", "b")


@pytest.mark.spark
def test_run_returns_report_and_frames(spark: Any) -> None:
    frame = spark.createDataFrame([(1,), (2,)], "id int")
    result = DataProcessor(DOC, spark=spark).run(frame, run_id="fixed-run", pipeline_run_id="pipe-1")
    assert result.report.run_id == "fixed-run" and result.report.pipeline_run_id == "pipe-1"
    assert result.report.contract == "api" and result.report.status == "succeeded"
    assert result.report.finished_at is not None and result.report.duration_seconds is not None
    assert result.good is not None and result.good.count() == 2
    assert result.report.to_json_dict()["counts"]["quarantine_ratio"] == 0.0


@pytest.mark.spark
def test_user_errors_become_failed_reports(spark: Any, tmp_path: Path) -> None:
    missing = DataProcessor(DOC, spark=spark).run(str(tmp_path / "nope.parquet"))
    assert missing.report.status == "failed"
    assert missing.report.error is not None and missing.report.error.type == "source"
    assert missing.report.error.step == "read" and missing.report.error.traceback


@pytest.mark.spark
def test_bad_rule_sql_is_reported_not_raised(spark: Any) -> None:
    doc = {**DOC, "quality": {"row_rules": [{"name": "r", "sql": "no_such_column > 1"}]}}
    try:
        result = DataProcessor(doc, spark=spark).run(spark.createDataFrame([(1,)], "id int"))
    except Exception as exc:  # noqa: BLE001 - the compiler may reject the unknown column first
        assert "no_such_column" in str(exc)
        return
    assert result.report.status == "failed" and result.report.error is not None
    assert "no_such_column" in result.report.error.message


@pytest.mark.spark
def test_the_active_environment_is_reported_and_picks_its_target(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SEMANTICS §7.3/§22: the active env (``env=``, else LAKELOGIC_ENV) is in the report, and its
    ``environments.<env>.path`` is the target."""
    doc = {
        **DOC,
        "materialization": {"strategy": "append", "format": "parquet"},
        "environments": {
            "dev": {"path": str(tmp_path / "dev"), "format": "parquet"},
            "prod": {"path": str(tmp_path / "prod"), "format": "parquet"},
        },
    }
    frame = spark.createDataFrame([(1,)], "id int")
    monkeypatch.setenv("LAKELOGIC_ENV", "dev")
    by_variable = DataProcessor(doc, spark=spark).run(frame, materialize=True)
    assert by_variable.report.environment == "dev" and (tmp_path / "dev").is_dir()
    explicit = DataProcessor(doc, spark=spark).run(frame, materialize=True, env="prod")
    assert explicit.report.environment == "prod", explicit.report.error
    assert spark.read.parquet(str(tmp_path / "prod")).count() == 1
    monkeypatch.delenv("LAKELOGIC_ENV")
    assert DataProcessor(DOC, spark=spark).run(frame).report.environment is None
    tagged = {**DOC, "metadata": {"environment": "staging"}}  # the identity fallback of §21
    assert DataProcessor(tagged, spark=spark).run(frame).report.environment == "staging"


@pytest.mark.spark
def test_a_contract_inside_a_hierarchy_runs_as_its_effective_contract(spark: Any, tmp_path: Path) -> None:
    """DRIVER §2.4 / SEMANTICS §2, §14: one run resolves _domain.yaml and _system.yaml as the driver does."""
    system = tmp_path / "sales" / "crm"
    (system / "silver").mkdir(parents=True)
    (tmp_path / "sales" / "_domain.yaml").write_text("domain: sales\n")
    (system / "_system.yaml").write_text("system: crm\ndomain: sales\n")
    contract = system / "silver" / "c.yaml"
    contract.write_text(
        "version: 1.0.0\ninfo: {title: Hier}\nlineage: {enabled: true}\n"
        "model: {fields: [{name: id, type: integer}]}\n"
    )
    result = DataProcessor(contract, spark=spark).run(spark.createDataFrame([(1,)], "id int"))
    assert (result.report.domain, result.report.system) == ("sales", "crm"), result.report.error
    row = result.good.first()
    assert (row["_lakelogic_domain"], row["_lakelogic_system"]) == ("sales", "crm")


@pytest.mark.spark
def test_a_target_spark_cannot_write_fails_before_the_source_is_read(spark: Any) -> None:
    """Delta on a catalog table is refused up front (error type unsupported, nothing read), not after the
    run validated every row."""
    doc = {**DOC, "materialization": {"strategy": "merge", "format": "delta", "target_path": "silver.orders"}}
    doc["primary_key"] = ["id"]
    result = DataProcessor(doc, spark=spark).run(spark.createDataFrame([(1,)], "id int"), materialize=True)
    assert result.report.status == "failed" and result.report.error is not None
    assert result.report.error.type == "unsupported" and "catalog table" in result.report.error.message
    assert result.report.counts.source == 0
