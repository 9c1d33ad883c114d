"""DRIVER §12: a pipeline run's reference cache loads each link once, keyed by what decides its rows, and
drops a link when its location is committed to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.driver.spark_runner import wants_reference_cache
from lakelogic.engines.spark.link_cache import LinkCache

pytestmark = pytest.mark.spark


def _doc(link_path: Path, **link: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Orders"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "customer", "type": "string"}]},
        "links": [{"name": "customers", "path": str(link_path), "type": "parquet", **link}],
        "quality": {
            "row_rules": [
                {"referential_integrity": {"field": "customer", "reference": "customers", "key": "code"}}
            ]
        },
    }


def test_links_load_once_per_pipeline_run_and_a_commit_to_their_location_drops_them(
    spark: Any, tmp_path: Path
) -> None:
    link = tmp_path / "customers"
    spark.createDataFrame([("a",), ("b",)], "code string").write.parquet(str(link))
    batch = spark.createDataFrame([(1, "a"), (2, "c")], "id int, customer string")
    cache = LinkCache()

    def quarantined(doc: dict[str, Any]) -> int:
        return DataProcessor(doc, spark=spark).run(batch, link_cache=cache).report.counts.quarantined

    assert quarantined(_doc(link)) == 1
    assert quarantined(_doc(link)) == 1
    assert (cache.loads, cache.hits) == (1, 1)
    assert quarantined(_doc(link, filter="code = 'a'")) == 1  # another filter: another entry
    assert cache.loads == 2

    # a writer outside Spark (Spark recaches paths it writes itself): the cached link keeps its rows
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"code": ["c"]}), link / "part-from-elsewhere.parquet")
    assert quarantined(_doc(link)) == 1, "a cached link keeps the rows of its first load"
    assert cache.invalidate(f"file://{link}/") == 2  # both entries of that location, however spelt
    assert quarantined(_doc(link)) == 0  # reloaded: customer c exists now
    cache.release()
    assert cache.frames == {}


def test_contracts_opt_in_through_metadata_or_the_driver_flag() -> None:
    class Contract:
        def __init__(self, metadata: dict[str, Any]) -> None:
            self.metadata = metadata

    assert wants_reference_cache(Contract({"cache_reference_links": True}), False)
    assert not wants_reference_cache(Contract({}), False)
    assert wants_reference_cache(Contract({}), True)


def test_a_commit_to_a_catalog_table_drops_the_links_read_from_it() -> None:
    """A link written ``table: silver.customers`` and a commit reported as the qualified target name are
    one location (DRIVER §12)."""
    from lakelogic.plan.steps import LoadLink
    from lakelogic.tables.target import qualify_table

    class Frame:
        released = False

        def persist(self, level: Any) -> Frame:
            return self

        def unpersist(self) -> None:
            self.released = True

    cache = LinkCache()
    frame = Frame()
    step = LoadLink(
        yaml_path="links[0]", name="customers", path=None, table="silver.customers", type="iceberg"
    )
    assert cache.get(step, lambda s: frame) is frame  # type: ignore[arg-type,return-value]
    assert cache.get(step, lambda s: Frame()) is frame  # type: ignore[arg-type,return-value]
    assert cache.invalidate(qualify_table("silver.customers")) == 1 and frame.released


def test_paths_that_differ_in_case_are_two_links_and_table_names_are_one() -> None:
    """`Codes.csv` and `codes.csv` are two files: sharing one cached frame validated a contract against the
    other contract's reference rows. Catalog identifiers are case-insensitive."""
    from lakelogic.engines.spark.link_cache import link_key
    from lakelogic.plan.steps import LoadLink

    def key(path: str | None = None, table: str | None = None) -> Any:
        return link_key(LoadLink(yaml_path="links[0]", name="codes", path=path, table=table, type="csv"))

    assert key("/data/ref/Codes.csv") != key("/data/ref/codes.csv")
    assert key("file:///data/ref/codes.csv/") == key("/data/ref/codes.csv")
    assert key(table="Silver.Codes") == key(table="silver.codes")
