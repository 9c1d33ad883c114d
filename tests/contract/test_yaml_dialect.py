"""YAML 1.2 reading (SEMANTICS §1.1): booleans, `on:`, dates, duplicates, documents, anchors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.contract.yaml_io import load_yaml, parse_scalar, parse_yaml_text
from lakelogic.errors import ContractError

from .conftest import MINIMAL, only_problem

Write = Callable[[str], Path]


def test_yes_no_on_off_stay_strings() -> None:
    data, _ = parse_yaml_text("a: yes\nb: no\nc: on\nd: off\ne: y\nf: True\ng: FALSE\non: x\n")
    assert data == {"a": "yes", "b": "no", "c": "on", "d": "off", "e": "y", "f": True, "g": False, "on": "x"}


def test_no_implicit_timestamps_sexagesimal_or_octal() -> None:
    data, _ = parse_yaml_text("d: 2026-01-31\nt: 2024-01-01T10:00:00Z\ns: 1:30\no: 017\nf: 1.5\n")
    assert data == {"d": "2026-01-31", "t": "2024-01-01T10:00:00Z", "s": "1:30", "o": 17, "f": 1.5}
    assert type(data["o"]) is int and type(data["f"]) is float


def test_numbers_follow_the_yaml_1_2_core_schema() -> None:
    """1.1-only number forms (underscores, binary, signed hex) are strings in 1.2; `!!str` is honoured."""
    text = "u: 1_000\nb: 0b101\nh: +0x1F\nf: 1_0.5\no: 0o17\nx: 0x1F\ne: 1e3\ni: -.inf\n"
    text += "s: !!str 5\nq: !!int '7'\n"
    data, _ = parse_yaml_text(text)
    assert data == {
        "u": "1_000",
        "b": "0b101",
        "h": "+0x1F",
        "f": "1_0.5",
        "o": 15,
        "x": 31,
        "e": 1000.0,
        "i": float("-inf"),
        "s": "5",
        "q": 7,
    }


def test_on_key_of_lookup_join_and_deduplicate(write_contract: Write) -> None:
    text = MINIMAL + (
        "links:\n  - {name: regions, path: regions.parquet}\n"
        "transformations:\n"
        "  - lookup: {field: region, reference: regions, on: email, key: code, value: region}\n"
        "  - join:\n      reference: regions\n      on: email\n      key: code\n      fields: [region]\n"
        "  - deduplicate: {on: [id], sort_by: [email]}\n"
    )
    contract = load_contract(write_contract(text))
    lookup, join, dedup = (t.op for t in contract.transformations)
    assert lookup.on == "email" and join.on == "email"
    assert dedup.on == ["id"]


def test_duplicate_keys_are_an_error(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "tier: gold\ntier: silver\n"))
    assert "duplicate key" in problem.message
    assert problem.line == 11


def test_one_document_per_file(write_contract: Write) -> None:
    problem = only_problem(write_contract(MINIMAL + "---\nversion: '2.0.0'\n"))
    assert "exactly one YAML document" in problem.message


def test_syntax_error_has_position(write_contract: Write) -> None:
    problem = only_problem(write_contract("version: '1.0.0'\ninfo: {title: [x\n"))
    assert problem.message.startswith("invalid YAML")
    assert problem.line >= 2


def test_anchors_aliases_and_merge_keys(write_contract: Write) -> None:
    text = """\
    version: "1.0.0"
    info: {title: t}
    x-defaults: &id_field {type: bigint, required: true}
    model:
      fields:
        - <<: *id_field
          name: id
        - {name: other_id, <<: *id_field, required: false}
    """
    # `x-defaults` is unknown at the root, so read the anchors through plain YAML loading first.
    path = write_contract(text)
    data, positions = load_yaml(path)
    assert data["model"]["fields"][0] == {"type": "bigint", "required": True, "name": "id"}
    assert data["model"]["fields"][1]["required"] is False
    assert positions["model.fields[0].name"] == (7, 7)
    del data["x-defaults"]
    contract = load_contract(data)
    assert [f.is_required for f in contract.model.fields] == [True, False]


def test_missing_file() -> None:
    with pytest.raises(ContractError, match="cannot read file"):
        load_contract(Path("/nonexistent/contract.yaml"))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("false", False),
        ("42", 42),
        ("1.5", 1.5),
        ("yes", "yes"),
        ("null", None),
        ("[a, b]", ["a", "b"]),
        ("", ""),
    ],
)
def test_parse_scalar(text: str, value: object) -> None:
    assert parse_scalar(text) == value
