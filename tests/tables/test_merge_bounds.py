"""The MERGE ON clause: key-range bounds that prune the target scan (literal rendering) and ranged match
columns."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from lakelogic.tables.spark_merge import bounds_predicate, change_set_update_sql, sql_literal


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (7, "7"),
        (2**40, f"{2**40}L"),
        (1.5, "1.5"),
        (Decimal("12.30"), "12.30BD"),
        (date(2024, 1, 31), "DATE '2024-01-31'"),
        ("Zoë 7", "'Zoë 7'"),
        # an escape reads differently under spark.sql.parser.escapedStringLiterals: no bound instead
        ("O'Brien", None),
        ("a\\b", None),
        ("${spark.app.name}", None),  # Spark substitutes variables in SQL text
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
    assert bounds_predicate({"id": (1, 9)}, alias="") == "`id` BETWEEN 1 AND 9"


def test_ranged_match_column_is_compared_outside_the_hash_key() -> None:
    sql = change_set_update_sql(
        "cat.db.t", "v", columns=["k", "from", "x"], match=("k", "from"), ranged=("from",)
    )
    assert "ON t.`k` = s.`k` AND t.`from` >= s.`from` AND t.`from` <= s.`from` WHEN MATCHED" in sql
    plain = change_set_update_sql("cat.db.t", "v", columns=["k", "from", "x"], match=("k", "from"))
    assert "ON t.`k` = s.`k` AND t.`from` = s.`from` WHEN MATCHED" in plain
    with pytest.raises(ValueError, match="equality"):
        change_set_update_sql("cat.db.t", "v", columns=["k", "x"], match=("k",), ranged=("k",))


def test_ranged_comparison_matches_exactly_the_pairs_equality_matches(spark: SparkSession) -> None:
    """NULLs match nothing, NaN matches NaN, close timestamps do not match: the same pairs as ``=``."""
    rows = [
        (1, 1.0, datetime(2024, 1, 1, 0, 0, 0)),
        (1, float("nan"), datetime(2024, 1, 1, 0, 0, 0, 1)),
        (2, None, None),
        (3, -0.0, datetime(2024, 5, 1)),
    ]
    probe = [*rows, (3, 0.0, datetime(2024, 5, 1)), (1, 1.0, datetime(2024, 1, 1, 0, 0, 0, 1))]
    schema = "k int, f double, ts timestamp"
    spark.createDataFrame(rows, schema).createOrReplaceTempView("ranged_t")
    spark.createDataFrame(probe, schema).createOrReplaceTempView("ranged_s")

    def pairs(on: str) -> list[tuple[object, ...]]:
        found = spark.sql(f"SELECT t.*, s.* FROM ranged_t t JOIN ranged_s s ON {on}").collect()
        return sorted(tuple(map(repr, r)) for r in found)

    for column in ("f", "ts"):
        equal = pairs(f"t.k = s.k AND t.{column} = s.{column}")
        ranged = pairs(f"t.k = s.k AND t.{column} >= s.{column} AND t.{column} <= s.{column}")
        assert ranged == equal
        assert equal  # the data has matching pairs for both columns
