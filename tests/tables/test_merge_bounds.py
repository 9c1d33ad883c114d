"""Key-range bounds that prune the MERGE target scan — literal rendering, no Spark session needed."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")

from lakelogic.tables.spark_merge import bounds_predicate, sql_literal


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (7, "7"),
        (2**40, f"{2**40}L"),
        (1.5, "1.5"),
        (Decimal("12.30"), "12.30BD"),
        (date(2024, 1, 31), "DATE '2024-01-31'"),
        ("O'Brien\\x", "'O\\'Brien\\\\x'"),
        (float("nan"), None),
        (True, None),
        (datetime(2024, 1, 1, tzinfo=UTC), None),
    ],
)
def test_sql_literal(value: object, literal: str | None) -> None:
    assert sql_literal(value) == literal


def test_bounds_predicate_quotes_columns() -> None:
    assert bounds_predicate({"id": (1, 9), "odd`name": ("a", "b")}) == (
        "t.`id` BETWEEN 1 AND 9 AND t.`odd``name` BETWEEN 'a' AND 'b'"
    )
    assert bounds_predicate({}) == ""
