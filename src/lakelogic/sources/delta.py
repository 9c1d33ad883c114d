"""Delta tables as sources/links: Spark's own Delta reader when the session has it, else delta-rs.

The delta-rs path goes through Arrow on the driver, so it is only meant for small tables (reference
links, conformance targets); large Delta sources need a Delta-enabled Spark session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakelogic.errors import MissingDependencyError, SourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _session_has_delta(spark: SparkSession) -> bool:
    conf = spark.conf
    ext = conf.get("spark.sql.extensions", "") or ""
    catalog = conf.get("spark.sql.catalog.spark_catalog", "") or ""
    return "io.delta" in ext or "DeltaCatalog" in catalog


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    if _session_has_delta(spark):
        return spark.read.format("delta").load(path)
    try:
        from deltalake import DeltaTable
    except ImportError as exc:
        raise MissingDependencyError("reading Delta without Delta-enabled Spark needs `deltalake`") from exc
    try:
        table = DeltaTable(path).to_pyarrow_table()
    except Exception as exc:  # converted into a source error naming the path
        raise SourceError(f"cannot read Delta table at {path}: {exc}") from exc
    return spark.createDataFrame(table.to_pandas())
