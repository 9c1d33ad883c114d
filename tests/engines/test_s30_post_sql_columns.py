"""A required model column a post ``sql`` op computes is not missing at step 5 (§8; a helper's audit):
the plan knows the columns the query computes under names of its own."""

from __future__ import annotations

from typing import Any

import pytest

from lakelogic.contract.loader import load_contract
from lakelogic.plan.compiler import compile_contract
from lakelogic.plan.steps import EnforceSchema

DOC = {
    "version": "1.0.0",
    "info": {"title": "post sql", "table_name": "post_sql"},
    "model": {
        "fields": [
            {"name": "id", "type": "integer", "required": True},
            {"name": "z", "type": "integer", "required": True},
        ]
    },
    "quality": {"row_rules": [{"name": "id_positive", "sql": "id > 0"}]},
    "transformations": [
        {"sql": "SELECT id, id * 2 AS z FROM source UNION ALL SELECT id, 0 AS z FROM source"}
    ],
}


def test_the_plan_knows_what_a_post_sql_op_computes() -> None:
    plan = compile_contract(load_contract(DOC))
    [enforce] = plan.of_kind(EnforceSchema)
    assert isinstance(enforce, EnforceSchema) and enforce.post_created == ("z",)  # `id` is passed through
    phases = {r.name: r.phase.value for s in plan.steps for r in getattr(s, "rules", ())}
    assert phases["id_positive"] == "pre"  # a rule on a passed-through column keeps its phase


@pytest.mark.spark
def test_a_required_column_from_a_post_sql_op_runs(spark: Any) -> None:
    from lakelogic.api import DataProcessor

    source = spark.createDataFrame([(1,), (2,)], "id int")
    result = DataProcessor(DOC, spark=spark).run(source)
    assert result.report.status == "succeeded", result.report.error
    assert sorted((r["id"], r["z"]) for r in result.good.collect()) == [(1, 0), (1, 2), (2, 0), (2, 4)]
