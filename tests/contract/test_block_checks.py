"""Consistency checks inside single blocks (each must fail with a message naming the rule)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.errors import ContractError

BASE: dict[str, Any] = {
    "version": "1.0.0",
    "info": {"title": "t", "domain": "sales"},
    "model": {"fields": [{"name": "id", "type": "int"}]},
}


def _problems(**extra: Any) -> list[tuple[str, str]]:
    with pytest.raises(ContractError) as info:
        load_contract({**BASE, **extra})
    return [(p.path, p.message) for p in info.value.problems]


@pytest.mark.parametrize(
    ("extra", "path", "fragment"),
    [
        (
            {
                "materialization": {"strategy": "merge", "fact": {"type": "transaction"}},
                "primary_key": ["id"],
            },
            "materialization",
            "needs strategy 'append'",
        ),
        (
            {"materialization": {"strategy": "merge", "format": "csv"}, "primary_key": ["id"]},
            "materialization",
            "only strategies append and overwrite",
        ),
        (
            {"external_logic": {"type": "notebook", "path": "n.ipynb", "engine": "spark"}},
            "external_logic",
            "output_path is required",
        ),
        (
            {"extraction": {"provider": "regex", "text_column": "t"}},
            "extraction",
            "needs 'text_column' and 'patterns'",
        ),
        ({"links": [{"name": "ref"}]}, "links[0]", "needs 'path' or 'table'"),
        (
            {"source": {"type": "landing", "post_ingestion": {"action": "archive"}}},
            "source.post_ingestion",
            "needs archive_path",
        ),
        ({"source": {"type": "dlt", "dlt": {"resource": "r"}}}, "source.dlt", "needs 'source' or 'base_url'"),
        (
            {"quality": {"row_rules": [{"name": "r", "sql": "id", "must_be_between": [5, 1]}]}},
            "quality.row_rules[0]",
            "low <= high",
        ),
        (
            {"quality": {"dataset_rules": [{"row_count_between": {"min": 5, "max": 1}}]}},
            "quality.dataset_rules[0].row_count_between",
            "min <= max",
        ),
        (
            {"quality": {"row_rules": [{"lifecycle_window": {"field": "ts"}}]}},
            "quality.row_rules[0].lifecycle_window",
            "missing window",
        ),
        (
            {"transformations": [{"rename": {"from": "a"}}]},
            "transformations[0].rename",
            "both 'from' and 'to'",
        ),
        (
            {"transformations": [{"pivot": {"id_vars": ["id"], "value_col": "v"}}]},
            "transformations[0].pivot",
            "needs 'pivot_col' or 'pivot_cols'",
        ),
        (
            {
                "transformations": [
                    {"date_range_explode": {"output": "d", "start_col": "s", "interval": "1y"}}
                ]
            },
            "transformations[0].date_range_explode.interval",
            "should match pattern",
        ),
        (
            {"quarantine": {"notifications": [{"message_template": "a", "message_template_file": "b"}]}},
            "quarantine.notifications[0]",
            "not both",
        ),
        (
            {"schema_policy": {"unknown_fields": "keep"}},
            "schema_policy.unknown_fields",
            "unknown unknown_fields",
        ),
    ],
)
def test_block_consistency(extra: dict[str, Any], path: str, fragment: str) -> None:
    found = _problems(**extra)
    assert any(p == path and fragment in m for p, m in found), found


def test_identity_helpers_and_paths(tmp_path: Path) -> None:
    contract = load_contract({**BASE, "metadata": {"system": "crm"}})
    assert (contract.domain, contract.system) == ("sales", "crm")
    file = tmp_path / "c.yaml"
    file.write_text("version: '1.0.0'\ninfo: {title: t}\nmodel: {fields: []}\n")
    loaded = load_contract(file)
    assert loaded.resolve_path("ref/regions.parquet") == str(tmp_path.resolve() / "ref" / "regions.parquet")
    for unchanged in ("s3://bucket/x", "/abs/path", "table:cat.ns.t"):
        assert loaded.resolve_path(unchanged) == unchanged


def test_scd2_unknown_member_is_typed() -> None:
    mat = {"strategy": "scd2", "scd2": {"unknown_member": {"surrogate_key_value": "-1", "default_valus": {}}}}
    found = _problems(materialization=mat, primary_key=["id"])
    assert found == [("materialization.scd2.unknown_member.default_valus", "unknown key")]
