"""Contracts: YAML → strict, frozen Pydantic models of the Open Lakehouse Contract v1.

``load_contract(path_or_mapping, overrides=..., env=...)`` is the entry point; every problem in a
document is reported at once in one :class:`lakelogic.errors.ContractError`.
"""

from __future__ import annotations

from lakelogic.contract.loader import apply_overrides, load_contract, load_yaml
from lakelogic.contract.models import Contract, Transformation
from lakelogic.contract.schema import contract_json_schema

__all__ = [
    "Contract",
    "Transformation",
    "apply_overrides",
    "contract_json_schema",
    "load_contract",
    "load_yaml",
]
