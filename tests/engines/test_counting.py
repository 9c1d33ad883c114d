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
