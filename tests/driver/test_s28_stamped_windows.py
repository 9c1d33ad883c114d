"""A downstream contract reads what its upstream wrote in the same pipeline run (DRIVER §1, §8).

Every run of a pipeline stamps ``_lakelogic_processed_at`` with the pipeline's ``as_of``, which also ends
the downstream contract's window; that window reads the stamp as ``(start, end]``. Before, each contract
stamped its own start time, later than ``as_of``, so silver lagged bronze by one pipeline run.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.driver.test_registry import write

pytestmark = [pytest.mark.spark, pytest.mark.integration]

BRONZE = """\
version: 1.0.0
info: {{title: Events, table_name: {table}, target_layer: bronze}}
dataset: {table}
source:
  type: landing
  path: {landing}
  format: csv
  load_mode: incremental
  watermark_strategy: pipeline_log
model:
  fields:
    - {{name: id, type: string}}
    - {{name: amount, type: integer}}
lineage: {{enabled: true}}
materialization: {{strategy: append, format: iceberg, target_path: {target}}}
"""

SILVER = """\
version: 1.0.0
info: {{title: Events, table_name: {table}, target_layer: silver}}
dataset: {table}
upstream: [{upstream}]
source:
  type: iceberg
  path: {source}
  load_mode: incremental
  watermark_strategy: pipeline_log
model:
  fields:
    - {{name: id, type: string}}
    - {{name: amount, type: integer}}
schema_policy: {{unknown_fields: drop}}
lineage: {{enabled: true}}
materialization: {{strategy: append, format: iceberg, target_path: {target}}}
"""


def _land(landing: Path, name: str, rows: list[tuple[str, int]]) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    lines = ["id,amount", *(f"{i},{a}" for i, a in rows)]
    (landing / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _pipeline(project: Path) -> None:
    from lakelogic.cli.driver_cmd import app

    args = ["--registry", str(project / "c"), "--run-log-database", str(project / "rl.duckdb"), "--no-live"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_silver_reads_the_rows_bronze_wrote_in_the_same_pipeline_run(spark: Any, tmp_path: Path) -> None:
    from lakelogic.engines.spark.session import default_catalog

    suffix = uuid.uuid4().hex[:8]
    namespace = f"{default_catalog()}.s28_stamp_{suffix}"
    bronze_table, silver_table = f"{namespace}.bronze_events", f"{namespace}.silver_events"
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    landing = tmp_path / "landing"
    bronze_name, silver_name = f"bronze_events_{suffix}", f"silver_events_{suffix}"
    write(tmp_path / "c" / "bronze" / "b.yaml",
          BRONZE.format(table=bronze_name, landing=landing, target=bronze_table))  # fmt: skip
    write(tmp_path / "c" / "silver" / "s.yaml",
          SILVER.format(table=silver_name, upstream=bronze_name, source=bronze_table,
                        target=silver_table))  # fmt: skip
    write(tmp_path / "c" / "_registry.yaml", """\
        version: 1
        entries:
          - entity: events
            contracts: {bronze: bronze/b.yaml, silver: silver/s.yaml}
        """)  # fmt: skip
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")

    _land(landing, "events_1.csv", [("a", 1), ("b", 2), ("c", 3)])
    _pipeline(tmp_path)
    silver_ids = {r.id for r in spark.table(silver_table).select("id").collect()}
    assert silver_ids == {"a", "b", "c"}  # not one pipeline run behind bronze
    stamps = spark.table(bronze_table).select("_lakelogic_processed_at").distinct().collect()
    silver_stamps = spark.table(silver_table).select("_lakelogic_processed_at").distinct().collect()
    assert len(stamps) == 1 and stamps == silver_stamps  # one instant: the pipeline's as_of

    _land(landing, "events_2.csv", [("d", 4), ("e", 5)])
    _pipeline(tmp_path)
    silver = spark.table(silver_table)
    # the second window starts after the first pipeline's stamp: nothing is read twice
    assert sorted(r.id for r in silver.select("id").collect()) == ["a", "b", "c", "d", "e"]
    assert silver.select("_lakelogic_processed_at").distinct().count() == 2
