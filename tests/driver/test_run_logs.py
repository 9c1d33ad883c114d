"""Each contract's run log (DRIVER §15.1): a contract naming its own store is recorded and read there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakelogic.driver import reset as reset_module
from lakelogic.driver.dag import build_dag
from lakelogic.driver.reset import reset_nodes
from lakelogic.driver.run_logs import NodeStores
from lakelogic.driver.runner import PipelineRun
from lakelogic.runlog import DuckDBRunLogStore, RunLogError, SQLiteRunLogStore, store_settings
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


def test_a_bad_run_log_setting_fails_the_reset_before_any_table_is_emptied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lakelogic.tables.reset as table_reset

    emptied: list[str] = []
    monkeypatch.setattr(reset_module, "_resolved", lambda n: n.id)  # every node has a target
    monkeypatch.setattr(table_reset, "empty_outputs", lambda spark, t, contract: emptied.append(t) or [])
    good = node("a", "bronze")
    bad = node("b", "bronze", metadata={"run_log_backend": "duckbd"})
    with pytest.raises(RunLogError, match="duckbd"):
        reset_nodes(None, [good, bad], store=DuckDBRunLogStore(tmp_path / "p.duckdb"))
    assert emptied == []  # a's table too: nothing is touched before every run log opened
    reset_nodes(None, [good], store=DuckDBRunLogStore(tmp_path / "p.duckdb"))
    assert emptied == ["bronze.a"]  # the stub works: a good reset empties


def test_a_contract_naming_only_its_table_keeps_the_pipeline_stores_location(tmp_path: Path) -> None:
    pipeline_log = DuckDBRunLogStore(tmp_path / "pipeline.duckdb")
    named = node("a", "bronze", metadata={"run_log_table": "ops.a_runs"})
    store = NodeStores(pipeline_log).of(named)
    assert isinstance(store, DuckDBRunLogStore)
    assert (store.path, store.table) == (pipeline_log.path, "ops.a_runs")


def test_history_is_read_from_the_pipeline_store_until_the_own_store_has_some(tmp_path: Path) -> None:
    """A run-log setting added to a contract that already ran must not make its next window a full load."""
    pipeline_log = DuckDBRunLogStore(tmp_path / "pipeline.duckdb")
    dag = build_dag([node("a", "bronze")])
    PipelineRun(dag, FakeRunner(), store=pipeline_log, as_of=AS_OF).execute()
    moved = build_dag([node("a", "bronze", metadata={"run_log_database": str(tmp_path / "own.duckdb")})])
    fake = FakeRunner()
    PipelineRun(moved, fake, store=pipeline_log, as_of=AS_OF + timedelta(hours=1)).execute()
    assert fake.calls[0].window.label == "incremental" and fake.calls[0].window.start == AS_OF
    assert [r["contract"] for r in DuckDBRunLogStore(tmp_path / "own.duckdb").query()] == ["a"]
    # from now on the own store answers (its success ends at AS_OF + 1h)
    PipelineRun(moved, fake, store=pipeline_log, as_of=AS_OF + timedelta(hours=2)).execute()
    assert fake.calls[1].window.start == AS_OF + timedelta(hours=1)
