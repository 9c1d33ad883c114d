"""``lakelogic ddl``: CREATE TABLE for target and quarantine from the model, without running anything."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from lakelogic.cli.main import app
from lakelogic.contract.loader import load_contract
from lakelogic.plan.compiler import compile_contract
from lakelogic.tables.ddl import contract_ddl
from lakelogic.tables.target import resolve_target

CONTRACT = {
    "version": "1.0.0",
    "info": {"title": "Dim Customer", "target_layer": "gold"},
    "model": {
        "fields": [
            {"name": "customer_id", "type": "int", "required": True},
            {"name": "tier", "type": "string"},
            {"name": "changed_at", "type": "timestamp"},
            {"name": "amount", "type": "decimal(10,2)"},
        ]
    },
    "primary_key": ["customer_id"],
    "lineage": {"enabled": True},
    "materialization": {
        "strategy": "scd2",
        "partition_by": ["tier"],
        "table_properties": {"write.format.default": "parquet"},
        "scd2": {"timestamp_field": "changed_at", "version_column": "version", "surrogate_key": "sk"},
    },
}


def test_contract_ddl_has_model_lineage_scd_and_quarantine_columns() -> None:
    contract = load_contract(CONTRACT)
    target, quarantine = contract_ddl(contract, compile_contract(contract), resolve_target(contract))
    columns = dict(target.columns)
    assert columns["amount"] == "DECIMAL(10,2)" and columns["changed_at"] == "TIMESTAMP_LTZ"
    assert columns["effective_from"] == "TIMESTAMP_LTZ" and columns["is_current"] == "BOOLEAN"
    assert columns["version"] == "INT" and columns["sk"] == "STRING"
    assert columns["_lakelogic_processed_at"] == "TIMESTAMP_LTZ"
    assert "PARTITIONED BY (`tier`)" in target.statement
    assert "'write.merge.mode' = 'merge-on-read'" in target.statement
    assert "'write.format.default' = 'parquet'" in target.statement
    assert target.statement.startswith("CREATE TABLE IF NOT EXISTS `lakelogic`.`gold`.`dim_customer`")
    assert quarantine.target.name.endswith("quarantine.dim_customer")
    assert dict(quarantine.columns)["_lakelogic_errors"] == "ARRAY<STRING>"


def test_cli_prints_ddl_for_a_path_target(tmp_path: Path) -> None:
    path = tmp_path / "dim.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    result = CliRunner().invoke(app, ["ddl", str(path), "--target", str(tmp_path / "out" / "dim")])
    assert result.exit_code == 0, result.output
    assert f"LOCATION '{tmp_path}/out/dim'" in result.output
    assert f"LOCATION '{tmp_path}/out/_quarantine/dim'" in result.output
    assert "USING delta" in result.output


@pytest.mark.spark
def test_cli_apply_creates_empty_tables(spark: object, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = tmp_path / "dim.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    out = tmp_path / "out" / "dim"
    result = CliRunner().invoke(app, ["ddl", str(path), "--apply", "--target", str(out)])
    assert result.exit_code == 0, result.output
    table = DeltaTable(str(out))
    assert "effective_to" in [f.name for f in table.schema().fields]
    assert table.metadata().partition_columns == ["tier"]
    assert DeltaTable.is_deltatable(str(tmp_path / "out" / "_quarantine" / "dim"))
    again = CliRunner().invoke(app, ["ddl", str(path), "--apply", "--target", str(out)])
    assert "unchanged delta" in again.output
    # §17 "creates or alters": a column the contract gained is added to the existing table
    wider = {
        **CONTRACT,
        "model": {
            **CONTRACT["model"],
            "fields": [*CONTRACT["model"]["fields"], {"name": "note", "type": "string"}],
        },
    }
    path.write_text(yaml.safe_dump(wider))
    altered = CliRunner().invoke(app, ["ddl", str(path), "--apply", "--target", str(out)])
    assert altered.exit_code == 0, altered.output
    assert f"altered   delta {out}" in altered.output
    assert "note" in [f.name for f in DeltaTable(str(out)).schema().fields]
    assert DeltaTable(str(out)).to_pyarrow_table().num_rows == 0  # no rows written


@pytest.mark.spark
def test_apply_creates_instants_in_a_timestamp_ntz_session(spark: Any, tmp_path: Path) -> None:
    """A bare TIMESTAMP would mean TIMESTAMP_NTZ in such a session; a model `timestamp` is an instant."""
    from pyspark.sql.types import TimestampType

    path = tmp_path / "dim.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    name = f"lakelogic.ddl_ntz.dim_{uuid.uuid4().hex[:8]}"
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        result = CliRunner().invoke(app, ["ddl", str(path), "--apply", "--target", name])
        assert result.exit_code == 0, result.output
        assert spark.conf.get("spark.sql.timestampType") == "TIMESTAMP_NTZ", "the session's own value is back"
    finally:
        spark.conf.unset("spark.sql.timestampType")
    types = {f.name: f.dataType for f in spark.table(name).schema.fields}
    for column in ("changed_at", "effective_from", "effective_to", "_lakelogic_processed_at"):
        assert types[column] == TimestampType(), column
    spark.sql(f"DROP TABLE {name}")


MASKED = {
    "version": "1.0.0",
    "info": {"title": "Ddl Orders", "table_name": "ddl_orders"},
    "model": {
        "fields": [
            {"name": "id", "type": "int", "required": True},
            {"name": "n", "type": "int", "pii": True, "masking": "redact"},
            {"name": "gone", "type": "int", "pii": True, "masking": "nullify"},
        ]
    },
    "primary_key": ["id"],
    "lineage": {"enabled": True},
    "materialization": {"strategy": "merge", "soft_delete_column": "is_deleted", "format": "delta"},
    "schema_policy": {"evolution": "strict"},
}


def test_ddl_columns_are_the_ones_a_run_writes() -> None:
    """A helper's audit: masked fields are text (§5.4), soft-delete columns come with the write (§13.6),
    quarantined rows carry lineage too (§14); and a path sink is not registered under the target's name."""
    contract = load_contract(MASKED)
    resolved = resolve_target(contract, target="/data/out/ddl_orders")
    target, quarantine = contract_ddl(contract, compile_contract(contract), resolved)
    columns = dict(target.columns)
    assert columns["n"] == "STRING" and columns["gone"] == "INT"  # nullify keeps the type
    assert columns["is_deleted"] == "BOOLEAN"
    assert "_lakelogic_processed_at" in dict(quarantine.columns)
    assert "CREATE TABLE IF NOT EXISTS `ddl_orders` (" in target.statement
    assert "CREATE TABLE IF NOT EXISTS `ddl_orders_quarantine` (" in quarantine.statement


