"""Helpers for contract tests: write a YAML document to a file and collect the problems it has."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import ContractError, Problem

MINIMAL = """\
version: "1.0.0"
info:
  title: Orders
model:
  fields:
    - name: id
      type: integer
    - name: email
      type: string
"""


@pytest.fixture
def write_contract(tmp_path: Path) -> Callable[[str], Path]:
    """Write dedented YAML text to ``contract.yaml`` in a fresh directory; return the path."""
    counter = iter(range(1000))

    def write(text: str) -> Path:
        path = tmp_path / f"contract_{next(counter)}.yaml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


def problems_of(path: Path, **kwargs: object) -> list[Problem]:
    """The problems loading ``path`` raises (fails the test when it loads cleanly)."""
    with pytest.raises(ContractError) as info:
        load_contract(path, **kwargs)  # type: ignore[arg-type]
    return info.value.problems


def only_problem(path: Path, **kwargs: object) -> Problem:
    problems = problems_of(path, **kwargs)
    assert len(problems) == 1, [p.render() for p in problems]
    return problems[0]
