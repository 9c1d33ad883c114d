"""Issue 3: an Iceberg table LakeLogic writes is readable by pyiceberg as well as Spark, merge-on-read
deletes included."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from lakelogic.api import DataProcessor

pytestmark = pytest.mark.spark


def _metadata_file(spark: Any, table: str) -> str:
    files = spark.sql(
        f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).first()
    assert files is not None
    return str(files["file"])


def test_a_merged_iceberg_table_reads_the_same_in_pyiceberg(spark: Any) -> None:
    from pyiceberg.table import StaticTable

    table = f"lakelogic.tests.pyiceberg_{uuid.uuid4().hex[:8]}"
    doc = {
        "version": "1.0.0",
        "info": {"title": "Accounts"},
        "dataset": f"accounts_{uuid.uuid4().hex[:8]}",
        "model": {
            "fields": [
                {"name": "id", "type": "integer", "required": True},
                {"name": "balance", "type": "decimal(12,2)"},
                {"name": "opened", "type": "date"},
                {"name": "seen_at", "type": "timestamp"},
            ]
        },
        "primary_key": ["id"],
        "materialization": {"strategy": "merge", "format": "iceberg", "target_path": table},
    }
    processor = DataProcessor(doc, spark=spark)
    schema = "id int, balance string, opened string, seen_at string"
    first = [
        (1, "10.50", "2026-01-01", "2026-01-01T10:00:00Z"),
        (2, "20.00", "2026-01-02", "2026-01-02T10:00:00Z"),
    ]
    second = [
        (2, "25.00", "2026-01-02", "2026-02-01T10:00:00Z"),
        (3, "1.25", "2026-02-01", "2026-02-01T11:00:00Z"),
    ]
    for rows in (first, second):
        report = processor.run(spark.createDataFrame(rows, schema), materialize=True).report
        assert report.error is None, report.error
    deletes = spark.sql(f"SELECT count(*) AS n FROM {table}.delete_files").first()
    assert deletes is not None and deletes["n"] >= 1, "the update should be a merge-on-read position delete"

    arrow = StaticTable.from_metadata(_metadata_file(spark, table)).scan().to_arrow()
    from_pyiceberg = sorted((r["id"], str(r["balance"]), str(r["opened"])) for r in arrow.to_pylist())
    from_spark = sorted((r["id"], str(r["balance"]), str(r["opened"])) for r in spark.table(table).collect())
    assert (
        from_pyiceberg
        == from_spark
        == [(1, "10.50", "2026-01-01"), (2, "25.00", "2026-01-02"), (3, "1.25", "2026-02-01")]
    )
    assert str(arrow.schema.field("seen_at").type).startswith("timestamp")
