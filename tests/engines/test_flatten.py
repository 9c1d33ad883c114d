"""``source.flatten_nested`` (SEMANTICS §3.1): structs become ``parent_child`` columns before any op."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark

ROWS = [
    {
        "id": 1,
        "customer": {"name": "Ada", "address": {"city": "Oslo", "zip": "0150"}},
        "meta": {"source": "crm"},
        "tags": [{"k": "a"}],
    },
    {"id": 2, "customer": {"name": "Bo", "address": {"city": None, "zip": "1000"}}, "meta": None, "tags": []},
]


def test_true_flattens_every_struct_at_any_depth_and_leaves_arrays(spark: Any) -> None:
    doc = contract(
        [
            {"name": "id", "type": "int", "required": True},
            {"name": "customer_name", "type": "string"},
            {"name": "customer_address_city", "type": "string"},
            {"name": "meta_source", "type": "string"},
        ],
        source={"type": "landing", "path": "unused", "flatten_nested": True},
        quality={"row_rules": [{"name": "city_known", "sql": "customer_address_city IS NOT NULL"}]},
    )
    result = run(spark, doc, ROWS)
    good, bad = result
    assert rows_of(good, "id", "customer_name", "customer_address_city", "meta_source") == [
        (1, "Ada", "Oslo", "crm")
    ]
    assert rows_of(bad, "id", "customer_address_zip", "meta_source") == [(2, "1000", None)]
    assert "tags" in good.columns and dict(good.dtypes)["tags"].startswith("array<struct")
    assert "customer" not in good.columns


def test_listed_paths_flatten_only_those_structs_and_the_way_to_them(spark: Any) -> None:
    doc = contract(
        [{"name": "id", "type": "int"}],
        source={"type": "landing", "path": "unused", "flatten_nested": ["customer.address"]},
    )
    good, _ = run(spark, doc, ROWS)
    assert {"customer_name", "customer_address_city", "customer_address_zip", "meta"} <= set(good.columns)
    assert dict(good.dtypes)["meta"].startswith("struct")


def test_an_unknown_path_or_a_name_clash_is_a_plan_error(spark: Any) -> None:
    unknown = contract(
        [{"name": "id", "type": "int"}],
        source={"type": "landing", "path": "unused", "flatten_nested": ["customer.phone"]},
    )
    report = run(spark, unknown, ROWS).report
    assert report.error is not None and report.error.type == "plan"
    assert "source.flatten_nested" in report.error.message and "customer.address" in report.error.message

    clash = contract(
        [{"name": "id", "type": "int"}],
        source={"type": "landing", "path": "unused", "flatten_nested": True},
    )
    rows = [{"id": 1, "meta": {"source": "crm"}, "meta_source": "x"}]
    report = run(spark, clash, rows).report
    assert report.error is not None and report.error.type == "plan" and "meta_source" in report.error.message
