"""Partition folder values of Parquet sources keep their text when the model reads them as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engines.helpers import contract

pytestmark = pytest.mark.spark


def test_a_text_partition_column_keeps_its_leading_zeros(spark: Any, tmp_path: Path) -> None:
    """`region=001` was inferred as the integer 1 and written as '1' into a string field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakelogic.api import DataProcessor

    landing = tmp_path / "landing"
    for region, ident in (("001", 1), ("010", 2)):
        (landing / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [ident]}), landing / f"region={region}" / "part.parquet")
    fields = [{"name": "id", "type": "integer"}, {"name": "region", "type": "string"}]
    doc = contract(fields, source={"type": "landing", "path": str(landing), "format": "parquet"})
    good = DataProcessor(doc, spark=spark).run().good
    assert sorted((r["id"], r["region"]) for r in good.collect()) == [(1, "001"), (2, "010")]
    # a numeric partition column keeps Spark's inferred type
    doc["model"]["fields"][1]["type"] = "integer"
    numbers = DataProcessor(doc, spark=spark).run().good
    assert sorted((r["id"], r["region"]) for r in numbers.collect()) == [(1, 1), (2, 10)]
