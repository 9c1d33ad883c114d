"""A keyed write's batch projections are SQL text where the types allow and Column objects otherwise; both
must give the same columns, types and values, whatever the column names."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lakelogic.tables.spark_batch import atomic_type_name, projected, quote_ident
from lakelogic.tables.spark_evolution import EvolutionPlan, align_batch
from lakelogic.tables.spark_scd2_versions import shape_batch
from lakelogic.tables.spec import Scd2Spec

pytestmark = pytest.mark.spark


def test_names_are_always_backticked_and_nested_types_have_no_text_name() -> None:
    assert quote_ident("current_date") == "`current_date`"
    assert quote_ident("a`b") == "`a``b`"
    assert atomic_type_name(TimestampType()) == "timestamp_ltz"
    assert atomic_type_name(DecimalType(12, 2)) == "decimal(12,2)"
    assert atomic_type_name(ArrayType(StringType())) is None


def test_a_projection_with_an_expression_it_cannot_write_is_left_to_the_caller(spark: Any) -> None:
    frame = spark.createDataFrame([(1,)], "id INT")
    assert projected(frame, ["id", None]) is None
    done = projected(frame, ["id", "CAST(NULL AS bigint) AS `x`"])
    assert done is not None and done.schema["x"].dataType == LongType()


def _target(nested: bool) -> StructType:
    fields = [
        StructField("current_date", IntegerType()),  # a function's name, as a column
        StructField("amount.total", DecimalType(10, 2)),  # a dot in the name
        StructField("missing", TimestampType()),
    ]
    if nested:
        fields.append(StructField("tags", ArrayType(StringType())))
    return StructType(fields)


def _recording_projected(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[bool]:
    """Which path each projection took: True for SQL text."""
    taken: list[bool] = []

    def recording(frame: Any, expressions: list[str | None]) -> Any:
        result = projected(frame, expressions)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(module, "projected", recording)
    return taken


@pytest.mark.parametrize("nested", [False, True], ids=["as text", "as columns"])
def test_align_batch_casts_orders_and_fills_the_same_either_way(
    spark: Any, nested: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.tables import spark_evolution

    taken = _recording_projected(monkeypatch, spark_evolution)
    batch = spark.createDataFrame([("2.5", 7)], "`amount.total` STRING, `current_date` BIGINT")
    aligned = align_batch(batch, _target(nested), EvolutionPlan())
    assert taken == [not nested]
    assert [(f.name, f.dataType) for f in aligned.schema.fields] == [
        (f.name, f.dataType) for f in _target(nested).fields
    ]
    row = aligned.collect()[0]
    assert row["current_date"] == 7
    assert str(row["amount.total"]) == "2.50"
    assert row["missing"] is None


@pytest.mark.parametrize("nested", [False, True], ids=["as text", "as columns"])
def test_shape_batch_adds_typed_nulls_for_the_scd_columns(
    spark: Any, nested: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakelogic.tables import spark_scd2_versions

    taken = _recording_projected(monkeypatch, spark_scd2_versions)
    batch = spark.createDataFrame([(1, "x")], "`order` INT, `current_date` STRING")
    scd = Scd2Spec(business_key=("order",))
    types: dict[str, DataType] = {"valid_from": TimestampType(), "current_date": StringType()}
    if nested:
        types["history"] = ArrayType(StringType())
    shaped = shape_batch(batch, scd, types)
    assert taken == [not nested]
    assert shaped.columns == ["order", "current_date", "valid_from", *(["history"] if nested else [])]
    assert shaped.schema["valid_from"].dataType == TimestampType()
    row = shaped.collect()[0]
    assert row["order"] == 1 and row["current_date"] is None and row["valid_from"] is None
