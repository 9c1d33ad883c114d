"""Bad contracts give one clear problem each: file, line, YAML path, allowed values, suggestion."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import ContractError

from .conftest import MINIMAL, only_problem, problems_of

Write = Callable[[str], Path]


def test_typo_in_materialization_key(write_contract: Write) -> None:
    path = write_contract(MINIMAL + "materialization:\n  stratgy: merge\n")
    problem = only_problem(path)
    assert problem.file == str(path)
    assert problem.path == "materialization.stratgy"
    assert (problem.line, problem.column) == (11, 3)
    assert problem.message == "unknown key"
    assert problem.suggestion == "strategy"
    assert problem.allowed is not None and "strategy" in problem.allowed.split(", ")
    rendered = problem.render()
    assert f"{path}:11:3: materialization.stratgy" in rendered and "did you mean 'strategy'" in rendered


def test_typo_row_rule(write_contract: Write) -> None:
    path = write_contract(MINIMAL + "quality:\n  row_rule:\n    - {name: a, sql: id > 0}\n")
    problem = only_problem(path)
    assert problem.path == "quality.row_rule"
    assert problem.suggestion == "row_rules"
    assert (problem.line, problem.column) == (11, 3)


def test_wrong_field_type(write_contract: Write) -> None:
    path = write_contract(MINIMAL.replace("type: string", "type: strng"))
    problem = only_problem(path)
    assert problem.path == "model.fields[1].type"
    assert (problem.line, problem.column) == (9, 7)
    assert problem.value == "'strng'"
    assert problem.suggestion == "string"
    assert problem.allowed is not None and "decimal(p,s)" in problem.allowed


def test_type_names_are_case_insensitive_and_aliases_accepted(write_contract: Write) -> None:
    text = MINIMAL.replace("type: string", "type: VARCHAR(20)").replace(
        "type: integer", "type: decimal(10,2)"
    )
    contract = load_contract(write_contract(text))
    assert [str(f.logical_type) for f in contract.model.fields] == ["decimal(10,2)", "string"]


def test_unknown_op(write_contract: Write) -> None:
    path = write_contract(MINIMAL + "transformations:\n  - derrive: {field: x, sql: '1'}\n")
    problem = only_problem(path)
    assert problem.path == "transformations[0].derrive"
    assert (problem.line, problem.column) == (11, 5)
    assert problem.suggestion == "derive"
    assert problem.allowed is not None
    assert {"derive", "sql", "rename", "date_range_explode"} <= set(problem.allowed.split(", "))


def test_two_ops_in_one_item(write_contract: Write) -> None:
    path = write_contract(
        MINIMAL + "transformations:\n  - derive: {field: x, sql: '1'}\n    filter: {sql: x > 0}\n"
    )
    problem = only_problem(path)
    assert problem.path == "transformations[0]"
    assert "exactly one op" in problem.message and "derive, filter" in problem.message


def test_closed_value_sets(write_contract: Write) -> None:
    path = write_contract(
        MINIMAL
        + "source: {type: landing, format: parquett, load_mode: incremental}\n"
        + "materialization: {strategy: upsert}\n"
    )
    problems = {p.path: p for p in problems_of(path)}
    assert set(problems) == {"source.format", "materialization.strategy"}
    assert problems["source.format"].suggestion == "parquet"
    assert problems["materialization.strategy"].allowed == "append, overwrite, merge, scd2"
    assert problems["materialization.strategy"].value == "'upsert'"


def test_closed_values_are_case_insensitive(write_contract: Write) -> None:
    text = MINIMAL + "primary_key: [id]\nmaterialization: {strategy: MERGE, format: Delta}\n"
    mat = load_contract(write_contract(text)).materialization
    assert mat is not None and (mat.strategy, mat.format) == ("merge", "delta")


def test_unsupported_target_format(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "materialization: {format: ducklake}\n"))
    assert problem.path == "materialization.format"
    assert problem.allowed == "iceberg, delta, parquet, csv, json"


def test_unquoted_version_float(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL.replace('version: "1.0.0"', "version: 1.0")))
    assert problem.path == "version"
    assert (problem.line, problem.column) == (1, 1)
    assert "quote it" in problem.message


def test_version_not_semver(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL.replace('"1.0.0"', '"1.0"')))
    assert problem.path == "version" and "SemVer" in problem.message


def test_semver_prerelease_accepted(write_contract: Write) -> None:
    assert load_contract(write_contract(MINIMAL.replace('"1.0.0"', "2.1.0-rc.1"))).version == "2.1.0-rc.1"


def test_all_problems_reported_at_once(write_contract: Write) -> None:
    text = (
        MINIMAL.replace("type: string", "type: strng")
        + "quality:\n  row_rules:\n    - {name: r, sql: id > 0, severity: fatal}\n"
        + "materialization:\n  stratgy: merge\n"
    )
    problems = problems_of(write_contract(text))
    assert [p.path for p in problems] == [
        "model.fields[1].type",
        "quality.row_rules[0].severity",
        "materialization.stratgy",
    ]
    assert [p.line for p in problems] == sorted(p.line for p in problems)


def test_missing_required_keys(write_contract: Write) -> None:
    problems = problems_of(write_contract('version: "1.0.0"\ninfo: {description: x}\n'))
    assert {p.path for p in problems} == {"info.title", "model"}
    assert all(p.message == "required key is missing" for p in problems)


def test_primary_key_misplaced_under_model(write_contract: Write) -> None:
    text = MINIMAL.replace("model:\n", "model:\n  primary_key: [id]\n")
    problem = only_problem(write_contract(text))
    assert problem.path == "model.primary_key"
    assert "top-level key" in problem.message
    assert problem.suggestion is None


def test_unique_on_a_field(write_contract: Write) -> None:
    text = MINIMAL.replace("type: integer", "type: integer\n      unique: true")
    problem = only_problem(write_contract(text))
    assert problem.path == "model.fields[0].unique"
    assert "dataset_rules" in problem.message


def test_row_rule_without_sql_or_shorthand(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "quality:\n  row_rules:\n    - not_nul: id\n"))
    assert problem.path == "quality.row_rules[0]"
    assert problem.suggestion == "not_null"
    assert "row rule needs" in problem.message


def test_row_rule_bad_shorthand_parameter(write_contract: Write) -> None:
    text = MINIMAL + "quality:\n  row_rules:\n    - regex_match: {field: email, patern: '^x'}\n"
    problems = {p.path: p for p in problems_of(write_contract(text))}
    assert problems["quality.row_rules[0].regex_match.patern"].suggestion == "pattern"
    assert problems["quality.row_rules[0].regex_match.pattern"].message == "required key is missing"


def test_yaml_1_2_boolean_rejected_for_flag(write_contract: Write) -> None:
    problem = only_problem(
        write_contract(MINIMAL.replace("type: integer", "type: integer\n      required: yes"))
    )
    assert problem.path == "model.fields[0].required"
    assert problem.value == "'yes'"
    assert problem.allowed is not None and problem.allowed.startswith("true, false")


def test_extensions_keys_must_be_namespaced(write_contract: Write) -> None:
    ok = load_contract(
        write_contract(MINIMAL + "extensions:\n  com.acme.retention: 30\n  x-acme-owner: me\n")
    )
    assert ok.extensions == {"com.acme.retention": 30, "x-acme-owner": "me"}
    problem = only_problem(write_contract(MINIMAL + "extensions:\n  retention: 30\n"))
    assert problem.path.startswith("extensions")


def test_x_keys_outside_extensions_are_unknown(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "x-acme-owner: me\n"))
    assert problem.path == "x-acme-owner" and problem.message == "unknown key"


def test_literal_credential_rejected_and_masked(write_contract: Write) -> None:
    text = MINIMAL + "source:\n  type: database\n  path: env:DB_URL\n  options:\n    password: hunter2\n"
    problem = only_problem(write_contract(text))
    assert problem.path == "source.options.password"
    assert problem.value == "***"
    assert "hunter2" not in problem.render()
    number = MINIMAL + "source:\n  type: database\n  path: env:DB_URL\n  options:\n    db_password: 123456\n"
    problem = only_problem(write_contract(number))
    assert problem.path == "source.options.db_password" and "123456" not in problem.render()


def test_modelled_key_settings_are_no_credentials(write_contract: Write) -> None:
    """`foreign_key` ends in `_key` like `api_key`, yet holds no secret: a text value is a wrong type
    (it is a mapping), not a literal credential."""
    line = "      type: integer\n"
    text = MINIMAL.replace(line, line + "      foreign_key: customers.customer_id\n", 1)
    problem = only_problem(write_contract(text))
    assert problem.path == "model.fields[0].foreign_key"
    assert "secret" not in problem.render() and "contract, column" in problem.render()


def test_credential_references_accepted_and_kept_unresolved(write_contract: Write) -> None:
    text = (
        MINIMAL
        + "source:\n  type: dlt\n  dlt:\n    source: stripe\n    credentials:\n"
        + "      api_key: env:STRIPE\n      client_secret: keyvault://v/s\n      token: databricks://scope/k\n"
        + "      password: ${PW}\n"
    )
    # No PW in the environment: credentials are resolved at use, not at load (§1.3).
    contract = load_contract(write_contract(text), env={})
    assert contract.source is not None and contract.source.dlt is not None
    assert contract.source.dlt.credentials == {
        "api_key": "env:STRIPE",
        "client_secret": "keyvault://v/s",
        "token": "databricks://scope/k",
        "password": "${PW}",
    }


def test_contract_error_is_raised_for_non_mapping(write_contract: Write) -> None:
    problem = only_problem(write_contract("- a\n- b\n"))
    assert "mapping" in problem.message


def test_problem_message_lists_every_problem() -> None:
    try:
        load_contract({"version": "1.0.0", "info": {"title": "t"}, "model": {"fields": [{"name": "a"}]}})
    except ContractError as exc:
        assert exc.problems[0].path == "model.fields[0].type"
        assert exc.problems[0].file == "<contract>"
        assert "model.fields[0].type" in str(exc)
    else:  # pragma: no cover - the contract above is invalid
        raise AssertionError("expected a ContractError")


def test_value_matching_no_union_branch_is_one_problem(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "quality:\n  row_rules:\n    - not_null: 5\n"))
    assert problem.path == "quality.row_rules[0].not_null"
    assert problem.message == "expected text, a mapping or a list"
    assert problem.value == "5"


def test_problem_inside_a_union_value_wins_over_shape_errors(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "quality:\n  row_rules:\n    - not_null: {feld: id}\n"))
    assert problem.path == "quality.row_rules[0].not_null.feld"
    assert problem.suggestion == "field"


def test_cross_block_problems_have_their_own_paths(write_contract: Write) -> None:
    text = MINIMAL + (
        "links:\n  - {name: regions, path: a.parquet}\n  - {name: regions, path: b.parquet}\n"
        "quality:\n  row_rules:\n    - {name: r, sql: id > 0}\n    - not_null: id\n      name: r\n"
        "materialization:\n  strategy: merge\n"
    )
    problems = problems_of(write_contract(text))
    assert [(p.path, p.line) for p in problems] == [
        ("links[1].name", 12),
        ("quality.row_rules[1].name", 17),
        ("materialization.strategy", 19),
    ]
    assert problems[0].message == "duplicate link name 'regions'"
    assert problems[1].message == "duplicate row rule name 'r'"
    assert problems[2].message == "strategy 'merge' needs primary_key"


def test_cross_block_problems_are_listed_with_block_errors(write_contract: Write) -> None:
    """A duplicate link name or a merge without a key is reported together with a typo elsewhere,
    not only once the typo is fixed; a check that depends on a broken block stays silent."""
    text = MINIMAL + (
        "source: {type: landing, formatt: csv}\n"
        "links:\n  - {name: regions, path: a.parquet}\n  - {name: regions, path: b.parquet}\n"
        "materialization:\n  strategy: merge\n"
    )
    problems = problems_of(write_contract(text))
    assert [(p.path, p.message[:20]) for p in problems] == [
        ("source.formatt", "unknown key"),
        ("links[1].name", "duplicate link name "),
        ("materialization.strategy", "strategy 'merge' nee"),
    ]
    broken_key = MINIMAL + "primary_key: {a: 1}\nmaterialization:\n  strategy: merge\n"
    assert [p.path for p in problems_of(write_contract(broken_key))] == ["primary_key"]


def test_info_version_must_be_quoted(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL.replace("title: Orders", "title: Orders\n  version: 1.10")))
    assert problem.path == "info.version"
    assert "quote it" in problem.message


def test_transformation_item_edge_cases(write_contract: Write) -> None:
    text = (
        MINIMAL
        + "transformations:\n  - trim:\n  - derive: {field: x, sql: '1'}\n    phse: pre\n  - phase: pre\n"
    )
    problems = problems_of(write_contract(text))
    assert [(p.path, p.message, p.suggestion) for p in problems] == [
        ("transformations[0].trim", "op 'trim' has no parameters", None),
        ("transformations[1].phse", "unknown transformation op", "phase"),
        (
            "transformations[2]",
            "a transformation item needs exactly one op key (or sql) besides 'phase'; found none",
            None,
        ),
    ]


def test_misspelt_key_ending_in_key_is_unknown_not_a_credential(write_contract: Write) -> None:
    text = MINIMAL + "primary_key: [id]\nmaterialization:\n  strategy: scd2\n  scd2: {busines_key: id}\n"
    problem = only_problem(write_contract(text))
    assert problem.path == "materialization.scd2.busines_key"
    assert problem.message == "unknown key" and problem.suggestion == "business_key"


def test_right_shape_wrong_content_reports_only_the_content(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "quality:\n  row_rules:\n    - not_null: {}\n"))
    assert problem.path == "quality.row_rules[0].not_null"
    assert "exactly one of 'field' or 'fields'" in problem.message


def test_rules_and_fields_at_the_wrong_level(write_contract: Write) -> None:
    text = MINIMAL + "row_rules:\n  - {name: r, sql: id > 0}\n"
    problem = only_problem(write_contract(text))
    assert problem.path == "row_rules" and "quality.row_rules" in problem.message


@pytest.mark.parametrize(
    ("extra", "path", "message", "allowed"),
    [
        (  # a list where text is expected
            "transformations:\n  - join: {reference: c, key: id, fields: [x], on: [a, b]}\n",
            "transformations[0].join.on",
            "expected text",
            None,
        ),
        (  # a list where a mapping is expected: the mapping's keys are what is allowed
            "transformations:\n  - derive: [x, y]\n",
            "transformations[0].derive",
            "expected a mapping",
            "field, sql, sql_spark, sql_duckdb",
        ),
        (  # not one of the values of an enum inside an op
            "transformations:\n  - derive: {field: x, sql: '1'}\n    phase: 5\n",
            "transformations[0].phase",
            "unknown value",
            "pre, post",
        ),
        (
            "transformations:\n  - select: {columns: []}\n",
            "transformations[0].select.columns",
            "needs at least 1 item(s)",
            "a column name or a list of column names",
        ),
        (
            "quality:\n  row_rules:\n    - {name: a b, sql: id > 0}\n",
            "quality.row_rules[0].name",
            "is not a valid name",
            "letters, digits, '_', '.' and '-'",
        ),
        (
            "quality:\n  row_rules:\n    - {name: r, sql: id, must_be_between: [1]}\n",
            "quality.row_rules[0].must_be_between",
            "too few items",
            "a list of 2 numbers",
        ),
        ("primary_key: 5\n", "primary_key", "expected a column name or a list of column names", None),
        ("transformations:\n  derive: {field: x, sql: '1'}\n", "transformations", "expected a list", None),
    ],
)
def test_type_problems_say_what_is_allowed_in_contract_words(
    write_contract: Write, extra: str, path: str, message: str, allowed: str | None
) -> None:
    """Pydantic's own texts ("Input should be a valid dictionary or instance of TransformationDerive")
    name Python types; a contract author needs the accepted form."""
    problem = only_problem(write_contract(MINIMAL + extra))
    assert problem.path == path
    assert problem.message.startswith(message), problem.render()
    assert problem.allowed == allowed
    assert problem.line > 0
