"""Malformed regular expressions in row rules (a helper's audit): a plan error naming the rule and its
YAML path before anything is read, not a raw ``PatternSyntaxException`` from the first task."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.errors import PlanError

pytestmark = pytest.mark.spark


def _doc(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Patterns", "table_name": "patterns"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "code", "type": "string"}]},
        "quality": {"row_rules": [{"sql": "id > 0", "name": "positive"}, rule]},
    }


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        ({"regex_match": {"field": "code", "pattern": "^[A-Z{2}$"}}, "quality.row_rules[1]"),
        ({"name": "group", "sql": "code RLIKE '(unclosed'"}, "quality.row_rules[1]"),
        ({"name": "extract", "sql": "regexp_extract(code, 'a(', 0) = ''"}, "quality.row_rules[1]"),
    ],
)
def test_a_malformed_pattern_fails_the_run_naming_the_rule(
    spark: Any, rule: dict[str, Any], path: str
) -> None:
    from lakelogic.api import DataProcessor

    source = spark.createDataFrame([(1, "AB")], "id int, code string")
    result = DataProcessor(_doc(rule), spark=spark).run(source)
    assert result.report.status == "failed" and result.report.error is not None
    message = result.report.error.message
    assert "invalid regular expression" in message and path in message, message
    assert "Exception" not in message.split("invalid regular expression", 1)[0]


def test_valid_java_patterns_pass_whatever_python_thinks(spark: Any) -> None:
    """Java syntax Python's ``re`` lacks (``\\p{L}``, possessive quantifiers) is valid here: the check asks
    the JVM, so it refuses exactly what Spark would."""
    from lakelogic.api import DataProcessor
    from lakelogic.engines.spark.regex_check import refuse_invalid_patterns

    rule = {"name": "letters", "sql": "code RLIKE '^\\\\p{L}++$'"}
    source = spark.createDataFrame([(1, "Ab"), (2, "1")], "id int, code string")
    result = DataProcessor(_doc(rule), spark=spark).run(source)
    assert result.report.status != "failed", result.report.error
    assert result.report.counts.quarantined == 1
    with pytest.raises(PlanError, match=r"x\.y"):
        refuse_invalid_patterns(spark, [("r", "split(code, '[') IS NULL", "x.y")])


def test_a_pattern_computed_per_row_that_java_rejects_is_a_failed_run(spark: Any) -> None:
    """Not a literal, so not checked before the run: the task's ``PatternSyntaxException`` becomes the
    failed run's readable error instead of a raw crash."""
    from lakelogic.api import DataProcessor

    rule = {"name": "computed", "sql": "code RLIKE concat('(', code)"}
    source = spark.createDataFrame([(1, "AB")], "id int, code string")
    result = DataProcessor(_doc(rule), spark=spark).run(source)
    assert result.report.status == "failed" and result.report.error is not None
    assert "invalid regular expression: Unclosed group" in result.report.error.message
