"""Rule naming (SEMANTICS §10.4), phase inference (§10.2, §8) and SQL errors with rule name + YAML path."""

from __future__ import annotations

import pytest

from lakelogic.errors import PlanError
from lakelogic.plan.naming import RuleNamer, sanitize_name
from lakelogic.types import Phase
from tests.plan.builders import compile_doc, contract_doc, row_rules

# --- names ------------------------------------------------------------------------------------


def test_explicit_names_are_reserved_before_generated_ones() -> None:
    model = {"fields": [{"name": "amount", "type": "double", "min": 0}]}
    rules = compile_doc(
        contract_doc(
            model=model,
            quality={
                "row_rules": [
                    {"range": {"field": "amount", "max": 10}},
                    {"range": {"field": "amount", "max": 20}},
                    # declared last, but its explicit name wins the plain name
                    {"name": "amount_range", "sql": "amount <> 13"},
                ]
            },
        )
    ).row_rules
    assert [(r.name, r.yaml_path) for r in rules] == [
        ("amount_range_2", "model.fields[0].min"),
        ("amount_range_3", "quality.row_rules[0]"),
        ("amount_range_4", "quality.row_rules[1]"),
        ("amount_range", "quality.row_rules[2]"),
    ]


def test_generated_names_replace_invalid_characters() -> None:
    model = {"fields": [{"name": "unit price (€)", "type": "double", "min": 0}]}
    (rule,) = compile_doc(contract_doc(model=model)).row_rules
    assert rule.name == "unit_price_____range"  # " (€)" -> 4 underscores, then "_range"
    assert sanitize_name("a.b-c d") == "a.b-c_d"


def test_duplicate_explicit_names_are_an_error() -> None:
    namer = RuleNamer("row rule")
    namer.reserve("dup", "quality.row_rules[0]")
    with pytest.raises(PlanError) as info:
        namer.reserve("dup", "quality.row_rules[2]")
    assert info.value.yaml_path == "quality.row_rules[2]"
    assert "quality.row_rules[0]" in str(info.value)
    assert namer.generate("dup", "x") == "dup_2"
    assert namer.generate("dup", "x") == "dup_3"


def test_duplicate_names_between_field_rules_and_row_rules_fail() -> None:
    model = {
        "fields": [{"name": "amount", "type": "double", "rules": [{"name": "pos", "sql": "amount > 0"}]}]
    }
    doc = contract_doc(model=model, quality={"row_rules": [{"name": "pos", "sql": "amount < 1e9"}]})
    with pytest.raises(Exception, match="pos"):
        compile_doc(doc)


# --- phases -----------------------------------------------------------------------------------

_DERIVE_POST = {"derive": {"field": "net", "sql": "amount - 1"}}
_DERIVE_PRE = {"derive": {"field": "net", "sql": "amount - 1"}, "phase": "pre"}


def test_rule_reading_a_pre_created_column_runs_pre() -> None:
    rules = row_rules(
        transformations=[_DERIVE_PRE], quality={"row_rules": [{"name": "net_pos", "sql": "net >= 0"}]}
    )
    assert rules["net_pos"].phase is Phase.PRE


def test_rule_reading_a_post_created_column_runs_post() -> None:
    rules = row_rules(
        transformations=[_DERIVE_POST],
        quality={
            "row_rules": [
                {"name": "net_pos", "sql": "net >= 0"},
                {"not_null": "net", "severity": "warning"},
                {"name": "amount_pos", "sql": "amount >= 0"},
            ]
        },
    )
    assert rules["net_pos"].phase is Phase.POST
    assert rules["net_not_null"].phase is Phase.POST
    assert rules["amount_pos"].phase is Phase.PRE


def test_explicit_phase_wins() -> None:
    rules = row_rules(quality={"row_rules": [{"name": "late", "sql": "amount >= 0", "phase": "post"}]})
    assert rules["late"].phase is Phase.POST


def test_explicit_pre_on_a_post_created_column_is_a_plan_error() -> None:
    doc = contract_doc(
        transformations=[_DERIVE_POST],
        quality={
            "row_rules": [
                {"name": "ok", "sql": "amount > 0"},
                {"name": "net_pos", "sql": "net >= 0", "phase": "pre"},
            ]
        },
    )
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "quality.row_rules[1].phase"
    assert "net_pos" in str(info.value) and "net" in str(info.value)


def test_model_field_created_by_a_post_op_makes_its_rules_post() -> None:
    model = {"fields": [{"name": "id", "type": "int"}, {"name": "net", "type": "double", "min": 0}]}
    plan = compile_doc(contract_doc(model=model, transformations=[_DERIVE_POST]))
    (rule,) = plan.row_rules
    assert (rule.name, rule.phase) == ("net_range", Phase.POST)


def test_column_that_exists_nowhere() -> None:
    quality = {"row_rules": [{"name": "ghost", "sql": "ghost_col > 0"}]}
    # the source may still bring it: warning
    plan = compile_doc(contract_doc(quality=quality))
    assert any("ghost_col" in w for w in plan.warnings)
    # unknown source columns are removed before rules run: error
    with pytest.raises(PlanError, match="ghost_col"):
        compile_doc(contract_doc(quality=quality, schema_policy={"unknown_fields": "quarantine"}))


# --- SQL errors ---------------------------------------------------------------------------------


def test_bad_row_rule_sql_names_the_rule_and_yaml_path() -> None:
    quality = {
        "row_rules": [
            {"not_null": "id"},
            {"name": "ok", "sql": "amount > 0"},
            {"accepted_values": {"field": "status", "values": ["a"]}},
            {"name": "broken", "sql": "amount >>> ("},
        ]
    }
    with pytest.raises(PlanError) as info:
        compile_doc(contract_doc(quality=quality))
    assert info.value.yaml_path == "quality.row_rules[3].sql"
    assert "broken" in str(info.value)


def test_bad_field_rule_sql_names_its_path() -> None:
    model = {"fields": [{"name": "a", "type": "int", "rules": [{"name": "bad_one", "sql": "a = = 1"}]}]}
    with pytest.raises(PlanError) as info:
        compile_doc(contract_doc(model=model))
    assert info.value.yaml_path == "model.fields[0].rules[0].sql"
    assert "bad_one" in str(info.value)


@pytest.mark.parametrize(
    "sql",
    [
        "EXISTS (SELECT 1 FROM codes c WHERE c.code = status)",
        "amount > (SELECT max(v) FROM codes)",
        "status IN (SELECT code FROM codes WHERE active)",
        "SELECT 1",
    ],
)
def test_unsupported_subqueries_are_plan_errors(sql: str) -> None:
    doc = contract_doc(
        links=[{"name": "codes", "path": "ref/codes.parquet"}],
        quality={"row_rules": [{"name": "sub", "sql": sql}]},
    )
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "quality.row_rules[0].sql"


def test_in_subquery_on_an_undeclared_table_is_an_error() -> None:
    doc = contract_doc(
        quality={"row_rules": [{"name": "sub", "sql": "status IN (SELECT code FROM nowhere)"}]}
    )
    with pytest.raises(PlanError, match="nowhere"):
        compile_doc(doc)
