"""A link's ``query`` runs over a temporary view of the link's read; dropping that view must not release
another link's cached frame of the same location (Spark's ``dropTempView`` uncaches equal plans)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.engines.spark.link_cache import LinkCache
from tests.engines.test_link_cache import _doc

pytestmark = pytest.mark.spark


def test_a_link_query_keeps_the_cached_plain_link_of_the_same_location(spark: Any, tmp_path: Path) -> None:
    link = tmp_path / "customers"
    spark.createDataFrame([("a",), ("b",)], "code string").write.parquet(str(link))
    batch = spark.createDataFrame([(1, "a"), (2, "c")], "id int, customer string")
    cache = LinkCache()
    try:
        plain = DataProcessor(_doc(link, broadcast=False), spark=spark).run(batch, link_cache=cache)
        assert plain.report.counts.quarantined == 1
        [frame] = cache.frames.values()
        manager = spark._jsparkSession.sharedState().cacheManager()
        assert manager.lookupCachedData(frame._jdf).isDefined()
        queried = _doc(link, query="SELECT code FROM {link} WHERE code = 'a'")
        assert DataProcessor(queried, spark=spark).run(batch, link_cache=cache).report.counts.quarantined == 1
        assert manager.lookupCachedData(frame._jdf).isDefined(), "the plain link's cache was released"
    finally:
        cache.release()
