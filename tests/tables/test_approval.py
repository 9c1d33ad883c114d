"""Approval gates on Spark (DRIVER §11): stage instead of publish, then approve or reject."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from lakelogic import DataProcessor, api
from lakelogic.errors import ApprovalError
from lakelogic.runlog import open_store
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import read_back

pytestmark = pytest.mark.spark

SCHEMA = "id int, v string"


def contract(**metadata: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "approved orders", "table_name": "approved_orders", "target_layer": "silver"},
        "model": {
            "fields": [{"name": "id", "type": "integer", "required": True}, {"name": "v", "type": "string"}]
        },
        "primary_key": ["id"],
        "quality": {"row_rules": [{"name": "v_ok", "sql": "v <> 'bad'"}]},
        "materialization": {"strategy": "merge", "format": "delta"},
        "metadata": {"approval_required": True, **metadata},
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LAKELOGIC_APPROVAL_DIR", str(tmp_path / "approvals"))
    return tmp_path


def _targets(home: Path) -> tuple[ResolvedTarget, ResolvedTarget]:
    target = ResolvedTarget("path", str(home / "silver" / "orders"), "delta")
    quarantine = ResolvedTarget("path", str(home / "silver" / "_quarantine" / "orders"), "delta")
    return target, quarantine


def _row(home: Path, run_id: str) -> dict[str, Any] | None:
    return open_store(home / "home" / "lakelogic.duckdb").get(run_id)


def test_triggered_batch_is_staged_then_published_once(spark: Any, home: Path) -> None:
    target, quarantine = _targets(home)
    batch = spark.createDataFrame([(1, "a"), (2, "bad"), (3, "c")], SCHEMA)
    report = DataProcessor(contract(), spark=spark).run(batch, materialize=True, target=target.name).report

    assert report.status == "awaiting_approval"
    assert report.approval is not None and report.approval.decision == "staged"
    assert report.approval.reasons == ["quarantine_ratio:0.3333>0.05"]
    assert report.approval.staged_status == "succeeded"
    assert not Path(target.name).exists() and not Path(quarantine.name).exists()  # readers see nothing
    row = _row(home, report.run_id)
    assert row is not None and row["status"] == "awaiting_approval" and row["committed"] is False
    [staged] = api.awaiting_approval(spark=spark)
    assert staged.run_id == report.run_id and "approved_orders" in staged.names

    [published] = api.approve(run_ids=[report.run_id], approved_by="alice", spark=spark)
    assert published.status == "succeeded" and published.run_id == report.run_id
    assert published.materialization is not None and published.materialization.rows_inserted == 2
    assert sorted(r["id"] for r in read_back(spark, target)) == [1, 3]
    assert [r["id"] for r in read_back(spark, quarantine)] == [2]
    row = _row(home, report.run_id)
    assert row is not None and row["status"] == "succeeded" and row["approved_by"] == "alice"
    assert row["committed"] is True and row["counts_quarantined"] == 1
    assert api.awaiting_approval(spark=spark) == []
    with pytest.raises(ApprovalError, match="has no staged batch"):
        api.approve(run_ids=[report.run_id], spark=spark)


def test_publish_after_a_crash_before_cleanup_writes_nothing_twice(spark: Any, home: Path) -> None:
    target, quarantine = _targets(home)
    batch = spark.createDataFrame([(1, "a"), (2, "bad")], SCHEMA)
    report = DataProcessor(contract(), spark=spark).run(batch, materialize=True, target=target.name).report
    [staged] = api.awaiting_approval(spark=spark)
    kept = home / "copy"
    shutil.copytree(staged.path, kept)
    api.approve(run_ids=[report.run_id], spark=spark)
    shutil.copytree(kept, staged.path)  # as if the approver crashed after the commits, before the cleanup

    [again] = api.approve(run_ids=[report.run_id], spark=spark)
    assert again.materialization is not None and again.materialization.already_committed
    assert [r["id"] for r in read_back(spark, target)] == [1]
    assert [r["id"] for r in read_back(spark, quarantine)] == [2]


def test_approval_file_publishes_at_once_and_records_the_approver(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    approval = home / "approval.yaml"
    approval.write_text("approved_by: bob\ncontracts: [approved_orders]\n")
    batch = spark.createDataFrame([(1, "bad"), (2, "b")], SCHEMA)
    report = (
        DataProcessor(contract(), spark=spark)
        .run(batch, materialize=True, target=target.name, approval_file=approval)
        .report
    )
    assert report.status == "succeeded"
    assert report.approval is not None and report.approval.decision == "approved"
    assert report.approval.approved_by == "bob" and report.approval.approval_file == str(approval)
    assert [r["id"] for r in read_back(spark, target)] == [2]
    row = _row(home, report.run_id)
    assert row is not None and row["approved_by"] == "bob"


def test_below_the_threshold_publishes_without_approval(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    batch = spark.createDataFrame([(i, "bad" if i == 0 else "x") for i in range(10)], SCHEMA)
    processor = DataProcessor(contract(approval_quarantine_ratio_threshold=0.2), spark=spark)
    report = processor.run(batch, materialize=True, target=target.name).report
    assert report.status == "succeeded"
    assert report.approval is not None and report.approval.decision == "not_triggered"
    assert len(read_back(spark, target)) == 9


def test_schema_drift_against_the_target_triggers(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    first = contract(approval_required=False)
    DataProcessor(first, spark=spark).run(spark.createDataFrame([(1, "a")], SCHEMA), materialize=True,
                                          target=target.name)  # fmt: skip
    wider = contract()
    wider["model"]["fields"].append({"name": "w", "type": "string"})
    batch = spark.createDataFrame([(2, "b", "new")], "id int, v string, w string")
    report = DataProcessor(wider, spark=spark).run(batch, materialize=True, target=target.name).report
    assert report.status == "awaiting_approval"
    assert report.approval is not None and report.approval.reasons == ["schema_drift:w"]
    assert [r["id"] for r in read_back(spark, target)] == [1]  # the schema change waits too
    without = contract(approval_schema_drift=False)
    without["model"]["fields"].append({"name": "w", "type": "string"})
    report = DataProcessor(without, spark=spark).run(batch, materialize=True, target=target.name).report
    assert report.status == "succeeded"


def test_reject_drops_the_batch_and_records_rejected(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    batch = spark.createDataFrame([(1, "bad"), (2, "b")], SCHEMA)
    processor = DataProcessor(contract(), spark=spark)
    first = processor.run(batch, materialize=True, target=target.name, pipeline_run_id="p-1").report
    second = processor.run(batch, materialize=True, target=target.name, pipeline_run_id="p-2").report
    with pytest.raises(ApprovalError, match="nothing staged for payments"):
        api.reject(pipeline_run_id="p-1", contracts=["payments"], spark=spark)
    [rejected] = api.reject(
        pipeline_run_id="p-1", contracts=["approved_orders"], rejected_by="eve", spark=spark
    )
    assert rejected.status == "rejected" and rejected.run_id == first.run_id
    row = _row(home, first.run_id)
    assert row is not None and row["status"] == "rejected"
    assert not Path(target.name).exists()
    assert [b.run_id for b in api.awaiting_approval(spark=spark)] == [second.run_id]


def test_staged_manifest_holds_no_source_or_rules(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    data = contract()
    data["source"] = {"type": "landing", "path": "jdbc:postgresql://db/x?password=secret", "format": "csv"}
    batch = spark.createDataFrame([(1, "bad")], SCHEMA)
    DataProcessor(data, spark=spark).run(batch, materialize=True, target=target.name)
    [staged] = api.awaiting_approval(spark=spark)
    text = (Path(staged.path) / "manifest.json").read_text()
    assert "secret" not in text and "v_ok" in text  # the report names the rule; the contract has no rules
    assert "quality" not in staged.manifest["publish_contract"]


def test_a_batch_a_later_run_superseded_is_refused_unless_forced(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    processor = DataProcessor(contract(), spark=spark)
    staged = processor.run(spark.createDataFrame([(1, "bad"), (2, "b")], SCHEMA), materialize=True,
                           target=target.name).report  # fmt: skip
    later = processor.run(spark.createDataFrame([(2, "b"), (3, "c")], SCHEMA), materialize=True,
                          target=target.name).report  # fmt: skip
    assert staged.status == "awaiting_approval" and later.status == "succeeded"
    with pytest.raises(ApprovalError, match=f"superseded: run {later.run_id}"):
        api.approve(run_ids=[staged.run_id], spark=spark)
    assert len(api.awaiting_approval(spark=spark)) == 1  # still there to reject or force
    [forced] = api.approve(run_ids=[staged.run_id], force=True, spark=spark)
    assert forced.status == "succeeded"
    assert sorted(r["id"] for r in read_back(spark, target)) == [2, 3]  # merge: key 2 once


def test_held_run_writes_no_file_outputs(spark: Any, home: Path) -> None:
    target, _ = _targets(home)
    good, bad = home / "good", home / "bad"
    report = (
        DataProcessor(contract(), spark=spark)
        .run(
            spark.createDataFrame([(1, "bad")], SCHEMA),
            materialize=True,
            target=target.name,
            output_good=good,
            output_bad=bad,
        )
        .report
    )
    assert report.status == "awaiting_approval"
    assert not good.exists() and not bad.exists()
    assert any("were not written" in w for w in report.warnings)


def test_driver_resume_publishes_a_staged_batch_and_keeps_it_until_recorded(spark: Any, home: Path) -> None:
    from types import SimpleNamespace

    from lakelogic.driver.spark_runner import SparkContractRunner
    from lakelogic.engines.spark.approval import find_staged
    from lakelogic.plan.approval import load_approval_file

    target, _ = _targets(home)
    report = (
        DataProcessor(contract(), spark=spark)
        .run(
            spark.createDataFrame([(1, "a"), (2, "bad")], SCHEMA),
            materialize=True,
            target=target.name,
            pipeline_run_id="pipe-9",
        )
        .report
    )
    node = SimpleNamespace(id="silver.approved_orders")
    still = SparkContractRunner(spark).resume_staged(node, report.run_id)
    assert still is not None and still.status == "awaiting_approval" and not Path(target.name).exists()

    approval = home / "approval.yaml"
    approval.write_text("approved_by: frank\ncontracts: [silver.approved_orders]\npipeline_run_id: pipe-9\n")
    runner = SparkContractRunner(spark, approval_file=load_approval_file(approval))
    published = runner.resume_staged(node, report.run_id)
    assert published is not None and published.status == "succeeded"
    assert published.approval is not None and published.approval.approved_by == "frank"
    assert [r["id"] for r in read_back(spark, target)] == [1]
    assert find_staged(spark, report.run_id) is not None  # dropped by the driver after it records

    # a resume that stopped after the commit: without any approval now, the commit is recognised
    again = SparkContractRunner(spark).resume_staged(node, report.run_id)
    assert again is not None and again.status == "succeeded"
    assert again.materialization is not None and again.materialization.already_committed
    assert [r["id"] for r in read_back(spark, target)] == [1]
    runner.discard_staged(report.run_id)
    assert find_staged(spark, report.run_id) is None


def test_approving_a_batch_without_bad_rows_empties_an_overwrite_quarantine_in_its_own_shape(
    spark: Any, home: Path
) -> None:
    target, quarantine = _targets(home)
    first = contract(approval_required=False)
    first["quarantine"] = {"write_mode": "overwrite"}
    batch = spark.createDataFrame([(1, "a"), (2, "bad")], SCHEMA)
    DataProcessor(first, spark=spark).run(batch, materialize=True, target=target.name)
    [held] = read_back(spark, quarantine)
    columns = set(held)
    assert "_lakelogic_errors" in columns
    # a clean batch held for its schema drift: approving it publishes an empty quarantine
    wider = contract()
    wider["quarantine"] = {"write_mode": "overwrite"}
    wider["model"]["fields"].append({"name": "w", "type": "string"})
    clean = spark.createDataFrame([(3, "c", "new")], "id int, v string, w string")
    report = DataProcessor(wider, spark=spark).run(clean, materialize=True, target=target.name).report
    assert report.status == "awaiting_approval"
    [published] = api.approve(run_ids=[report.run_id], approved_by="alice", spark=spark)
    assert published.status == "succeeded"
    assert read_back(spark, quarantine) == []
    from deltalake import DeltaTable

    after = {f.name for f in DeltaTable(quarantine.name).schema().fields}
    assert columns <= after, sorted(columns - after)
