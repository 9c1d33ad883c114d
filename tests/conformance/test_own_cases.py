"""Our own reconstruction of the OLC conformance cases that the corpus sample lacks (SEMANTICS §23), plus
edge-case variants (ids ending ``-V<n>``), under ``own_cases/``. Same layout and case.yaml format as the
sample; run with the sample's harnesses: core-runtime cases like ``test_core_runtime``, materialization
cases like ``tests/tables/test_conformance_materialization`` (Delta target read back with ``deltalake``).
Expected rows are worked out from SEMANTICS.md, not from what the engine produces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.test_core_runtime import CASES, cases_at_level, run_core_case
from tests.tables.test_conformance_materialization import run_materialization_case

pytestmark = pytest.mark.spark

OWN_CASES = Path(__file__).resolve().parent / "own_cases"

# Every case id of the full suite (SEMANTICS §23).
SUITE_IDS = frozenset(
    {
        *(f"OLC-Q-00{n}" for n in (1, 2, 3)),
        "OLC-QT-001",
        *(f"OLC-D-00{n}" for n in (1, 2, 3)),
        "OLC-EO-001",
        "OLC-EO-002",
        *(f"OLC-T-{n:03d}" for n in range(1, 18)),
        *(f"OLC-X-00{n}" for n in (1, 2, 3)),
        "OLC-MERGE-001",
        "OLC-MERGE-002",
        "OLC-SCD2-001",
    }
)


def _ids(root: Path) -> set[str]:
    if not root.is_dir():
        return set()
    return {yaml.safe_load(meta.read_text())["id"] for meta in root.glob("*/case.yaml") if meta.is_file()}


@pytest.mark.parametrize("case", cases_at_level(OWN_CASES, "core-runtime"), ids=lambda p: p.name)
def test_own_core_runtime_case(case: Path, spark: Any) -> None:
    run_core_case(case, spark)


@pytest.mark.parametrize("case", cases_at_level(OWN_CASES, "materialization"), ids=lambda p: p.name)
def test_own_materialization_case(case: Path, spark: Any, tmp_path: Path) -> None:
    run_materialization_case(case, spark, str(tmp_path / case.name))


def test_own_cases_complete_the_suite(shared_dir: Path) -> None:
    """Sample plus own cases name every §23 id; own ids are unique and never duplicate a sample id."""
    own = [yaml.safe_load(m.read_text())["id"] for m in sorted(OWN_CASES.glob("*/case.yaml"))]
    assert len(own) == len(set(own)), f"duplicate ids: {own}"
    sample = _ids(CASES)
    assert not sample & set(own), f"own cases repeat sample ids: {sorted(sample & set(own))}"
    missing = SUITE_IDS - sample - set(own)
    assert not missing, f"§23 ids with no case: {sorted(missing)}"
    assert {i.split("-V")[0] for i in own} <= SUITE_IDS, "every own case reconstructs or varies a §23 id"