@pytest.mark.spark
def test_a_run_into_tables_ddl_created_finds_its_columns(spark: Any, tmp_path: Path) -> None:
    """``ddl --apply`` then ``run`` under ``evolution: strict``: a column the DDL lacked (soft delete) or
    typed otherwise (a redacted int) failed the first run."""
    from lakelogic.api import DataProcessor

    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(MASKED))
    out = str(tmp_path / "out" / "ddl_orders")
    applied = CliRunner().invoke(app, ["ddl", str(path), "--apply", "--target", out])
    assert applied.exit_code == 0, applied.output
    batch = spark.createDataFrame([(1, 5, 6), (2, None, 7)], "id int, n int, gone int")
    result = DataProcessor(str(path), spark=spark).run(batch, materialize=True, target=out)
    assert result.report.status == "succeeded", result.report.error
    assert result.report.materialization is not None and result.report.materialization.rows_inserted == 2


def test_csv_and_json_ddl_declares_nested_values_as_text() -> None:
    """§11: CSV/JSON sinks store arrays as JSON text; CSV cannot declare an ARRAY column at all."""
    doc = {
        **MASKED,
        "model": {"fields": [{"name": "id", "type": "int"}, {"name": "tags", "type": "array<string>"}]},
    }
    doc["materialization"] = {"strategy": "append", "format": "csv"}
    contract = load_contract(doc)
    target, quarantine = contract_ddl(
        contract, compile_contract(contract), resolve_target(contract, target="/d/o")
    )
    assert dict(target.columns)["tags"] == "STRING"
    assert dict(quarantine.columns)["_lakelogic_errors"] == (
        "STRING" if quarantine.target.format == "csv" else "ARRAY<STRING>"
    )
