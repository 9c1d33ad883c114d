"""Casts by type name keep the type they name whatever ``spark.sql.timestampType`` says."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, StringType, TimestampNTZType, TimestampType

from lakelogic.tables.spark_batch import cast_to, cast_type_name

pytestmark = pytest.mark.spark


def test_names_of_atomic_types() -> None:
    assert cast_type_name(TimestampType()) == "timestamp_ltz"
    assert cast_type_name(TimestampNTZType()) == "timestamp_ntz"
    assert cast_type_name(DecimalType(12, 2)) == "decimal(12,2)"
    assert cast_type_name(StringType()) == "string"


def test_a_cast_to_timestamp_stays_local_time_in_an_ntz_session(spark: Any) -> None:
    previous = spark.conf.get("spark.sql.timestampType", "TIMESTAMP_LTZ")
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        frame = spark.range(1).select(
            cast_to(F.lit("2024-01-01 00:00:00"), TimestampType()).alias("ltz"),
            F.expr(f"CAST('2024-01-01' AS {cast_type_name(TimestampType())})").alias("sql"),
        )
        assert [f.dataType for f in frame.schema.fields] == [TimestampType(), TimestampType()]
    finally:
        spark.conf.set("spark.sql.timestampType", previous)
