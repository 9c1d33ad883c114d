"""Golden predicates, names, categories and severities of every row-rule form (SEMANTICS §10.3)."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.errors import ContractError, PlanError
from lakelogic.types import Phase, Severity
from tests.plan.builders import BASE, compile_doc, contract_doc, row_rules


def fields(*extra: dict[str, Any]) -> dict[str, Any]:
    return {"fields": [*BASE["model"]["fields"], *extra]}


def test_field_keys_generate_rules_in_field_order() -> None:
    model = {
        "fields": [
            {"name": "id", "type": "int", "nullable": False},
            {"name": "status", "type": "string", "accepted_values": ["new", "done"]},
            {"name": "qty", "type": "integer", "accepted_values": [1, "2", 3.0], "min": 0, "max": 10},
            {
                "name": "code",
                "type": "string",
                "max_length": 4,
                "rules": [{"name": "code_upper", "sql": "code = upper(code)"}],
            },
            {"name": "day", "type": "date", "accepted_values": ["2024-01-01"]},
            {"name": "flag", "type": "boolean", "accepted_values": [True, "no"]},
        ]
    }
    rules = compile_doc(contract_doc(model=model)).row_rules
    assert [(r.name, r.predicate, r.category, r.origin, r.yaml_path) for r in rules] == [
        ("id_required", "id IS NOT NULL", "completeness", "field", "model.fields[0].nullable"),
        (
            "status_accepted_values",
            "status IS NULL OR status IN ('new', 'done')",
            "validity",
            "field",
            "model.fields[1].accepted_values",
        ),
        (
            "qty_accepted_values",
            "qty IS NULL OR qty IN (1, 2, 3)",
            "validity",
            "field",
            "model.fields[2].accepted_values",
        ),
        ("qty_range", "qty IS NULL OR (qty >= 0 AND qty <= 10)", "validity", "field", "model.fields[2].min"),
        (
            "code_max_length",
            "code IS NULL OR char_length(code) <= 4",
            "validity",
            "field",
            "model.fields[3].max_length",
        ),
        ("code_upper", "code = upper(code)", "correctness", "field", "model.fields[3].rules[0]"),
        (
            "day_accepted_values",
            "day IS NULL OR day IN (DATE '2024-01-01')",
            "validity",
            "field",
            "model.fields[4].accepted_values",
        ),
        (
            "flag_accepted_values",
            "flag IS NULL OR flag IN (TRUE, FALSE)",
            "validity",
            "field",
            "model.fields[5].accepted_values",
        ),
    ]
    assert all(r.severity is Severity.ERROR and r.phase is Phase.PRE for r in rules)


def test_accepted_value_that_does_not_fit_the_field_type_is_a_plan_error() -> None:
    model = fields({"name": "qty", "type": "integer", "accepted_values": [1, "two"]})
    with pytest.raises(PlanError) as info:
        compile_doc(contract_doc(model=model))
    assert info.value.yaml_path == "model.fields[4].accepted_values"
    assert "'two'" in str(info.value)


def test_required_rules_follow_enforce_required() -> None:
    assert "id_required" in row_rules()
    assert "id_required" not in row_rules(quality={"enforce_required": False})


def test_not_null_forms() -> None:
    rules = row_rules(
        quality={
            "row_rules": [
                {"not_null": "status"},
                {"not_null": ["amount", {"field": "email", "severity": "warning"}]},
                {"not_null": {"fields": ["id", "status"]}, "category": "Completeness-Core"},
                {"not_null": {"field": "email"}, "name": "email_present"},
            ]
        }
    )
    assert rules["status_not_null"].predicate == "status IS NOT NULL"
    assert rules["amount_not_null"].severity is Severity.ERROR
    assert rules["email_not_null"].severity is Severity.WARNING
    # the second rule on `status` gets a suffix; categories are lower-cased
    assert rules["id_not_null"].category == "completeness-core"
    assert rules["status_not_null_2"].category == "completeness-core"
    assert rules["email_present"].predicate == "email IS NOT NULL"
    assert rules["email_present"].origin == "shorthand"
    assert rules["status_not_null"].yaml_path == "quality.row_rules[0]"


def test_not_null_list_items_take_the_object_forms() -> None:
    """§10.3: `not_null` is a field, `{field}`, `{fields}` or a list of them."""
    rules = row_rules(
        quality={"row_rules": [{"not_null": ["id", {"fields": ["status", "email"], "severity": "warning"}]}]}
    )
    assert rules["status_not_null"].severity is Severity.WARNING
    assert rules["email_not_null"].predicate == "email IS NOT NULL"
    assert rules["id_not_null"].severity is Severity.ERROR


def test_name_on_multi_field_not_null_is_rejected() -> None:
    doc = contract_doc(quality={"row_rules": [{"not_null": ["status", "amount"], "name": "both"}]})
    with pytest.raises((ContractError, PlanError)):
        compile_doc(doc)


def test_value_shorthands() -> None:
    rules = row_rules(
        quality={
            "row_rules": [
                {"accepted_values": {"field": "status", "values": ["a", "b'c"]}},
                {"accepted_values": {"field": "id", "values": ["1", 2]}},
                {"regex_match": {"field": "email", "pattern": r"^[^@]+@\w+\.com$"}, "name": "email_ok"},
                {"range": {"field": "amount", "min": 0, "max": 9.5}},
                {"range": {"field": "amount", "min": 0, "inclusive": False}},
                {"range": {"field": "id", "max": 100}, "severity": "info", "phase": "post"},
                {"range": {"field": "external", "min": "a", "max": "m"}},
            ]
        }
    )
    assert rules["status_accepted_values"].predicate == "status IS NULL OR status IN ('a', 'b\\'c')"
    assert rules["id_accepted_values"].predicate == "id IS NULL OR id IN (1, 2)"
    # search semantics, backslashes doubled for Spark string literals
    assert rules["email_ok"].predicate == "email IS NULL OR email RLIKE '^[^@]+@\\\\w+\\\\.com$'"
    assert rules["email_ok"].category == "validity"
    assert rules["amount_range"].predicate == "amount IS NULL OR (amount >= 0 AND amount <= 9.5)"
    assert rules["amount_range_2"].predicate == "amount IS NULL OR amount > 0"
    assert rules["id_range"].predicate == "id IS NULL OR id <= 100"
    assert rules["id_range"].severity is Severity.INFO and rules["id_range"].phase is Phase.POST
    # a column outside the model: bounds keep their YAML type
    assert rules["external_range"].predicate == "external IS NULL OR (external >= 'a' AND external <= 'm')"


def test_range_with_cast_to_string_compares_as_double() -> None:
    doc = contract_doc(
        server={"path": "/tmp/out", "cast_to_string": True},
        model=fields({"name": "qty", "type": "integer", "min": 1}),
    )
    rules = {r.name: r for r in compile_doc(doc).row_rules}
    assert rules["qty_range"].predicate == "qty IS NULL OR TRY_CAST(qty AS DOUBLE) >= 1"


def test_awkward_column_names_are_quoted() -> None:
    model = {
        "fields": [
            {"name": "order date", "type": "string", "required": True},
            {"name": "select", "type": "string", "max_length": 3},
        ]
    }
    rules = row_rules(model=model)
    assert rules["order_date_required"].predicate == "`order date` IS NOT NULL"
    assert rules["select_max_length"].predicate == "`select` IS NULL OR char_length(`select`) <= 3"


def test_referential_integrity_becomes_a_probe_not_a_subquery() -> None:
    rules = row_rules(
        links=[{"name": "customers", "path": "ref/customers.parquet"}],
        quality={
            "row_rules": [
                {"referential_integrity": {"column": "status", "reference": "customers", "key": "code"}}
            ]
        },
    )
    rule = rules["status_referential_integrity"]
    assert rule.category == "consistency"
    (probe,) = rule.probes
    assert (probe.link, probe.key, probe.frame_expr) == ("customers", ("code",), ("status",))
    assert rule.predicate == f"status IS NULL OR {probe.column}"
    assert "SELECT" not in rule.predicate
    assert rule.detail == "status IS NULL OR status IN (SELECT code FROM customers)"
    assert rule.message_detail == rule.detail


def test_referential_integrity_needs_a_declared_link() -> None:
    doc = contract_doc(
        quality={"row_rules": [{"referential_integrity": {"field": "status", "reference": "nope"}}]}
    )
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "quality.row_rules[0].referential_integrity.reference"


def test_lifecycle_window_both_forms() -> None:
    rules = row_rules(
        model=fields({"name": "ts", "type": "timestamp"}),
        links=[{"name": "contracts", "path": "ref/contracts.parquet"}],
        quality={
            "row_rules": [
                {"lifecycle_window": {"field": "ts", "window": "30d"}},
                {
                    "lifecycle_window": {
                        "timestamp_field": "ts",
                        "event_key": "id",
                        "reference": "contracts",
                        "reference_key": "cid",
                        "start_field": "valid_from",
                        "end_field": "valid_to",
                        "end_default": "9999-12-31",
                    }
                },
            ]
        },
    )
    recent = rules["ts_lifecycle_window"]
    assert recent.predicate == "ts IS NULL OR ts >= current_timestamp() - INTERVAL 30 DAYS"
    window = rules["id_lifecycle_window"]
    (probe,) = window.probes
    assert window.predicate == f"ts IS NULL OR {probe.column}"
    assert (probe.link, probe.key, probe.frame_expr) == ("contracts", ("cid",), ("id",))
    assert (probe.window_start, probe.window_end, probe.window_value_expr) == ("valid_from", "valid_to", "ts")
    assert probe.window_end_default == "DATE '9999-12-31'"
    assert window.category == "consistency"
    assert set(window.reads) == {"ts", "id"}


@pytest.mark.parametrize(
    ("window", "interval"),
    [
        ("6h", "INTERVAL 6 HOURS"),
        ("2w", "INTERVAL 2 WEEKS"),
        ("3 months", "INTERVAL 3 MONTHS"),
        ("P1DT2H", "INTERVAL 1 DAYS 2 HOURS"),
        (48, "INTERVAL 48 HOURS"),
    ],
)
def test_lifecycle_window_durations(window: Any, interval: str) -> None:
    from lakelogic.plan.predicates import interval_sql

    assert interval_sql(window, yaml_path="x") == interval


def test_bad_duration_is_a_plan_error() -> None:
    doc = contract_doc(quality={"row_rules": [{"lifecycle_window": {"field": "email", "window": "soon"}}]})
    with pytest.raises(PlanError) as info:
        compile_doc(doc)
    assert info.value.yaml_path == "quality.row_rules[0].lifecycle_window.window"


def test_declared_rules_with_bounds() -> None:
    rules = row_rules(
        quality={
            "row_rules": [
                {"name": "ratio", "sql": "amount / 2", "must_be_between": [0, 10]},
                {"name": "positive", "sql": "amount", "must_be_greater_than": 0, "category": "Business"},
                {"name": "small", "sql": "amount", "must_be_less_than": 5.5, "description": "kept small"},
            ]
        }
    )
    assert rules["ratio"].predicate == "(amount / 2) BETWEEN 0 AND 10"
    assert rules["positive"].predicate == "(amount) > 0"
    assert rules["positive"].category == "business"
    assert rules["small"].predicate == "(amount) < 5.5"
    assert rules["small"].description == "kept small"
    assert rules["ratio"].origin == "declared"


def test_regex_spellings_are_all_accepted() -> None:
    rules = row_rules(
        quality={
            "row_rules": [
                {"name": "a", "sql": "status rlike '^x'"},
                {"name": "b", "sql": "regexp_like(status, '^x')"},
                {"name": "c", "sql": "regexp_matches(status, '^x')"},
            ]
        }
    )
    assert rules["a"].predicate == "status rlike '^x'"  # untouched when Spark reads it as written
    assert rules["b"].predicate == "regexp_like(status, '^x')"
    assert rules["c"].predicate == "status RLIKE '^x'"  # DuckDB spelling rewritten for Spark


def test_in_subquery_on_a_link_becomes_a_probe() -> None:
    rules = row_rules(
        links=[{"name": "codes", "path": "ref/codes.parquet"}],
        quality={"row_rules": [{"name": "known", "sql": "status IN (SELECT code FROM codes) OR amount > 0"}]},
    )
    rule = rules["known"]
    (probe,) = rule.probes
    assert probe.link == "codes" and probe.key == ("code",) and probe.frame_expr == ("status",)
    assert "SELECT" not in rule.predicate and probe.column in rule.predicate
    assert rule.detail == "status IN (SELECT code FROM codes) OR amount > 0"
    assert rule.reads == ("status", "amount")


def test_merge_keys_are_checked_even_without_enforce_required() -> None:
    doc = contract_doc(
        primary_key=["id"],
        quality={"enforce_required": False},
        materialization={"strategy": "merge"},
    )
    rules = {r.name: r for r in compile_doc(doc).row_rules}
    assert rules["id_required"].origin == "implied"
    assert rules["id_required"].predicate == "id IS NOT NULL"
    # append does not add key checks
    doc = contract_doc(primary_key=["id"], quality={"enforce_required": False})
    assert "id_required" not in {r.name for r in compile_doc(doc).row_rules}


def test_scd2_checks_its_business_key() -> None:
    doc = contract_doc(
        primary_key=["id"],
        natural_key=["email"],
        materialization={"strategy": "scd2", "scd2": {"business_key": ["status"]}},
    )
    rules = {r.name: r for r in compile_doc(doc).row_rules}
    assert rules["status_required"].origin == "implied"
    assert rules["status_required"].yaml_path == "materialization.scd2.business_key"
    assert "email_required" not in rules


def test_columns_filled_by_the_write_get_no_required_rule() -> None:
    model = {
        "fields": [
            {"name": "id", "type": "int", "required": True},
            {"name": "sk", "type": "string", "required": True, "generated": True},
            {"name": "is_current", "type": "boolean", "required": True},
        ]
    }
    plan = compile_doc(contract_doc(model=model, primary_key=["id"], materialization={"strategy": "scd2"}))
    assert [r.name for r in plan.row_rules] == ["id_required"]
    # without SCD2, is_current is ordinary data again
    plan = compile_doc(contract_doc(model=model))
    assert [r.name for r in plan.row_rules] == ["id_required", "is_current_required"]


@pytest.mark.parametrize("sql", ["sum(amount) > 0", "amount > avg(amount)", "bool_and(amount > 0)"])
def test_an_aggregate_in_a_row_rule_is_a_plan_error_naming_the_rule(sql: str) -> None:
    """A row rule holds per row: an aggregate failed only when Spark analysed the whole projection, as an
    unnamed engine error. A window aggregate compares a row with its peers and stays allowed."""
    with pytest.raises(PlanError) as info:
        compile_doc(contract_doc(quality={"row_rules": [{"name": "total_positive", "sql": sql}]}))
    assert "total_positive" in str(info.value) and "quality.row_rules[0].sql" in str(info.value)
    assert "dataset_rules" in str(info.value)
    compile_doc(
        contract_doc(quality={"row_rules": [{"name": "w", "sql": "amount <= 10 * avg(amount) OVER ()"}]})
    )


def test_exists_over_an_array_is_a_function_not_a_subquery() -> None:
    doc = contract_doc(quality={"row_rules": [{"name": "has_big", "sql": "exists(tags, x -> x > 1)"}]})
    compile_doc(doc)
    with pytest.raises(PlanError, match="subquery"):
        compile_doc(contract_doc(quality={"row_rules": [{"name": "s", "sql": "EXISTS (SELECT 1 FROM t)"}]}))
