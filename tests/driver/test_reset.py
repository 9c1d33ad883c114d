"""Reset (DRIVER §17) on Spark: targets emptied, reset rows written, the next window is a full load."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.contract.hierarchy import resolve_effective
from lakelogic.driver.nodes import build_node
from lakelogic.driver.registry import RegistryEntry
from lakelogic.driver.reset import reset_nodes
from lakelogic.driver.windows import WindowSpec, resolve_window
from lakelogic.report import RunReport, WindowInfo
from lakelogic.runlog import DuckDBRunLogStore, record_run
from tests.driver.test_registry import contract

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_reset_empties_target_and_forgets_last_success(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    path = contract(tmp_path, "s.yaml", "h6_reset_orders", "silver",
                    "materialization: {strategy: append, format: iceberg}\n")  # fmt: skip
    entry = RegistryEntry(contract_path=path, registry_file=tmp_path / "_registry.yaml", index=0)
    node = build_node(entry, resolve_effective(path).data, effective=resolve_effective(path))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakelogic.silver")
    spark.sql("CREATE TABLE IF NOT EXISTS lakelogic.silver.h6_reset_orders (id string) USING iceberg")
    spark.sql("INSERT INTO lakelogic.silver.h6_reset_orders VALUES ('a'), ('b')")
    store = DuckDBRunLogStore(tmp_path / "rl.duckdb")
    earlier = datetime.now(UTC) - timedelta(hours=1)
    done = RunReport(run_id="r0", contract="h6_reset_orders", layer="silver", started_at=earlier,
                     window=WindowInfo(label="full", end=earlier))  # fmt: skip
    done.finish()
    record_run(done, store=store)
    assert store.last_success("h6_reset_orders") is not None

    [result] = reset_nodes(spark, [node], store=store, pipeline_run_id="p-reset")
    assert result.emptied == ["lakelogic.silver.h6_reset_orders"]
    assert result.absent == ["lakelogic.quarantine.h6_reset_orders"]
    assert spark.table("lakelogic.silver.h6_reset_orders").count() == 0
    assert store.query(contract="h6_reset_orders", last=1)[0]["status"] == "reset"
    window = resolve_window(WindowSpec(), "h6_reset_orders", as_of=datetime.now(UTC), store=store)
    assert window.label == "full" and window.reason == "no_previous_success"


def test_reset_empties_a_path_target_too(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    target = tmp_path / "out" / "orders"
    block = f"materialization: {{strategy: append, format: parquet, target_path: '{target}'}}\n"
    path = contract(tmp_path, "p.yaml", "h6_reset_path_orders", "silver", block)
    entry = RegistryEntry(contract_path=path, registry_file=tmp_path / "_registry.yaml", index=0)
    node = build_node(entry, resolve_effective(path).data, effective=resolve_effective(path))
    from lakelogic.tables.spark_write import write_frame
    from lakelogic.tables.spec import WriteSpec
    from lakelogic.tables.stamp import CommitStamp
    from lakelogic.tables.target import resolve_target

    assert node.effective is not None
    resolved = resolve_target(node.effective.contract)
    batch = spark.createDataFrame([("a",), ("b",)], "id string")
    write_frame(spark, batch, resolved, WriteSpec(), CommitStamp(run_id="r1", contract="x"))
    assert spark.read.parquet(str(target)).count() == 2

    [result] = reset_nodes(spark, [node], store=None)
    assert result.emptied == [str(target)]
    assert not [f for f in target.rglob("*.parquet") if "_lakelogic" not in str(f)]  # no data file left
