"""Fixtures of the driver tests: a tiny two-contract project with a registry (no Spark)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lakelogic.runlog import set_default_store
from tests.driver.test_registry import contract, write


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    contract(tmp_path, "c/bronze/b.yaml", "bronze_orders", "bronze")
    contract(tmp_path, "c/silver/s.yaml", "silver_orders", "silver", "upstream: [bronze_orders]\n")
    write(tmp_path / "c" / "_registry.yaml", """\
    version: 1
    entries:
      - entity: orders
        contracts: {bronze: bronze/b.yaml, silver: silver/s.yaml}
    """)  # fmt: skip
    return tmp_path


@pytest.fixture(autouse=True)
def _reset_process_store() -> Iterator[None]:
    """The driver CLI sets a process-wide run-log store; tests run in one process, so undo it."""
    yield
    set_default_store(None)
