"""Each contract's run log (DRIVER §15.1): a contract naming its own store is recorded and read there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from lakelogic.driver.dag import build_dag
from lakelogic.driver.reset import reset_nodes
from lakelogic.driver.run_logs import NodeStores
from lakelogic.driver.runner import PipelineRun
from lakelogic.runlog import DuckDBRunLogStore, SQLiteRunLogStore, store_settings
from tests.driver.helpers import FakeRunner, node

AS_OF = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_contract_with_its_own_run_log_is_recorded_and_windowed_there(tmp_path: Path) -> None:
    pipeline_log = DuckDBRunLogStore(tmp_path / "pipeline.duckdb")
    own = tmp_path / "own.sqlite"
    nodes = [
        node("a", "bronze", metadata={"run_log_backend": "sqlite", "run_log_database": str(own)}),
        node("b", "bronze"),
    ]
    dag = build_dag(nodes)
    fake = FakeRunner()
    PipelineRun(dag, fake, store=pipeline_log, as_of=AS_OF).execute()
    own_log = SQLiteRunLogStore(own)
    assert [r["contract"] for r in own_log.query()] == ["a"]
    assert [r["contract"] for r in pipeline_log.query()] == ["b"]
    # the second run finds a's last success in a's own log: an incremental window, not a full reload
    PipelineRun(dag, fake, store=pipeline_log, as_of=AS_OF + timedelta(hours=1)).execute()
    second = {c.node.name: c.window for c in fake.calls[2:]}
    assert second["a"].label == "incremental" and second["a"].start == AS_OF
    assert second["b"].label == "incremental"


def test_an_unscheduled_upstream_is_looked_up_in_its_own_run_log(tmp_path: Path) -> None:
    pipeline_log = DuckDBRunLogStore(tmp_path / "pipeline.duckdb")
    meta = {"run_log_database": str(tmp_path / "a.duckdb")}
    dag = build_dag([node("a", "bronze", metadata=meta), node("s", "silver", upstream=("a",))])
    PipelineRun(dag, FakeRunner(), selected={"bronze.a"}, store=pipeline_log).execute()
    soon = datetime.now(UTC) + timedelta(hours=1)
    res = PipelineRun(dag, FakeRunner(), selected={"silver.s"}, store=pipeline_log, as_of=soon).execute()
    assert res.outcomes["silver.s"].status == "succeeded"  # not missing_upstream: a's success was found


def test_one_store_per_setting_and_none_without_a_pipeline_store(tmp_path: Path) -> None:
    meta = {"run_log_database": str(tmp_path / "x.duckdb")}
    stores = NodeStores(DuckDBRunLogStore(tmp_path / "p.duckdb"))
    first, second = node("a", "bronze", metadata=meta), node("b", "bronze", metadata=meta)
    assert stores.of(first) is stores.of(second) is not stores.default
    assert NodeStores(None).of(first) is None  # a pipeline run without a run log writes none


def test_relative_run_log_paths_are_taken_from_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    contract_file = tmp_path / "retail" / "silver" / "orders.yaml"
    backend, database, _ = store_settings({"run_log_database": "logs/rl.duckdb"}, contract_file)
    assert (backend, database) == (None, str(tmp_path.resolve() / "logs" / "rl.duckdb"))
    # an Iceberg log is a catalog namespace, never a path
    _, namespace, _ = store_settings(
        {"run_log_backend": "iceberg", "run_log_database": "lake.ops"}, contract_file
    )
    assert namespace == "lake.ops"


def test_a_reset_row_goes_to_the_contracts_own_run_log(tmp_path: Path) -> None:
    pipeline_log = DuckDBRunLogStore(tmp_path / "pipeline.duckdb")
    own = tmp_path / "own.duckdb"
    target = node("a", "bronze", metadata={"run_log_database": str(own)})
    [result] = reset_nodes(None, [target], store=pipeline_log)
    assert result.node_id == target.id
    assert [r["status"] for r in DuckDBRunLogStore(own).query()] == ["reset"]
    assert not pipeline_log.exists() or pipeline_log.query() == []
    reset_nodes(None, [target], store=pipeline_log, route=False)  # an explicit store for this contract
    assert [r["status"] for r in pipeline_log.query()] == ["reset"]
