"""Regex extraction (SEMANTICS §20) with Spark's own regular expressions (the canonical dialect, §0)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark

FIELDS = [
    {"name": "id", "type": "integer"},
    {"name": "note", "type": "string"},
    {"name": "s", "type": "string"},
]


@pytest.mark.parametrize(("pattern", "value"), [(r"\p{Alpha}+", "ab"), (r"(?<num>\d+)", "12")])
def test_java_regex_syntax_extracts(spark: Any, pattern: str, value: str) -> None:
    doc = contract(
        FIELDS, extraction={"provider": "regex", "text_column": "note", "patterns": {"s": pattern}}
    )
    result = run(spark, doc, [{"id": 1, "note": "ab12"}])
    assert rows_of(result.good, "s") == [(value,)], result.report.error


def test_a_pattern_java_cannot_compile_is_a_plan_error_naming_it(spark: Any) -> None:
    doc = contract(
        FIELDS, extraction={"provider": "regex", "text_column": "note", "patterns": {"s": r"(?P<n>\d)"}}
    )
    result = run(spark, doc, [{"id": 1, "note": "ab12"}])
    assert result.report.error is not None and result.report.error.type == "plan"
    assert "extraction.patterns.s" in result.report.error.message


def test_an_output_named_like_a_source_column_in_another_case_replaces_it(spark: Any) -> None:
    """§20: a same-named column is replaced; `S` and `s` are one name to Spark (it failed as ambiguous)."""
    doc = contract(FIELDS, extraction={"provider": "regex", "text_column": "note", "patterns": {"s": r"\d+"}})
    frame = spark.createDataFrame([(1, "ab12", "old")], "id int, note string, S string")
    result = run(spark, doc, frame)
    assert result.report.error is None, result.report.error
    assert rows_of(result.good, "s") == [("12",)]
