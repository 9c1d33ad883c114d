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
        ("orders", "orders_[0-9]*.csv", 2),
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


def test_partition_folders_dated_names_and_dialects(tmp_path: Path) -> None:
    root = tmp_path / "landing"
    for day in ("dt=2024-01-01", "dt=2024-01-02"):
        (root / "events" / day).mkdir(parents=True)
        (root / "events" / day / "part.csv").write_text("id;seen\n1;01/02/2024\n2;03/04/2024\n")
    (root / "sales_20240101_eu.csv").write_text("id,day\n1,2024-01-01\n")
    (root / "sales_20240102_eu.csv").write_text("id,day\n2,2024-01-02\n")
    (root / "orders_2024-01-01.csv").write_text("id\n1\n")
    (root / "orders_returns_2024-01-01.csv").write_text("id\n9\n")
    entities = {e.name: e for e in discover(root, "*.csv")}
    assert sorted(entities) == ["events", "orders", "orders_returns", "sales_eu"]
    assert entities["events"].pattern == "**/*.csv" and len(entities["events"].files) == 2
    assert entities["sales_eu"].pattern == "sales_[0-9]*_eu.csv"
    assert entities["orders"].pattern == "orders_[0-9]*.csv"
    assert [f.name for f in entities["orders"].files] == ["orders_2024-01-01.csv"]

    out = tmp_path / "c"
    bootstrap(root, out, out / "_registry.yaml")
    events = yaml.safe_load((out / "bronze_events.yaml").read_text())
    assert events["source"]["options"] == {"delimiter": ";"}
    assert {f["name"]: f["type"] for f in events["model"]["fields"]}["seen"] == "string"  # not ISO: text
    sales = yaml.safe_load((out / "bronze_sales_eu.yaml").read_text())
    assert {f["name"]: f["type"] for f in sales["model"]["fields"]}["day"] == "date"


def test_registry_keeps_hand_written_entries_and_sync_only_disables_drafted_landing_contracts(
    landing: Path, tmp_path: Path
) -> None:
    out, registry = tmp_path / "c", tmp_path / "c" / "_registry.yaml"
    out.mkdir()
    (out / "bronze_jdbc.yaml").write_text(
        "version: 1.0.0\ninfo: {title: jdbc, table_name: jdbc, target_layer: bronze}\n"
        "source: {type: table, path: db.t}\nmodel: {fields: [{name: id, type: string}]}\n"
    )
    registry.write_text(
        "version: 1\nentries:\n"
        "  - {entity: jdbc, contract_path: bronze_jdbc.yaml}\n"
        "  - {entity: customers, contract_path: bronze_customers.yaml}\n"  # no layer key: matched by path
    )
    bootstrap(landing, out, registry)
    entries = yaml.safe_load(registry.read_text())["entries"]
    assert sorted(e["entity"] for e in entries) == ["customers", "jdbc", "orders"]  # no second customers
    for old in landing.glob("orders_*.csv"):
        old.unlink()
    result = bootstrap(landing, out, registry, sync=True)
    assert result.disabled == ["orders"]  # the JDBC contract is not the landing zone's to disable
    entries = {e["entity"]: e for e in yaml.safe_load(registry.read_text())["entries"]}
    assert "enabled" not in entries["jdbc"] and entries["orders"]["enabled"] is False

    fresh = tmp_path / "fresh" / "_registry.yaml"
    (landing / "crm" / "customers" / "more.csv").write_text("id,extra\n1,x\n")
    updated = bootstrap(landing, out, fresh, sync_update_schema=True)
    assert [p.name for p in updated.updated] == ["bronze_customers.yaml"]
    assert [e["entity"] for e in yaml.safe_load(fresh.read_text())["entries"]] == ["customers"]
