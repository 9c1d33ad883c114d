"""Fixtures for table tests: a fresh target per test in each format, and readers that do not go through
the code under test (Iceberg via Spark SQL, Delta via the ``deltalake`` package, Parquet via Spark)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lakelogic.tables.target import ResolvedTarget

FORMATS = ("iceberg", "delta", "parquet")


@pytest.fixture
def make_target(tmp_path: Path) -> Callable[[str], ResolvedTarget]:
    def make(fmt: str, name: str = "t") -> ResolvedTarget:
        if fmt == "iceberg":
            return ResolvedTarget("table", f"lakelogic.tests.{name}_{uuid.uuid4().hex[:8]}", "iceberg")
        return ResolvedTarget("path", str(tmp_path / f"{name}_{fmt}"), fmt)

    return make


def read_back(spark: Any, target: ResolvedTarget) -> list[dict[str, Any]]:
    """Rows of a target read independently of the adapter (sorted for comparison)."""
    if target.format == "iceberg":
        rows = [r.asDict() for r in spark.table(target.name).collect()]
    elif target.format == "delta":
        from deltalake import DeltaTable

        rows = DeltaTable(target.name).to_pyarrow_table().to_pylist()
    elif not any(p for p in Path(target.name).rglob(f"*.{target.format}") if "/_" not in str(p)):
        rows = []  # Spark cannot infer the schema of a directory without data files
    else:
        reader = spark.read.format(target.format)
        if target.format == "parquet":  # files written before an added column lack it: merge footers
            reader = reader.option("mergeSchema", "true")
        rows = [r.asDict() for r in reader.load(target.name).collect()]
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in sorted(r)))
