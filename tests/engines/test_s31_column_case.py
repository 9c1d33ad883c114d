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
