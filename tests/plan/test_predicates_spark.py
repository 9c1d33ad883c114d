"""The SQL the compiler writes is valid Spark SQL with the intended meaning (one small Spark check).

Everything else in tests/plan runs without Spark; this guards the Spark-specific details the golden
strings cannot: backslash escaping in RLIKE literals, typed literals, composite COUNT(DISTINCT), intervals.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.builders import compile_doc, contract_doc, dataset_rules

pytestmark = pytest.mark.spark


def test_compiled_rules_evaluate_as_intended_on_spark(spark: Any) -> None:
    from pyspark.sql import functions as F

    model = {
        "fields": [
            {"name": "id", "type": "integer", "required": True, "accepted_values": [1, 2, 3]},
            {"name": "code", "type": "string", "max_length": 3},
            {"name": "day", "type": "date", "accepted_values": ["2024-01-31"]},
            {"name": "amount", "type": "double", "min": 0, "max": 10},
        ]
    }
    quality = {
        "row_rules": [
            {"regex_match": {"field": "code", "pattern": r"^\d+[a-z]?$"}},
            {"range": {"field": "amount", "min": 0, "inclusive": False}},
            {"name": "amount_half", "sql": "amount / 2", "must_be_between": [0, 2]},
            {"lifecycle_window": {"field": "day", "window": "36500d"}},
        ],
        "dataset_rules": [{"unique": ["id", "code"]}, {"null_ratio": {"field": "code", "max": 0.5}}],
    }
    plan = compile_doc(contract_doc(model=model, quality=quality))
    rows = [
        (1, "12", "2024-01-31", 2.0),  # passes everything
        (2, "1x", "2024-01-31", 0.0),  # regex ok; amount 0 fails the exclusive range
        (4, "abcd", "2024-02-01", 11.0),  # fails accepted_values, max_length, regex, day, range
        (None, None, None, None),  # NULLs pass the generated rules but `required`; a declared rule fails
        (1, "12", "2024-01-31", 5.0),  # duplicate (id, code)
        (3, None, "2024-01-31", 1.0),  # NULL key part: ignored by unique
    ]
    frame = spark.createDataFrame(rows, "id INT, code STRING, day STRING, amount DOUBLE").withColumn(
        "day", F.to_date("day")
    )
    checks = [F.coalesce(F.expr(r.predicate), F.lit(False)).alias(r.name) for r in plan.row_rules]
    result = [row.asDict() for row in frame.select(*checks).collect()]
    failed = [sorted(name for name, ok in row.items() if not ok) for row in result]
    assert failed == [
        [],
        ["amount_range_2"],
        ["amount_half", "amount_range", "code_max_length", "code_regex_match", "day_accepted_values",
         "id_accepted_values"],
        ["amount_half", "id_required"],
        ["amount_half"],
        [],
    ]  # fmt: skip

    ds = dataset_rules(plan)
    frame.createOrReplaceTempView("source")
    try:
        observed = spark.sql(
            "SELECT " + ", ".join(f"{r.aggregate_sql} AS `{r.name}`" for r in ds.values()) + " FROM source"
        ).first()
    finally:  # the session is shared: a view named `source` must not outlive this test
        spark.catalog.dropTempView("source")
    assert observed is not None
    assert observed["id_code_unique"] == 1
    assert observed["code_null_ratio"] == pytest.approx(2 / 6)
    passed = spark.sql(
        f"SELECT {ds['id_code_unique'].check_sql.replace('observed', '1')} AS u, "
        f"{ds['code_null_ratio'].check_sql.replace('observed', str(2 / 6))} AS n"
    ).first()
    assert passed is not None and (passed["u"], passed["n"]) == (False, True)


def test_bounds_and_accepted_values_take_the_field_type(spark: Any) -> None:
    """§10.3 "values cast to the field type": a float column holds 0.1 as a float, so its literals are
    floats too; a date literal may be written YYYYMMDD, as casting accepts (§5.3)."""
    model = {
        "fields": [
            {"name": "f", "type": "float", "accepted_values": [0.1, 2.5], "max": 0.1},
            {"name": "day", "type": "date", "accepted_values": ["20240131", 20240201], "min": "20240131"},
        ]
    }
    quality = {"row_rules": [{"range": {"field": "f", "min": 0.1, "max": 0.1}}]}
    plan = compile_doc(contract_doc(model=model, quality=quality))
    frame = spark.sql(
        "SELECT CAST(0.1 AS FLOAT) AS f, DATE'2024-01-31' AS day "
        "UNION ALL SELECT CAST(2.5 AS FLOAT), DATE'2024-02-02'"
    )
    checks = [f"coalesce({r.predicate}, false) AS `{r.name}`" for r in plan.row_rules]
    rows = [row.asDict() for row in frame.selectExpr(*checks).collect()]
    assert rows[0] == {name: True for name in rows[0]}, rows[0]
    assert sorted(name for name, ok in rows[1].items() if not ok) == [
        "day_accepted_values",
        "f_range",
        "f_range_2",
    ]
