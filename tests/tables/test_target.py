"""Target, format and quarantine resolution (SEMANTICS §13.1, §13.5) — no Spark needed."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import PlanError, UnsupportedError
from lakelogic.tables.target import is_table_name, qualify_table, resolve_target


def _contract(**blocks: Any) -> Any:
    doc: dict[str, Any] = {
        "version": "1.0.0",
        "info": {"title": "Customer Orders", "target_layer": "curated"},
        "model": {"fields": [{"name": "id", "type": "int"}]},
    }
    doc.update(blocks)
    return load_contract(doc)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("silver.orders", True),
        ("cat.silver.orders", True),
        ("table:silver.orders", True),
        ("orders", False),
        ("a.b.c.d", False),
        ("/data/orders", False),
        ("file:///data/orders", False),
        ("s3a://bucket/orders", False),
    ],
)
def test_catalog_table_or_path(value: str, expected: bool) -> None:
    assert is_table_name(value) is expected


def test_default_target_is_layer_namespace_in_default_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_CATALOG", "prod")
    resolved = resolve_target(_contract())
    assert (resolved.kind, resolved.name, resolved.format) == (
        "table",
        "prod.gold.customer_orders",
        "iceberg",
    )
    assert resolved.quarantine is not None
    assert resolved.quarantine.name == "prod.quarantine.customer_orders"
    assert resolved.quarantine.format == "iceberg"


def test_two_part_name_gets_default_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKELOGIC_CATALOG", raising=False)
    assert qualify_table("table:silver.orders") == "lakelogic.silver.orders"
    assert qualify_table("hive.silver.orders") == "hive.silver.orders"


def test_path_target_defaults_to_delta_and_sibling_quarantine() -> None:
    resolved = resolve_target(_contract(materialization={"target_path": "file:///data/gold/orders/"}))
    assert (resolved.kind, resolved.name, resolved.format) == ("path", "/data/gold/orders", "delta")
    assert resolved.quarantine is not None
    assert resolved.quarantine.name == "/data/gold/_quarantine/orders"
    assert resolved.quarantine.write_mode == "append"


def test_precedence_api_then_environment_then_contract() -> None:
    contract = _contract(
        materialization={"target_path": "/m/orders", "format": "parquet"},
        environments={"dev": {"path": "/dev/orders", "format": "delta"}},
        server={"path": "/server/orders", "type": "local"},
    )
    assert resolve_target(contract, target="/api/orders").name == "/api/orders"
    assert resolve_target(contract, target="/api/orders").format == "parquet"
    dev = resolve_target(contract, env="dev")
    assert (dev.name, dev.format) == ("/dev/orders", "delta")
    assert resolve_target(contract).name == "/m/orders"
    with pytest.raises(PlanError, match="environment 'prod' is not defined"):
        resolve_target(contract, env="prod")


def test_quarantine_settings_are_honoured() -> None:
    contract = _contract(
        materialization={"target_path": "/data/orders"},
        quarantine={"target": "ops.bad_orders", "format": "iceberg", "write_mode": "overwrite"},
    )
    sink = resolve_target(contract).quarantine
    assert sink is not None
    assert (sink.kind, sink.name, sink.format, sink.write_mode) == (
        "table",
        "lakelogic.ops.bad_orders",
        "iceberg",
        "overwrite",
    )


def test_catalog_target_with_explicit_path_quarantine_uses_path_default_format() -> None:
    contract = _contract(
        materialization={"target_path": "silver.orders"}, quarantine={"location": "/q/orders"}
    )
    sink = resolve_target(contract).quarantine
    assert sink is not None
    assert (sink.kind, sink.format) == ("path", "delta")


def test_unsupported_format_is_rejected() -> None:
    # the loader already rejects unknown formats; the resolver guards formats Spark cannot write
    with pytest.raises(UnsupportedError, match="ducklake"):
        resolve_target({"info": {"title": "x"}, "materialization": {"format": "ducklake"}}, target="/x")
