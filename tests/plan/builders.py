"""Helpers for compiler tests: build a contract from a small dict and compile it (no engine needed)."""

from __future__ import annotations

import copy
from typing import Any

from lakelogic.contract.loader import load_contract
from lakelogic.plan.compiler import compile_contract
from lakelogic.plan.steps import CheckDataset, DatasetRule, Plan, RowRule

BASE: dict[str, Any] = {
    "version": "1.0.0",
    "info": {"title": "Orders", "table_name": "orders"},
    "model": {
        "fields": [
            {"name": "id", "type": "integer", "required": True},
            {"name": "status", "type": "string"},
            {"name": "amount", "type": "double"},
            {"name": "email", "type": "string"},
        ]
    },
}


def contract_doc(**blocks: Any) -> dict[str, Any]:
    """BASE with top-level blocks replaced (``model=...``, ``quality=...``)."""
    doc = copy.deepcopy(BASE)
    doc.update(copy.deepcopy(blocks))
    return doc


def compile_doc(doc: dict[str, Any] | None = None, **kwargs: Any) -> Plan:
    return compile_contract(load_contract(doc if doc is not None else contract_doc()), **kwargs)


def row_rules(**blocks: Any) -> dict[str, RowRule]:
    """Compile BASE + blocks; row rules by name."""
    return {r.name: r for r in compile_doc(contract_doc(**blocks)).row_rules}


def dataset_rules(plan: Plan) -> dict[str, DatasetRule]:
    step = plan.of_kind(CheckDataset)[0]
    assert isinstance(step, CheckDataset)
    return {r.name: r for r in step.rules}
