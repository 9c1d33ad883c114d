"""``lakelogic bootstrap`` (DRIVER §17): entities, sampled types, strict contracts, registry sync."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from lakelogic.cli.main import app
from lakelogic.contract.loader import load_contract
from lakelogic.driver.bootstrap import BootstrapError, bootstrap, discover

CSV = (
    "id,big,price,active,day,seen_at,email,status,note\n"
    "1,3000000000,1.5,true,2026-01-01,2026-01-01 10:00:00,a@example.com,open,x\n"
    "2,3000000001,2.25,false,2026-01-02,2026-01-02 11:30:00,b@example.com,closed,\n"
    "3,3000000002,3.0,true,2026-01-03,2026-01-03 12:00:00,c@example.com,open,y\n"
)


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "crm" / "customers").mkdir(parents=True)
    (root / "crm" / "customers" / "customers_2026-01-01.csv").write_text(CSV)
    (root / "orders_2026-01-01.csv").write_text("order_id,amount\n10,5\n")
    (root / "orders_2026-01-02.csv").write_text("order_id,amount\n11,7\n")
    (root / "_ignored").mkdir()
    (root / "_ignored" / "x.csv").write_text("a\n1\n")
    return root


def _fields(path: Path) -> dict[str, dict]:
    doc = yaml.safe_load(path.read_text())
    return {f["name"]: f for f in doc["model"]["fields"]}


def test_entities_are_folders_or_dated_file_groups(landing: Path) -> None:
    entities = discover(landing, "*.csv")
    assert [(e.name, e.pattern, len(e.files)) for e in entities] == [
        ("customers", "*.csv", 1),
        ("orders", "orders*.csv", 2),
    ]


def test_drafts_strict_contracts_with_sampled_types_and_a_sorted_registry(
    landing: Path, tmp_path: Path
) -> None:
    out, registry = tmp_path / "contracts", tmp_path / "contracts" / "_registry.yaml"
    result = bootstrap(landing, out, registry, suggest_rules=True, detect_pii=True)
    assert [p.name for p in result.written] == ["bronze_customers.yaml", "bronze_orders.yaml"]
    fields = _fields(out / "bronze_customers.yaml")
    assert {n: f["type"] for n, f in fields.items()} == {
        "id": "integer", "big": "bigint", "price": "double", "active": "boolean", "day": "date",
        "seen_at": "timestamp", "email": "string", "status": "string", "note": "string",
    }  # fmt: skip
    assert fields["email"].get("pii") is True and "pii" not in fields["status"]
    assert not any(f.get("required") for f in fields.values())  # nothing required
    contract = load_contract(out / "bronze_customers.yaml")  # strictly valid, from its own file
    assert contract.source is not None and contract.source.watermark_strategy == "pipeline_log"
    assert (out / contract.source.path).resolve() == (landing / "crm" / "customers").resolve()
    rules = yaml.safe_load((out / "bronze_customers.yaml").read_text())["quality"]["row_rules"]
    assert {"not_null": "id", "severity": "warning"} in rules
    assert {"not_null": "note", "severity": "warning"} not in rules  # the sample has a NULL note
    assert {
        "accepted_values": {"field": "status", "values": ["closed", "open"]},
        "severity": "warning",
    } in rules
    assert {"range": {"field": "price", "min": 1.5, "max": 3.0}, "severity": "warning"} in rules
    reg = yaml.safe_load(registry.read_text())
    assert reg["entries"] == [
        {"entity": "customers", "layer": "bronze", "contract_path": "bronze_customers.yaml"},
        {"entity": "orders", "layer": "bronze", "contract_path": "bronze_orders.yaml"},
    ]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = bootstrap(landing, tmp_path / "again", tmp_path / "again" / "_registry.yaml", suggest_rules=True,
                      detect_pii=True)  # fmt: skip
    assert {p.name: p.read_bytes() for p in (tmp_path / "again").iterdir()} == before  # deterministic
    assert again.written


def test_sync_keeps_updates_adds_and_disables(landing: Path, tmp_path: Path) -> None:
    out, registry = tmp_path / "c", tmp_path / "c" / "_registry.yaml"
    bootstrap(landing, out, registry)
    customers = out / "bronze_customers.yaml"
    customers.write_text(customers.read_text().replace("title: customers (bronze)", "title: Customers"))
    (landing / "crm" / "customers" / "customers_2026-01-02.csv").write_text(
        "id,big,price,active,day,seen_at,email,status,note,tier\n1,1,1,true,2026-01-01,2026-01-01,a@x.io,open,x,gold\n"
    )
    for old in landing.glob("orders_*.csv"):
        old.unlink()
    (landing / "erp" / "products").mkdir(parents=True)
    (landing / "erp" / "products" / "p.csv").write_text("sku\nA\n")

    result = bootstrap(landing, out, registry, sync=True, sync_update_schema=True)
    assert [p.name for p in result.updated] == ["bronze_customers.yaml"]
    assert "title: Customers" in customers.read_text()  # the existing contract is kept, only extended
    assert _fields(customers)["tier"]["type"] == "string"
    assert [p.name for p in result.written] == ["bronze_products.yaml"]
    assert result.disabled == ["orders"]
    entries = {e["entity"]: e for e in yaml.safe_load(registry.read_text())["entries"]}
    assert entries["orders"]["enabled"] is False and "enabled" not in entries["products"]

    kept = bootstrap(landing, out, registry)
    assert not kept.written and {p.name for p in kept.kept} == {
        "bronze_customers.yaml",
        "bronze_products.yaml",
    }
    overwritten = bootstrap(landing, out, registry, sync_overwrite=True)
    assert "title: customers (bronze)" in customers.read_text() and overwritten.written


def test_problems_are_errors(tmp_path: Path, landing: Path) -> None:
    with pytest.raises(BootstrapError, match="is not a directory"):
        bootstrap(tmp_path / "nope", tmp_path / "o", tmp_path / "o" / "_registry.yaml")
    with pytest.raises(BootstrapError, match="allowed: csv, parquet, json"):
        bootstrap(landing, tmp_path / "o", tmp_path / "o" / "_registry.yaml", fmt="xml")


def test_cli(landing: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        app,
        [
            "bootstrap",
            "--landing",
            str(landing),
            "--output-dir",
            str(out),
            "--registry",
            str(out / "_registry.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote    " in result.output and (out / "bronze_orders.yaml").is_file()
    bad = CliRunner().invoke(app, ["bootstrap", "--landing", str(tmp_path / "x"), "--output-dir", str(out),
                                   "--registry", str(out / "r.yaml")])  # fmt: skip
    assert bad.exit_code == 2
