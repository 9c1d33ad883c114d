"""Dataset rules of a run that writes ``output_good`` read the staged good Parquet (no third evaluation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from tests.engines.helpers import contract

pytestmark = pytest.mark.spark

FIELDS: list[dict[str, Any]] = [
    {"name": "id", "type": "integer", "required": True},
    {"name": "name", "type": "string"},
]
QUALITY = {
    "row_rules": [{"name": "name_set", "sql": "name IS NOT NULL"}],
    "dataset_rules": [{"unique": "id"}, {"row_count_between": {"min": 1}}],
}


def _run(spark: Any, tmp_path: Path, rows: list[tuple[Any, ...]], **kwargs: Any) -> Any:
    frame = spark.createDataFrame(rows, "id int, name string")
    return DataProcessor(contract(FIELDS, quality=QUALITY), spark=spark).run(frame, **kwargs)


def _by_name(report: Any) -> dict[str, Any]:
    return {r.name: r for r in report.dataset_rules}


@pytest.mark.parametrize("with_outputs", [True, False])
def test_dataset_rules_see_exactly_the_good_rows(spark: Any, tmp_path: Path, with_outputs: bool) -> None:
    # id 1 twice among the good rows; the quarantined row (id 2, no name) must not count.
    rows = [(1, "a"), (1, "b"), (2, None), (3, "c")]
    outputs = {"output_good": tmp_path / "good", "output_bad": tmp_path / "bad"} if with_outputs else {}
    report = _run(spark, tmp_path, rows, **outputs).report
    assert report.counts.good == 3 and report.counts.quarantined == 1
    rules = _by_name(report)
    assert rules["id_unique"].passed is False and rules["id_unique"].observed == 1
    assert rules["row_count_between"].passed is True and rules["row_count_between"].observed == 3
    if with_outputs:
        assert spark.read.parquet(str(tmp_path / "good")).count() == 3
        assert not list(tmp_path.glob("*staging*"))


def test_dataset_rules_pass_on_unique_good_rows(spark: Any, tmp_path: Path) -> None:
    rows = [(1, "a"), (1, None), (2, "b")]  # the duplicate id is quarantined, so the good ids are unique
    report = _run(spark, tmp_path, rows, output_good=tmp_path / "good").report
    rules = _by_name(report)
    assert rules["id_unique"].passed is True and rules["id_unique"].observed == 0
    assert rules["row_count_between"].observed == 2


@pytest.mark.parametrize("buckets", [1, 3, 64])
def test_unique_screen_bounds_duplicates_and_ignores_null_keys(spark: Any, buckets: int) -> None:
    from lakelogic.engines.spark.dataset_rules import unique_screen

    frame = spark.createDataFrame([(1, "a"), (1, "a"), (1, None), (1, None), (2, "a")], "id int, name string")

    def screen(rows: Any, columns: list[str]) -> int:
        return int(unique_screen(rows, columns, buckets).first()["observed"])

    # (1, a) twice: one duplicate; rows with a NULL key part never count (as COUNT(DISTINCT a, b)).
    assert screen(frame, ["id", "name"]) == 1
    assert screen(frame, ["name"]) == 2
    assert screen(frame.where("name IS NULL"), ["name"]) == 0


def test_unique_screen_counts_duplicates_across_many_keys(spark: Any) -> None:
    from lakelogic.engines.spark.dataset_rules import screen_buckets, unique_screen

    # 5,000 keys, every 7th written twice and every 11th three times: the screen must count them all,
    # whichever buckets the keys fall into.
    keys = spark.range(5000).selectExpr("concat('k', id) AS k", "id")
    extra = (
        keys.where("id % 7 = 0").unionByName(keys.where("id % 11 = 0")).unionByName(keys.where("id % 11 = 0"))
    )
    expected = extra.count()
    assert (
        unique_screen(keys.unionByName(extra), ["k"], screen_buckets(5000 + expected)).first()[0] == expected
    )
    assert screen_buckets(10) == 64 and screen_buckets(100_000_000) > 128


def test_composite_unique_rule_reports_the_exact_duplicate_count(spark: Any, tmp_path: Path) -> None:
    doc = contract(FIELDS, quality={"dataset_rules": [{"unique": ["id", "name"]}]})
    frame = spark.createDataFrame([(1, "a"), (1, "a"), (1, "a"), (2, None), (2, None)], "id int, name string")
    rule = DataProcessor(doc, spark=spark).run(frame, output_good=tmp_path / "good").report.dataset_rules[0]
    assert rule.passed is False and rule.observed == 2


def test_a_query_rule_on_a_column_only_the_write_adds_reports_passed_null(spark: Any) -> None:
    """§10.5: the run does not fail on the unresolved column; the rule is not judged."""
    doc = contract(
        FIELDS,
        primary_key=["id"],
        quality={
            "dataset_rules": [
                {"name": "has_current", "sql": "SELECT count(*) > 0 FROM source WHERE is_current"}
            ]
        },
        materialization={"strategy": "scd2", "scd2": {}},
    )
    report = (
        DataProcessor(doc, spark=spark).run(spark.createDataFrame([(1, "a")], "id int, name string")).report
    )
    assert report.error is None and report.status.value == "succeeded", report.error
    rules = _by_name(report)
    assert rules["has_current"].passed is None and rules["has_current"].observed is None
    assert rules["id_unique"].passed is True, "the other rules are still evaluated"


def test_a_bare_expression_with_a_link_subquery_runs_over_source(spark: Any, tmp_path: Path) -> None:
    """§10.5: a bare expression becomes ``SELECT <expr> FROM source``; links are visible in it (§4)."""
    link = tmp_path / "codes"
    spark.createDataFrame(
        [(1, "active"), (2, "active"), (3, "retired")], "code int, status string"
    ).write.parquet(str(link))
    doc = contract(
        FIELDS,
        links=[{"name": "r", "path": str(link), "type": "parquet", "filter": "status = 'active'"}],
        quality={
            "dataset_rules": [
                {"name": "more_rows_than_codes", "sql": "COUNT(*) > (SELECT COUNT(*) FROM r)"},
                {
                    "name": "unknown_ids",
                    "sql": "COUNT_IF(id NOT IN (SELECT code FROM r))",
                    "must_be_less_than": 3,
                },
            ]
        },
    )
    frame = spark.createDataFrame([(i, "n") for i in range(1, 5)], "id int, name string")
    result = DataProcessor(doc, spark=spark).run(frame)
    observed = {r.name: (r.passed, r.observed) for r in result.report.dataset_rules}
    assert observed == {"more_rows_than_codes": (True, True), "unknown_ids": (True, 2)}, result.report.error


def test_a_dataset_rule_select_returning_several_rows_is_an_error(spark: Any) -> None:
    """§10.5: a `SELECT` returning one value; taking "the first row" would depend on row order."""
    from tests.engines.helpers import run

    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "a", "type": "double"}],
        quality={"dataset_rules": [{"name": "all_positive", "sql": "SELECT a > 0 FROM source"}]},
    )
    result = run(spark, doc, [{"id": 1, "a": 1.0}, {"id": 2, "a": -1.0}])
    assert result.report.status == "failed"
    assert result.report.error is not None and result.report.error.type == "plan"
    assert "quality.dataset_rules[0]" in result.report.error.message
    assert "returned more than one row" in result.report.error.message
