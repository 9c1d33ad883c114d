"""Each node's Spark jobs run in its own FAIR pool and job group, set per worker thread (DRIVER §4.4)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lakelogic.driver.spark_runner import node_scope

pytestmark = pytest.mark.spark


def test_pool_and_job_group_are_per_thread(spark: Any) -> None:
    sc = spark.sparkContext
    seen: dict[str, str | None] = {}

    def work(node_id: str) -> None:
        with node_scope(sc, node_id, f"test {node_id}"):
            seen[node_id] = sc.getLocalProperty("spark.scheduler.pool")
            spark.range(100).selectExpr("sum(id)").collect()
        seen[node_id + ":after"] = sc.getLocalProperty("spark.scheduler.pool")

    threads = [threading.Thread(target=work, args=(n,)) for n in ("silver.a", "silver.b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["silver.a"] == "silver.a" and seen["silver.b"] == "silver.b"
    assert seen["silver.a:after"] is None and seen["silver.b:after"] is None
    tracker = sc.statusTracker()
    assert tracker.getJobIdsForGroup("silver.a") and tracker.getJobIdsForGroup("silver.b")
    assert sc.getLocalProperty("spark.scheduler.pool") is None  # the test's own thread is untouched
