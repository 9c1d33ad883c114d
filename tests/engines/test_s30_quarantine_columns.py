"""The quarantine frame has every model column whichever ops ran (§8, §11; a helper's audit): a column only
a post op creates is NULL for rows quarantined before it. With a post join, or a post filter after the
derive, split mode left the column out, so the quarantine table's schema followed the op layout."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark

LAYOUTS = {
    "post join": [{"join": {"reference": "ref", "on": "c", "key": "code", "fields": ["name"]}}],
    "post derive then filter": [
        {"derive": {"field": "name", "sql": "'n'"}},
        {"filter": {"sql": "true"}, "phase": "post"},
    ],
    "post lookup": [
        {"lookup": {"field": "name", "reference": "ref", "on": "c", "key": "code", "value": "name"}}
    ],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_post_created_model_columns_are_null_in_quarantine(spark: Any, tmp_path: Any, layout: str) -> None:
    from lakelogic.api import DataProcessor

    ref = str(tmp_path / "ref")
    spark.createDataFrame([("1", "one"), ("2", "two")], "code string, name string").write.parquet(ref)
    doc = {
        "version": "1.0.0",
        "info": {"title": "q", "table_name": "q"},
        "model": {
            "fields": [
                {"name": "id", "type": "integer"},
                {"name": "c", "type": "integer"},
                {"name": "name", "type": "string"},
            ]
        },
        "links": [{"name": "ref", "path": ref}],
        "quality": {"row_rules": [{"name": "idpos", "sql": "id > 1"}]},
        "transformations": LAYOUTS[layout],
    }
    source = spark.createDataFrame([(1, "1"), (2, "2")], "id int, c string")
    result = DataProcessor(doc, spark=spark).run(source)
    bad = result.bad.collect()
    assert result.bad.columns[:3] == ["id", "c", "name"]
    assert [(r["id"], r["name"]) for r in bad] == [(1, None)]
    assert dict(result.bad.dtypes)["name"] == "string"
