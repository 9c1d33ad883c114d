"""A dataset rule Spark cannot evaluate is a plan error naming the rule and its YAML path (a helper's
audit): before, the run failed with "Spark rejected the contract's SQL" and an internal alias."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"unique": ["id", "order_id"]}, "order_id"),
        ({"null_ratio": {"field": "amout", "max": 0.1}}, "amout"),
        ({"name": "all_positive", "sql": "bool_and(amount > 0)", "must_be_between": [0, 1]}, "boolean"),
        ({"name": "two", "sql": "SELECT count(*), 1 FROM source", "must_be_greater_than": 0}, "two"),
        ({"name": "highest", "sql": "max(amout) > 0"}, "amout"),
    ],
)
def test_a_dataset_rule_spark_rejects_names_the_rule(spark: Any, rule: dict[str, Any], expected: str) -> None:
    from lakelogic.api import DataProcessor

    doc = {
        "version": "1.0.0",
        "info": {"title": "ds", "table_name": "ds"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "amount", "type": "integer"}]},
        "quality": {"dataset_rules": [{"row_count_between": {"min": 1}}, rule]},
    }
    source = spark.createDataFrame([(1, 5), (2, 7)], "id int, amount int")
    report = DataProcessor(doc, spark=spark).run(source).report
    assert report.status == "failed" and report.error is not None
    message = report.error.message
    assert "quality.dataset_rules[1]" in message and "dataset rule" in message, message
    assert expected in message and "__ll_" not in message, message
