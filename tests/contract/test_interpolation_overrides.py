"""`${ENV}` interpolation (SEMANTICS §1.3) and `--set` overrides."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.contract.overrides import apply_overrides, parse_override_path, parse_set_option
from lakelogic.errors import ContractError

from .conftest import MINIMAL, only_problem, problems_of

Write = Callable[[str], Path]


def test_interpolation_with_defaults_and_escape(write_contract: Write) -> None:
    text = MINIMAL + (
        "server:\n"
        "  path: ${ROOT}/silver/${TABLE:-orders}\n"
        "  type: '$${NOT_A_VAR}'\n"
        "quality:\n  enforce_required: ${ENFORCE}\n"
    )
    contract = load_contract(write_contract(text), env={"ROOT": "s3://lake", "ENFORCE": "false"})
    assert contract.server is not None
    assert contract.server.path == "s3://lake/silver/orders"
    assert contract.server.type == "${NOT_A_VAR}"
    assert contract.quality.enforce_required is False


def test_interpolation_never_touches_keys(write_contract: Write) -> None:
    text = MINIMAL + "metadata:\n  ${KEY}: ${VALUE}\n"
    contract = load_contract(write_contract(text), env={"KEY": "k", "VALUE": "v"})
    assert contract.metadata == {"${KEY}": "v"}


def test_unset_variable_names_path_and_variable(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "server:\n  path: ${LAKE_ROOT}/x\n"), env={})
    assert problem.path == "server.path"
    assert "LAKE_ROOT" in problem.message
    assert problem.line == 11


def test_unset_variable_reported_with_other_problems(write_contract: Write) -> None:
    text = MINIMAL + "server:\n  path: ${LAKE_ROOT}\nmaterialization:\n  stratgy: merge\n"
    problems = problems_of(write_contract(text), env={})
    assert [p.path for p in problems] == ["server.path", "materialization.stratgy"]


def test_process_environment_is_the_default(write_contract: Write, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LL_TEST_TITLE", "From Env")
    contract = load_contract(write_contract(MINIMAL.replace("title: Orders", "title: ${LL_TEST_TITLE}")))
    assert contract.info.title == "From Env"
    assert contract.table_name == "from_env"


def test_override_paths() -> None:
    assert parse_override_path("quality.row_rules[2].sql") == ["quality", "row_rules", 2, "sql"]
    assert parse_override_path("a") == ["a"]
    for bad in ("", "[0].a", "a..b", "a.[x]"):
        with pytest.raises(ContractError):
            parse_override_path(bad)


def test_set_option_parsing() -> None:
    assert parse_set_option("quality.enforce_required=false") == ("quality.enforce_required", "false")
    assert parse_set_option("info.title=a=b") == ("info.title", "a=b")
    with pytest.raises(ContractError):
        parse_set_option("novalue")


def test_apply_overrides_typed_and_nested() -> None:
    data = {"quality": {"row_rules": [{"name": "a", "sql": "x > 0"}]}, "info": {"title": "t"}}
    out = apply_overrides(
        data,
        {
            "quality.enforce_required": "false",
            "quality.row_rules[0].sql": "x > 1",
            "quality.row_rules[1]": "{name: b, sql: y > 0}",
            "materialization.strategy": "merge",
            "source.options.skip_rows": "2",
        },
    )
    assert out["quality"]["enforce_required"] is False
    assert out["quality"]["row_rules"] == [{"name": "a", "sql": "x > 1"}, {"name": "b", "sql": "y > 0"}]
    assert out["materialization"] == {"strategy": "merge"}
    assert out["source"]["options"]["skip_rows"] == 2
    assert data["quality"]["row_rules"][0]["sql"] == "x > 0"  # the input is not mutated


def test_a_dotted_number_indexes_a_list_and_stays_a_key_in_a_mapping() -> None:
    """DRIVER §9: `transformations.0.phase` is `transformations[0].phase`; `mapping.0` is the key "0"."""
    data = {"transformations": [{"phase": "pre"}], "mapping": {"0": "no"}}
    out = apply_overrides(data, {"transformations.0.phase": "post", "mapping.0": "zero"})
    assert out == {"transformations": [{"phase": "post"}], "mapping": {"0": "zero"}}


def test_apply_overrides_bad_index() -> None:
    with pytest.raises(ContractError, match=r"index \[5\]"):
        apply_overrides({"a": [1]}, {"a[5]": "2"})
    with pytest.raises(ContractError, match="not inside a mapping"):
        apply_overrides({"a": "text"}, {"a.b": "2"})


def test_load_contract_with_overrides(write_contract: Write) -> None:
    path = write_contract(MINIMAL + "quality:\n  enforce_required: true\n")
    contract = load_contract(
        path, overrides={"quality.enforce_required": "false", "model.fields[1].type": "text"}
    )
    assert contract.quality.enforce_required is False
    assert contract.model.fields[1].type == "text"
    problem = only_problem(path, overrides={"materialization.strategy": "upsert"})
    assert problem.path == "materialization.strategy"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("*.csv", "*.csv"),
        ("Note: see wiki", "Note: see wiki"),
        ("- x", "- x"),
        ("#x", "#x"),
        ("@x", "@x"),
        ("price # in euros", "price # in euros"),
        ("true", True),
        ("42", 42),
        ("0.5", 0.5),
        ("null", None),
        ("[a, b]", ["a", "b"]),
        ("{k: v}", {"k": "v"}),
        ("'*_<day>.*'", "*_<day>.*"),
        ("yes", "yes"),
        ("", ""),
    ],
)
def test_set_values_are_flow_values_or_else_text(text: str, value: object) -> None:
    """DRIVER §9: YAML 1.2 flow values; "anything else → string" (not a mapping, a list, an alias error)."""
    from lakelogic.contract.yaml_io import parse_scalar

    assert parse_scalar(text) == value


def test_set_typo_is_reported_against_the_override_not_the_file(write_contract: Write) -> None:
    """The file's line would point at an innocent neighbour: the typo is on the command line."""
    path = write_contract(
        MINIMAL.replace("type: string", "type: strng") + "materialization:\n  strategy: append\n"
    )
    problems = problems_of(
        path, overrides={"materialization.stratgy": "merge", "quality.enforce_required": "maybe"}
    )
    found = {(p.file, p.path, p.line, p.suggestion) for p in problems}
    assert found == {
        (str(path), "model.fields[1].type", 9, "string"),
        ("override:--set", "materialization.stratgy", 0, "strategy"),
        ("override:--set", "quality.enforce_required", 0, None),
    }
