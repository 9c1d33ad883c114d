"""A source column named like a model field in another case is that field (Spark's name resolution)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark


def test_a_source_column_in_another_case_is_the_model_field(spark: Any) -> None:
    """It failed with AMBIGUOUS_REFERENCE: a NULL `amount` was added beside the source's `Amount`."""
    fields = [{"name": "id", "type": "integer"}, {"name": "amount", "type": "double", "required": True}]
    doc = contract(fields, quality={"row_rules": [{"name": "positive", "sql": "amount > 0"}]})
    frame = spark.createDataFrame([(1, "2.5"), (2, "-1")], "id int, Amount string")
    result = run(spark, doc, frame)
    assert result.report.error is None, result.report.error
    assert result.good.columns == ["id", "amount"]
    assert rows_of(result.good, "id", "amount") == [(1, 2.5)]
    assert result.report.counts.quarantined == 1


def test_array_text_with_something_after_the_array_is_a_cast_failure(spark: Any) -> None:
    """§5.3: `[1,2] x` is no JSON array (it was read as [1, 2], the rest dropped)."""
    doc = contract([{"name": "id", "type": "integer"}, {"name": "r", "type": "array<integer>"}])
    rows = [{"id": 1, "r": "[1,2]"}, {"id": 2, "r": "[1,2] x"}, {"id": 3, "r": " [3] "}]
    result = run(spark, doc, rows)
    assert rows_of(result.good, "id") == [(1,), (3,)]
    [bad] = result.bad.collect()
    assert bad["id"] == 2 and bad["_lakelogic_errors"][0].startswith("Rule failed: r_type (cannot cast")
