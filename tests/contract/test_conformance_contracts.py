"""Every contract of the shared OLC conformance corpus loads into the models."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.contract.models import Contract


def _cases(shared_dir: Path) -> list[Path]:
    cases = sorted((shared_dir / "olc" / "conformance" / "cases").glob("*/contract.olc.yaml"))
    assert cases, "the conformance corpus has no contracts"
    return cases


def test_every_conformance_contract_loads(shared_dir: Path) -> None:
    loaded = {path.parent.name: load_contract(path) for path in _cases(shared_dir)}
    for name, contract in loaded.items():
        assert isinstance(contract, Contract), name
        assert contract.source_file is not None and contract.source_file.name == "contract.olc.yaml"
        assert contract.contract_dir == contract.source_file.parent
        assert contract.field_names, f"{name}: no model fields"


def test_conformance_details_survive_loading(shared_dir: Path) -> None:
    cases = shared_dir / "olc" / "conformance" / "cases"
    regex = load_contract(cases / "regex-match" / "contract.olc.yaml")
    rule = regex.quality.row_rules[0]
    # OLC-Q-003: the sibling `name` is kept as the rule name.
    assert rule.name == "name_is_lower"
    assert rule.regex_match.pattern == "^[a-z]+$"

    composite = load_contract(cases / "dataset-unique-composite" / "contract.olc.yaml")
    unique = composite.quality.dataset_rules[0]
    assert unique.unique == ["order_id", "line_no"]
    assert unique.name == "order_line_unique"


@pytest.mark.parametrize("case", ["scd2-dimension", "merge-insert-update"])
def test_materialization_cases(shared_dir: Path, case: str) -> None:
    contract = load_contract(shared_dir / "olc" / "conformance" / "cases" / case / "contract.olc.yaml")
    assert contract.materialization is not None
    assert contract.materialization.strategy in ("merge", "scd2")
    if contract.materialization.strategy == "scd2":
        assert contract.materialization.scd2 is not None
