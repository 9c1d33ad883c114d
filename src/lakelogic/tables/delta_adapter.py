"""Choose how Delta is written: Spark's own Delta (Databricks, delta-spark) or delta-rs commits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakelogic.engines.spark.session import has_native_delta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakelogic.tables.base import TableAdapter
    from lakelogic.tables.target import ResolvedTarget


def delta_adapter(spark: SparkSession, target: ResolvedTarget) -> TableAdapter:
    """Native Delta when the session has it, else Spark-written files committed with delta-rs."""
    if has_native_delta(spark):
        from lakelogic.tables.spark_delta_native import NativeDeltaTable

        return NativeDeltaTable(spark, target)
    from lakelogic.tables.spark_delta_rs import DeltaRsTable

    return DeltaRsTable(spark, target)
