"""Text casts keep their generated code small enough for whole-stage code generation.

The integer cast's slow path (taken only when the fast one gives NULL) repeated a guarded trim in each
of its many uses of the trimmed text: with four integer columns from a CSV file the stage's generated
method passed the JVM's 64 KB limit, and Spark silently ran the stage without whole-stage code
generation. With ``spark.sql.codegen.fallback`` off, that fallback is an error instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor

pytestmark = pytest.mark.spark


@pytest.fixture()
def no_codegen_fallback(spark: Any) -> Iterator[None]:
    key = "spark.sql.codegen.fallback"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def test_eight_integer_columns_of_a_csv_source_compile_as_one_stage(
    spark: Any, tmp_path: Path, no_codegen_fallback: None
) -> None:
    columns = [f"c{i}" for i in range(8)]
    data = tmp_path / "in"
    data.mkdir()
    rows = ["name," + ",".join(columns), "a," + ",".join(str(i) for i in range(8)), "b,1.0,x,3,4,5,6,7, 8 "]
    (data / "a.csv").write_text("\n".join(rows) + "\n")
    fields = [{"name": "name", "type": "string"}] + [{"name": c, "type": "integer"} for c in columns]
    doc = {
        "version": "1.0.0",
        "info": {"title": "wide", "table_name": "wide_ints"},
        "source": {"type": "landing", "path": str(data), "format": "csv"},
        "model": {"fields": fields},
    }
    out = tmp_path / "out"
    result = DataProcessor(doc, spark=spark).run(output_good=out / "good", output_bad=out / "bad")
    assert result.report.status == "succeeded", result.report.error
    good = spark.read.parquet(str(out / "good")).collect()
    bad = spark.read.parquet(str(out / "bad")).collect()
    assert [r["c7"] for r in good] == [7]
    [row] = bad  # "1.0" is an integer, " 8 " too; "x" is not
    assert (row["c0"], row["c7"]) == (1, 8)
    assert list(row["_lakelogic_errors"]) == ['Rule failed: c1_type (cannot cast "x" to integer)']
