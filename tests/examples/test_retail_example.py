"""The retail example mesh and the benchmark contract stay loadable, wired and reproducible.

No Spark here: the landing files are checked for the defects the demo relies on, every contract goes
through the real loader, and the registries through the driver's registry/DAG code.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from lakelogic.contract.loader import load_contract

REPO = Path(__file__).resolve().parents[2]
RETAIL = REPO / "examples" / "retail"
CONTRACTS = RETAIL / "contracts"
LANDING = RETAIL / "landing"
CONTRACT_FILES = sorted(p for p in CONTRACTS.rglob("*.yaml") if not p.name.startswith("_"))

EXPECTED_NODES = {
    "bronze.bronze_crm_customers",
    "bronze.bronze_erp_products",
    "bronze.bronze_pos_orders",
    "bronze.bronze_pos_order_lines",
    "silver.silver_crm_customers",
    "silver.silver_erp_products",
    "silver.silver_pos_orders",
    "silver.silver_pos_order_lines",
    "gold.gold_dim_customers",
    "gold.gold_dim_products",
    "gold.gold_fact_sales",
}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_landing", RETAIL / "generate_landing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _csv_rows(pattern: str) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted(LANDING.glob(pattern)):
        with path.open(encoding="utf-8", newline="") as handle:
            rows.extend(csv.DictReader(handle))
    return rows


def test_committed_landing_files_equal_a_fresh_generation(tmp_path: Path) -> None:
    written = _generator().write_landing(tmp_path)
    assert len(written) == 7
    for path in written:
        committed = LANDING / path.relative_to(tmp_path)
        assert committed.read_bytes() == path.read_bytes(), f"{committed} differs from the generator output"


def test_customer_extracts_contain_the_defects_silver_must_quarantine() -> None:
    rows = _csv_rows("crm/customers/*.csv")
    ids = [r["customer_id"] for r in rows if r["customer_id"]]
    emails = [r["email"].strip() for r in rows]
    assert 300 <= len(rows) <= 400
    assert len(ids) > len(set(ids)), "duplicate customer ids (later updates) are expected"
    assert any(r["customer_id"] == "" for r in rows), "a missing customer id is expected"
    assert sum(1 for e in emails if e == "") >= 1
    assert sum(1 for e in emails if e and ("@" not in e or " " in e or e.endswith("@"))) >= 3
    assert any("/" in r["signup_date"] or r["signup_date"].startswith("2024-13") for r in rows)


def test_order_files_contain_malformed_lines_negative_amounts_and_extra_columns() -> None:
    malformed, negative, extra, statuses = 0, 0, 0, set()
    for path in sorted(LANDING.glob("pos/orders/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                order = json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
                continue
            negative += order["amount"] < 0
            extra += bool({"coupon_code", "device"} & order.keys())
            statuses.add(order["status"].strip().lower())
    assert malformed == 2  # one truncated record per daily file
    assert negative >= 3
    assert extra >= 20
    assert {"lost", "??", "on_hold"} & statuses, "unknown statuses are expected"


@pytest.mark.parametrize("path", CONTRACT_FILES, ids=lambda p: p.stem)
def test_every_example_contract_loads(path: Path) -> None:
    contract = load_contract(path)
    assert contract.contract_name == path.stem  # `dataset` names each contract after its file


def test_benchmark_contract_has_at_least_nine_row_rules_and_a_pre_transform() -> None:
    contract = load_contract(REPO / "benchmarks" / "contracts" / "silver_orders.yaml")
    assert contract.quality is not None
    assert len(contract.quality.row_rules) >= 9
    assert [t.op_name for t in contract.transformations][:2] == ["trim", "lower"]


def test_registries_build_the_mesh_with_dimensions_before_the_fact() -> None:
    from lakelogic.contract.yaml_io import load_yaml
    from lakelogic.driver.dag import build_dag
    from lakelogic.driver.nodes import build_node
    from lakelogic.driver.registry import load_registries

    entries = load_registries([CONTRACTS])
    nodes = [build_node(e, load_yaml(Path(e.contract_path))[0]) for e in entries]
    dag = build_dag(nodes)
    assert set(dag.nodes) == EXPECTED_NODES
    assert dag.layers() == ["bronze", "silver", "gold"]
    assert "bronze.bronze_crm_customers" in dag.upstreams("silver.silver_pos_orders")
    assert set(dag.upstreams("silver.silver_pos_order_lines")) >= {
        "bronze.bronze_pos_order_lines",
        "bronze.bronze_erp_products",
        "silver.silver_pos_orders",
    }
    fact_upstreams = set(dag.upstreams("gold.gold_fact_sales"))
    assert {"gold.gold_dim_customers", "gold.gold_dim_products"} <= fact_upstreams
    assert dag.generations("gold") == [
        ["gold.gold_dim_customers", "gold.gold_dim_products"],
        ["gold.gold_fact_sales"],
    ]
