"""SQL helpers: identifiers, literals, parsing errors, and the columns an expression reads."""

from __future__ import annotations

import pytest

from lakelogic.errors import PlanError
from lakelogic.plan.sqlutil import columns_read, is_query, parse_sql, quote_ident, sql_literal, tables_read
from lakelogic.types import parse_type


def test_quote_ident() -> None:
    assert quote_ident("amount") == "amount"
    assert quote_ident("order") == "`order`"
    assert quote_ident("unit price") == "`unit price`"
    assert quote_ident("a`b") == "`a``b`"
    assert quote_ident("1st") == "`1st`"


@pytest.mark.parametrize(
    ("value", "type_name", "expected"),
    [
        ("3", "int", "3"),
        (3.0, "bigint", "3"),
        ("2.5", "double", "2.5"),
        (7, "decimal(10,2)", "7"),
        ("yes", "boolean", "TRUE"),
        (0, "boolean", "FALSE"),
        (12, "string", "'12'"),
        ("O'Neil", "string", "'O\\'Neil'"),
        ("C:\\tmp", "string", "'C:\\\\tmp'"),
        ("2024-01-31", "date", "DATE '2024-01-31'"),
        ("2024-01-31T10:00:00Z", "timestamp", "TIMESTAMP '2024-01-31T10:00:00Z'"),
        ([1, "a"], "json", "'[1,\"a\"]'"),
    ],
)
def test_typed_literals(value: object, type_name: str, expected: str) -> None:
    assert sql_literal(value, parse_type(type_name)) == expected


@pytest.mark.parametrize(
    ("value", "type_name"), [("3.5", "int"), ("x", "double"), ("maybe", "boolean"), (True, "int")]
)
def test_literals_that_do_not_fit_raise(value: object, type_name: str) -> None:
    with pytest.raises(ValueError):
        sql_literal(value, parse_type(type_name))


def test_untyped_literals() -> None:
    assert [sql_literal(v) for v in (None, True, 5, 2.0, 0.25, "a")] == [
        "NULL",
        "TRUE",
        "5",
        "2",
        "0.25",
        "'a'",
    ]


def test_columns_read() -> None:
    tree = parse_sql(
        "address.city IS NOT NULL AND source.z > 1 AND exists(arr, v -> v.k > y) AND x IN (SELECT q FROM r)",
        what="rule 'r'",
        yaml_path="quality.row_rules[0].sql",
    )
    assert columns_read(tree) == ("address", "z", "arr", "y", "x")
    assert tables_read(tree) == ("r",)


def test_parse_errors_and_queries() -> None:
    with pytest.raises(PlanError) as info:
        parse_sql("a >", what="rule 'bad'", yaml_path="quality.row_rules[2].sql")
    assert info.value.yaml_path == "quality.row_rules[2].sql" and "rule 'bad'" in str(info.value)
    with pytest.raises(PlanError, match="empty"):
        parse_sql("  ", what="rule 'e'", yaml_path="x")
    with pytest.raises(PlanError, match="one SQL"):
        parse_sql("SELECT 1; SELECT 2", what="rule 'two'", yaml_path="x")
    assert is_query(parse_sql("WITH a AS (SELECT 1 AS v) SELECT v FROM a", what="q", yaml_path="x"))
    assert not is_query(parse_sql("count(*) > 0", what="q", yaml_path="x"))
