"""Observation points (engines.spark.counting): deferred points are counted by the chain's next point."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from lakelogic.engines.spark.counting import Observations, sum_flag
from lakelogic.errors import EngineError

pytestmark = pytest.mark.spark


def test_deferred_points_are_counted_by_the_next_point_of_the_chain(spark: Any) -> None:
    obs = Observations(run_tag="t1")
    frame = spark.range(10).withColumn("odd", F.expr("id % 2 = 1"))
    obs.defer("source")
    obs.defer("checks", {"odd": sum_flag("odd")})
    side = obs.observe(frame.where("id < 3"), "side", branch=True)  # a filtered branch hosts nothing
    chain = obs.observe(frame, "chain")
    obs.require_hosted()  # nothing pending any more
    chain.write.format("noop").mode("overwrite").save()
    side.write.format("noop").mode("overwrite").save()
    assert obs.rows("source") == 10 and obs.rows("chain") == 10
    assert obs.value("checks", "odd") == 5 and obs.rows("checks") == 10
    assert obs.rows("side") == 3
    assert obs.has("source") and obs.hosts == {"source": "chain", "checks": "chain"}


def test_a_deferred_point_without_a_host_is_an_internal_error(spark: Any) -> None:
    obs = Observations(run_tag="t2")
    obs.defer("source")
    obs.observe(spark.range(2), "malformed", branch=True)
    with pytest.raises(EngineError, match="never hosted"):
        obs.require_hosted()
    with pytest.raises(EngineError, match="defined twice"):
        obs.defer("source")


@pytest.mark.parametrize(
    "transformations",
    [
        [{"deduplicate": {"on": ["g"]}, "phase": "post"}],
        [{"filter": {"sql": "amt > 5"}}, {"deduplicate": {"on": ["g"]}}],
        [{"sql": "SELECT g, MAX(amt) AS amt FROM source GROUP BY g"}],
    ],
)
def test_an_op_that_shuffles_no_rows_still_accounts_for_every_row(spark: Any, transformations: Any) -> None:
    """§12 on every run, with adaptive execution on (as in a real session): when every row was quarantined
    or filtered before a deduplicate/aggregation, its now empty stage must keep its count observations."""
    from tests.engines.helpers import contract, run

    doc = contract(
        [{"name": "g", "type": "string"}, {"name": "amt", "type": "integer"}],
        quality={"row_rules": [{"name": "big", "sql": "amt > 5"}]}
        if "filter" not in transformations[0]
        else {},
        transformations=transformations,
    )
    before = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        result = run(spark, doc, [{"g": "a", "amt": 1}, {"g": "b", "amt": 2}])
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", before)
    assert result.report.error is None, result.report.error
    counts = result.report.counts
    assert counts.source == 2 and counts.good == 0
    assert counts.quarantined + counts.filtered == 2
