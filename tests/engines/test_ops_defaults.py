"""Defaults and fill values of ops on text columns (SEMANTICS §9.2): a CSV column is text until step 5, and
Spark has no common type for text and booleans, so a boolean default is written as its text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from tests.engines.helpers import contract, rows_of

pytestmark = pytest.mark.spark


def test_boolean_defaults_on_text_columns(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "in.csv"
    landing.write_text("id,active,code,score\n1,true,a,5\n2,,b,50\n3,false,z,\n")
    ref = tmp_path / "ref"
    spark.createDataFrame([("a", "yes")], "code string, flag string").write.parquet(str(ref))
    fields = [
        {"name": "id", "type": "integer"},
        {"name": "active", "type": "boolean"},
        {"name": "code", "type": "string"},
        {"name": "flag", "type": "boolean"},
        {"name": "joined_flag", "type": "boolean"},
        {"name": "band", "type": "string"},
    ]
    doc = contract(
        fields,
        source={"type": "landing", "path": str(landing), "format": "csv"},
        links=[{"name": "codes", "path": str(ref), "type": "parquet"}],
        transformations=[
            {"coalesce": {"field": "active", "default": False}},
            {"lookup": {"field": "flag", "reference": "codes", "on": "code", "key": "code", "value": "flag",
                        "default_value": True}},
            {"join": {"reference": "codes", "on": "code", "key": "code", "fields": ["flag"],
                      "prefix": "joined_", "defaults": {"flag": False}}},
            {"bucket": {"field": "band", "source": "score", "bins": [{"label": "low", "lt": 10}],
                        "default": False}},
        ],
    )  # fmt: skip
    result = DataProcessor(doc, spark=spark).run()
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id", "active", "flag", "joined_flag", "band") == [
        (1, True, True, True, "low"),
        (2, False, True, False, "false"),
        (3, False, True, False, "false"),
    ]
