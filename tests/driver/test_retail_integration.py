"""The retail mesh through the driver on Spark: run-log rows, and a silver dataset-rule gate that blocks
exactly its dependents while unrelated contracts finish."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from lakelogic.driver.load import load_pipeline
from lakelogic.driver.runner import DriverOptions, PipelineRun
from lakelogic.driver.spark_runner import spark_contract_runner
from lakelogic.runlog import DuckDBRunLogStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "retail"

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture()
def retail(tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (EXAMPLE / "contracts").is_dir():
        pytest.skip("examples/retail is absent")
    root = tmp_path / "retail"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".lakelogic", "__pycache__"))
    (root / "lakelogic.yaml").write_text("{}\n")  # project root: hierarchy discovery stops here
    # A fresh catalog of its own, so tables of other tests in this Spark session never mix in.
    catalog = "retail_it"
    spark.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{catalog}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{catalog}.warehouse", str(tmp_path / "warehouse"))
    monkeypatch.setenv("LAKELOGIC_CATALOG", catalog)
    # Break one silver contract: at most one order allowed -> an error-severity dataset rule fails.
    orders = root / "contracts" / "retail" / "pos" / "silver" / "silver_pos_orders.yaml"
    text = orders.read_text()
    assert "    - row_count_between: {min: 1}\n" in text
    orders.write_text(
        text.replace("    - row_count_between: {min: 1}\n", "    - row_count_between: {max: 1}\n")
    )
    return root


def test_gate_blocks_exactly_its_dependents(retail: Path, spark: Any, tmp_path: Path) -> None:
    pipeline = load_pipeline([retail / "contracts"])
    store = DuckDBRunLogStore(tmp_path / "runlog.duckdb")
    runner, cancel = spark_contract_runner(spark, cache_references=True)
    run = PipelineRun(
        pipeline.dag,
        runner,
        selected=pipeline.selected,
        options=DriverOptions(max_workers=2),
        store=store,
        pipeline_run_id="retail-it",
        cancel=cancel,
    )
    result = run.execute()
    out = result.outcomes
    failures = {n: o.error for n, o in out.items() if o.status == "failed"}
    assert failures == {}
    cache = runner.cache  # type: ignore[attr-defined]
    assert cache.loads >= 1  # the reference links of the contracts that ran went through the cache
    runner.close()  # type: ignore[attr-defined]
    assert cache.frames == {}

    gated = out["silver.silver_pos_orders"]
    assert gated.status == "partial" and gated.gated
    assert gated.gate_reason is not None and gated.gate_reason.startswith("dataset_rule:")

    blocked = {n for n, o in out.items() if o.status == "skipped"}
    assert blocked == {"silver.silver_pos_order_lines", "gold.gold_fact_sales"}
    assert out["silver.silver_pos_order_lines"].skip_reason == "upstream_gated"
    assert out["gold.gold_fact_sales"].root_cause == "silver.silver_pos_orders"
    finished = {n for n, o in out.items() if o.status in ("succeeded", "no_new_data")}
    assert finished == set(pipeline.dag.nodes) - blocked - {"silver.silver_pos_orders"}

    rows = {r["contract"]: r for r in store.query(pipeline_run_id="retail-it")}
    assert len(rows) == len(pipeline.dag.nodes)
    assert rows["gold_fact_sales"]["status"] == "skipped"
    assert rows["gold_fact_sales"]["root_cause"] == "silver.silver_pos_orders"
    assert (
        rows["silver_pos_orders"]["gated"] is True and rows["silver_pos_orders"]["dataset_rules_failed"] >= 1
    )
    dim = rows["gold_dim_customers"]
    assert dim["status"] == "succeeded" and dim["committed"] is True and dim["counts_good"] > 0
    assert dim["entity"] == "dim_customers" and dim["snapshot"]
    assert result.exit_code == 0
