"""Shared fixtures: one session-scoped local Spark session for every Spark test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark (local[2], tiny shuffle, UI off) with the embedded Iceberg catalog."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    warehouse = tmp_path_factory.mktemp("warehouse")
    os.environ["LAKELOGIC_WAREHOUSE"] = str(warehouse)
    from lakelogic.engines.spark.session import local_spark_conf

    builder = pyspark_sql.SparkSession.builder
    for key, value in local_spark_conf("local[2]", for_tests=True).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "olc").is_dir():
        pytest.skip(f"../shared is absent ({SHARED}); conformance data is read from there at test time")
    return SHARED


@pytest.fixture(scope="session", autouse=True)
def _private_lakelogic_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run-log rows and approval staging of the suite go to a temporary LAKELOGIC_HOME, never into the
    checkout's .lakelogic/ (API runs with materialize=True record themselves)."""
    previous = {k: os.environ.get(k) for k in ("LAKELOGIC_HOME", "LAKELOGIC_SCRATCH_DIR")}
    os.environ["LAKELOGIC_HOME"] = str(tmp_path_factory.mktemp("lakelogic_home"))
    # staged rows are keyed by run id, and tests use fixed run ids: two suites must not share a scratch root
    os.environ["LAKELOGIC_SCRATCH_DIR"] = str(tmp_path_factory.mktemp("lakelogic_scratch"))
    yield
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
