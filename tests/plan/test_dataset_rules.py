"""Dataset rules (SEMANTICS §10.5): aggregate SQL, checks, names, implied primary-key uniqueness."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.errors import PlanError
from lakelogic.types import Severity
from tests.plan.builders import compile_doc, contract_doc, dataset_rules


def rules_of(**blocks: Any) -> dict[str, Any]:
    return dataset_rules(compile_doc(contract_doc(**blocks)))


def test_unique_forms() -> None:
    rules = rules_of(
        quality={
            "dataset_rules": [
                {"unique": "id"},
                {"unique": ["id", "status"], "severity": "warning"},
                {"unique": {"columns": ["email"]}, "name": "email_unique_check", "category": "Keys"},
            ]
        }
    )
    single = rules["id_unique"]
    # rows with a non-NULL key minus distinct non-NULL keys; NULL keys ignored
    assert single.aggregate_sql == "COUNT(id) - COUNT(DISTINCT id)"
    assert (single.check_sql, single.expected, single.category) == ("observed = 0", 0, "uniqueness")
    composite = rules["id_status_unique"]
    assert (
        composite.aggregate_sql
        == "COUNT_IF(id IS NOT NULL AND status IS NOT NULL) - COUNT(DISTINCT id, status)"
    )
    assert composite.severity is Severity.WARNING
    named = rules["email_unique_check"]
    assert named.generated_name == "email_unique"
    assert named.category == "keys"
    assert named.columns == ("email",)


def test_null_ratio_and_row_count() -> None:
    rules = rules_of(
        quality={
            "dataset_rules": [
                {"null_ratio": {"field": "email", "max": 0.25}},
                {"row_count_between": {"min": 1, "max": 1000}},
                {"row_count_between": {"max": 5}, "name": "small"},
            ]
        }
    )
    ratio = rules["email_null_ratio"]
    assert ratio.aggregate_sql == "COALESCE(COUNT_IF(email IS NULL) / NULLIF(COUNT(*), 0), 0.0)"
    assert ratio.check_sql == "COALESCE(observed <= 0.25, FALSE)"
    assert (ratio.category, ratio.expected) == ("completeness", 0.25)
    count = rules["row_count_between"]
    assert (count.aggregate_sql, count.check_sql) == ("COUNT(*)", "observed >= 1 AND observed <= 1000")
    assert count.expected == {"min": 1, "max": 1000}
    assert rules["small"].check_sql == "observed <= 5"


def test_declared_dataset_rules() -> None:
    rules = rules_of(
        quality={
            "dataset_rules": [
                {"name": "has_rows", "sql": "COUNT(*) > 0"},
                {"name": "avg_amount", "sql": "AVG(amount)", "must_be_between": [1, 100]},
                {
                    "name": "few_bad",
                    "sql": "SELECT COUNT(*) FROM source WHERE amount < 0",
                    "must_be_less_than": 3,
                },
            ]
        }
    )
    assert rules["has_rows"].aggregate_sql == "COUNT(*) > 0"
    assert rules["has_rows"].check_sql == "COALESCE(observed, FALSE)"
    assert rules["has_rows"].expected is True
    assert rules["avg_amount"].check_sql == "COALESCE(observed BETWEEN 1 AND 100, FALSE)"
    assert rules["avg_amount"].columns == ("amount",)
    few = rules["few_bad"]
    assert few.aggregate_sql is None and few.query == "SELECT COUNT(*) FROM source WHERE amount < 0"
    assert few.check_sql == "COALESCE(observed < 3, FALSE)"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"name": "n", "sql": "COUNT(*)"}, "number"),
        ({"name": "ci", "sql": "COUNT_IF(amount < 0)"}, "number"),
        ({"name": "b", "sql": "COUNT(*) > 0", "must_be_greater_than": 1}, "boolean"),
        ({"name": "c", "sql": "amount > 0"}, "aggregate"),
        ({"name": "p", "sql": "COUNT(* >"}, "parse"),
    ],
)
def test_invalid_declared_dataset_rules(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError, match=message) as info:
        compile_doc(contract_doc(quality={"dataset_rules": [{"unique": "id"}, rule]}))
    assert info.value.yaml_path is not None and info.value.yaml_path.startswith("quality.dataset_rules[1]")


def test_implied_primary_key_uniqueness() -> None:
    rules = rules_of(primary_key=["id", "status"])
    rule = rules["id_status_unique"]
    assert (rule.severity, rule.category, rule.yaml_path) == (Severity.ERROR, "uniqueness", "primary_key")
    # an explicit unique over the same column set (any order) replaces it
    rules = rules_of(
        primary_key=["id", "status"],
        quality={"dataset_rules": [{"unique": ["status", "id"], "name": "mine", "severity": "warning"}]},
    )
    assert list(rules) == ["mine"]
    # a different column set does not
    rules = rules_of(primary_key=["id"], quality={"dataset_rules": [{"unique": ["id", "status"]}]})
    assert set(rules) == {"id_status_unique", "id_unique"}


def test_scd2_uniqueness_includes_the_change_time_and_flags_write_only_columns() -> None:
    model = {
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "changed_at", "type": "timestamp"},
            {"name": "is_current", "type": "boolean"},
        ]
    }
    rules = rules_of(
        model=model,
        primary_key=["id"],
        materialization={"strategy": "scd2", "scd2": {"timestamp_field": "changed_at"}},
        quality={
            "dataset_rules": [{"name": "one_current", "sql": "COUNT_IF(is_current) <= COUNT(DISTINCT id)"}]
        },
    )
    assert rules["id_changed_at_unique"].columns == ("id", "changed_at")
    assert rules["one_current"].materialization_columns == ("is_current",)
    assert rules["id_changed_at_unique"].materialization_columns == ()


def test_dataset_generated_names_get_suffixes() -> None:
    rules = rules_of(
        quality={"dataset_rules": [{"row_count_between": {"min": 1}}, {"row_count_between": {"max": 9}}]}
    )
    assert list(rules) == ["row_count_between", "row_count_between_2"]
    # generated_name is always the shorthand-derived name, so tools can match either (SEMANTICS §10.5)
    assert {r.generated_name for r in rules.values()} == {"row_count_between"}


def test_a_full_select_reading_a_write_only_column_of_source_is_flagged() -> None:
    model = {"fields": [{"name": "id", "type": "int"}, {"name": "k", "type": "int"}]}
    rules = rules_of(
        model=model,
        primary_key=["id"],
        materialization={"strategy": "scd2", "scd2": {"surrogate_key": "sk"}},
        quality={
            "dataset_rules": [
                {"name": "has_current", "sql": "SELECT count(*) > 0 FROM source WHERE is_current"},
                {"name": "aliased", "sql": "SELECT count(*) = 0 FROM source s WHERE s.sk IS NULL"},
                {
                    "name": "link_flag",
                    "sql": "SELECT count(*) > 0 FROM source s JOIN dim d ON s.k = d.k WHERE d.is_current",
                },
            ]
        },
    )
    assert rules["has_current"].materialization_columns == ("is_current",)
    assert rules["aliased"].materialization_columns == ("sk",)
    assert rules["link_flag"].materialization_columns == (), "the link's is_current is not the write's"
