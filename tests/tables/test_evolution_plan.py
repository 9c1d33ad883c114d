"""Write-side schema evolution decisions (SEMANTICS §7.1) on Spark types; no Spark session needed."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import (
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lakelogic.errors import SchemaEvolutionError
from lakelogic.tables.spark_evolution import evolved_schema, plan_evolution


def _schema(**cols: object) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in cols.items()])  # type: ignore[arg-type]


TARGET = _schema(id=IntegerType(), amount=DecimalType(10, 2), day=DateType(), note=StringType())


def test_new_column_added_except_under_strict() -> None:
    batch = _schema(
        id=IntegerType(), amount=DecimalType(10, 2), day=DateType(), note=StringType(), extra=LongType()
    )
    plan = plan_evolution(TARGET, batch, policy="append", strategy="append")
    assert [f.name for f in plan.added] == ["extra"]
    assert evolved_schema(TARGET, batch, plan).fieldNames() == ["id", "amount", "day", "note", "extra"]
    with pytest.raises(SchemaEvolutionError, match="extra"):
        plan_evolution(TARGET, batch, policy="strict", strategy="append")


def test_missing_column_is_null_except_under_strict() -> None:
    batch = _schema(id=IntegerType(), amount=DecimalType(10, 2), day=DateType())
    assert plan_evolution(TARGET, batch, policy="allow", strategy="append").missing == ["note"]
    with pytest.raises(SchemaEvolutionError, match="note"):
        plan_evolution(TARGET, batch, policy="strict", strategy="append")


def test_safe_widening_allowed_by_compatible_refused_by_append() -> None:
    batch = _schema(id=LongType(), amount=DecimalType(12, 2), day=TimestampType(), note=StringType())
    plan = plan_evolution(TARGET, batch, policy="compatible", strategy="append")
    assert [(n, str(a), str(b)) for n, a, b in plan.widened] == [
        ("id", "IntegerType()", "LongType()"),
        ("amount", "DecimalType(10,2)", "DecimalType(12,2)"),
        ("day", "DateType()", "TimestampType()"),
    ]
    with pytest.raises(SchemaEvolutionError) as err:
        plan_evolution(TARGET, batch, policy="append", strategy="append")
    assert "'id'" in str(err.value) and "int" in str(err.value) and "bigint" in str(err.value)


def test_incompatible_type_cast_under_merge_error_under_compatible() -> None:
    batch = _schema(id=StringType(), amount=DecimalType(10, 2), day=DateType(), note=StringType())
    plan = plan_evolution(TARGET, batch, policy="merge", strategy="merge")
    assert plan.casts == {"id": IntegerType()} and plan.checked_casts == {"id"}
    with pytest.raises(SchemaEvolutionError, match="target type int vs batch type string"):
        plan_evolution(TARGET, batch, policy="compatible", strategy="append")


def test_narrower_batch_is_cast_up_except_under_strict_and_append() -> None:
    """§7.1: a type change at write is an error under strict and append, even a lossless one."""
    target = _schema(id=LongType())
    for policy in ("compatible", "merge", "allow"):
        plan = plan_evolution(target, _schema(id=IntegerType()), policy=policy, strategy="append")
        assert plan.casts == {"id": LongType()} and not plan.checked_casts and not plan.widened
    for policy in ("strict", "append"):
        with pytest.raises(SchemaEvolutionError, match="column 'id': target type bigint vs batch type int"):
            plan_evolution(target, _schema(id=IntegerType()), policy=policy, strategy="append")


def test_overwrite_policy_replaces_schema_only_for_overwrite_strategy() -> None:
    batch = _schema(id=StringType())
    assert plan_evolution(TARGET, batch, policy="overwrite", strategy="overwrite").replace_schema
    plan = plan_evolution(TARGET, batch, policy="overwrite", strategy="append")
    assert not plan.replace_schema and plan.warnings and plan.casts == {"id": IntegerType()}
