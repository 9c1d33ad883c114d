"""End to end: the retail mesh through `lakelogic-driver`, two business days, as `make demo` runs it.

About two minutes: part of `make test` (and so of CI) because it is the one test that drives the whole
product (registries, driver, engine, tables, run log) the way users do. Expected values are
computed from the landing files or from the tables themselves, never copied from a previous run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
REGISTRY = REPO / "examples" / "retail" / "contracts"
LANDING = REPO / "examples" / "retail" / "landing"
DAYS = ("2026-11-01", "2026-11-02")

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@dataclass(frozen=True)
class Mesh:
    catalog: str
    run_log: Path


def _driver(run_log: Path, *args: str) -> None:
    from lakelogic.cli.driver_cmd import app

    common = [
        "--registry",
        str(REGISTRY),
        "--max-workers",
        "2",
        "--no-live",
        "--run-log-database",
        str(run_log),
    ]
    result = CliRunner().invoke(app, [*common, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _malformed_lines(pattern: str) -> int:
    bad = 0
    for path in LANDING.glob(pattern):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                json.loads(line)
            except json.JSONDecodeError:
                bad += 1
    return bad


@pytest.fixture(scope="module")
def mesh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Mesh:
    """Run both days (bronze, then silver+gold) into the session's warehouse and a temporary run log."""
    from lakelogic.engines.spark.session import default_catalog

    run_log = tmp_path_factory.mktemp("lakelogic_home") / "lakelogic.duckdb"
    for day in DAYS:
        _driver(run_log, "--layers", "bronze", "--window", "none", "--set", f"source.pattern='*_{day}.*'")
        _driver(run_log, "--layers", "silver,gold")
    return Mesh(default_catalog(), run_log)


def test_every_run_reconciles_and_succeeds(mesh: Mesh) -> None:
    from lakelogic.runlog import open_store

    rows = open_store(mesh.run_log).query(last=100)
    assert {r["status"] for r in rows} <= {"succeeded", "no_new_data"}
    assert len({r["contract"] for r in rows}) == 11
    for r in rows:
        produced = r["counts_good"] + r["counts_quarantined"] + r["counts_filtered"]
        assert r["counts_source"] + r["counts_expanded"] == produced, r["contract"]


def test_bronze_quarantines_exactly_the_malformed_json_lines(spark: Any, mesh: Mesh) -> None:
    quarantined = spark.table(f"{mesh.catalog}.quarantine.bronze_pos_orders")
    expected = _malformed_lines("pos/orders/*.jsonl")
    assert expected > 0
    assert quarantined.count() == expected
    errors = {e for row in quarantined.select("_lakelogic_errors").collect() for e in row[0]}
    assert all(e.startswith("Rule failed: malformed_record") for e in errors)


def test_silver_customers_keep_one_valid_row_per_customer(spark: Any, mesh: Mesh) -> None:
    silver = spark.table(f"{mesh.catalog}.silver.crm_customers")
    assert silver.count() == silver.select("customer_id").distinct().count()
    assert silver.filter("email NOT RLIKE '^[a-z0-9._%+-]+@'").count() == 0
    assert silver.filter("segment <> lower(trim(segment)) OR country <> upper(country)").count() == 0
    reasons = {
        e.split(" ")[2]
        for row in spark.table(f"{mesh.catalog}.quarantine.silver_crm_customers")
        .select("_lakelogic_errors")
        .collect()
        for e in row[0]
    }
    assert {"email_format", "signup_date_type", "customer_id_required"} <= reasons


def test_dim_customers_has_closed_versions_after_day_two(spark: Any, mesh: Mesh) -> None:
    dim = spark.table(f"{mesh.catalog}.gold.dim_customers")
    silver_ids = spark.table(f"{mesh.catalog}.silver.crm_customers").select("customer_id").distinct().count()
    assert dim.filter("is_current").count() == silver_ids
    assert dim.filter("is_current").select("customer_id").distinct().count() == silver_ids
    closed = dim.filter("NOT is_current")
    assert closed.count() > 0
    # a closed version ends where the next version of the same customer starts
    gaps = spark.sql(
        f"""
        SELECT c.customer_id FROM {mesh.catalog}.gold.dim_customers c
        LEFT JOIN {mesh.catalog}.gold.dim_customers n
          ON n.customer_id = c.customer_id AND n.version = c.version + 1
        WHERE NOT c.is_current AND (n.customer_id IS NULL OR n.effective_from <> c.effective_to)
        """
    )
    assert gaps.count() == 0


def test_fact_sales_revenue_equals_sold_lines(spark: Any, mesh: Mesh) -> None:
    expected = spark.sql(
        f"""
        SELECT sum(l.line_amount) AS revenue, sum(l.quantity) AS units
        FROM {mesh.catalog}.silver.pos_order_lines l
        JOIN {mesh.catalog}.silver.pos_orders o ON o.order_id = l.order_id
        WHERE o.status NOT IN ('cancelled', 'returned')
        """
    ).first()
    actual = spark.sql(
        f"SELECT sum(revenue) AS revenue, sum(units) AS units FROM {mesh.catalog}.gold.fact_sales"
    ).first()
    assert expected is not None and actual is not None
    assert actual["revenue"] == expected["revenue"]
    assert actual["units"] == expected["units"]
