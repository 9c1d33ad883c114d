"""Ops inside a full contract run: phases, row counts from row effects, and observed op warnings in the
report (lookup_duplicate_keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

CONTRACT = """
version: 1.0.0
info: { title: Ops pipeline, table_name: ops_pipeline }
model:
  fields:
    - { name: id, type: integer, required: true }
    - { name: c, type: integer }
    - { name: s, type: string }
    - { name: e, type: string }
    - { name: region, type: string }
    - { name: day, type: date }
links:
  - { name: regions, path: "regions.jsonl", type: jsonl }
transformations:
  - deduplicate: { on: [id], sort_by: [s] }
  - lookup: { field: region, reference: regions, on: c, key: code, value: region, default_value: none }
  - date_range_explode: { output: day, start_col: s, end_col: e }
"""


def test_ops_in_a_contract_run(spark: Any, tmp_path: Path) -> None:
    from lakelogic import DataProcessor

    (tmp_path / "regions.jsonl").write_text(
        '{"code": "1", "region": "emea"}\n{"code": "1", "region": "amer"}\n{"code": "2", "region": "apac"}\n'
    )
    (tmp_path / "contract.yaml").write_text(CONTRACT)
    frame = spark.createDataFrame(
        [
            (1, 1, "2024-01-01", "2024-01-03"),
            (1, 1, "2024-01-02", "2024-01-03"),  # latest s wins (order desc)
            (2, 2, "2024-01-05", "2024-01-01"),  # end before start: no rows
            (3, 9, "2024-01-01", "2024-01-01"),
        ],
        "id int, c int, s string, e string",
    )
    result = DataProcessor(tmp_path / "contract.yaml", spark=spark).run(frame)
    report = result.report
    assert report.status == "succeeded", report.error
    good, _bad = result
    assert good is not None
    got = [(r["id"], r["region"], str(r["day"])) for r in good.orderBy("id", "day").collect()]
    assert got == [(1, "amer", "2024-01-02"), (1, "amer", "2024-01-03"), (3, "none", "2024-01-01")]
    counts = report.counts
    assert (counts.source, counts.good, counts.deduplicated) == (4, 3, 1)
    # the empty range (id 2) is filtered and id 1's extra day expanded, though the op's net change is 0
    assert (counts.filtered, counts.expanded) == (2, 1), "dedup 1 + empty range 1; one extra day"
    assert counts.reconciles()
    duplicate_warnings = [w for w in report.warnings if w.startswith("lookup_duplicate_keys")]
    assert len(duplicate_warnings) == 1 and "transformations[1]" in duplicate_warnings[0]


@pytest.mark.parametrize(
    ("how", "expected_rows", "filtered", "expanded"),
    [
        # id 2 misses, cid 10 matches two reference rows, the reference's cid 30 matches nothing
        ("inner", [(1, "a"), (1, "a2")], 1, 1),
        ("left", [(1, "a"), (1, "a2"), (2, None)], 0, 1),
        ("right", [(1, "a"), (1, "a2"), (None, "c")], 1, 2),
    ],
)
def test_join_counts_misses_as_filtered_and_extra_rows_as_expanded(
    spark: Any, tmp_path: Path, how: str, expected_rows: list[tuple[Any, ...]], filtered: int, expanded: int
) -> None:
    from lakelogic import DataProcessor

    link = tmp_path / "seg.parquet"
    spark.createDataFrame([(10, "a"), (10, "a2"), (30, "c")], "cid int, segment string").write.parquet(
        str(link)
    )
    doc = {
        "version": "1.0.0",
        "info": {"title": "Join counts", "table_name": "join_counts"},
        "model": {
            "fields": [
                {"name": n, "type": t}
                for n, t in (("id", "integer"), ("cid", "integer"), ("segment", "string"))
            ]
        },
        "links": [{"name": "seg", "path": str(link)}],
        "transformations": [
            {"join": {"reference": "seg", "on": "cid", "key": "cid", "fields": ["segment"], "type": how}}
        ],
    }
    frame = spark.createDataFrame([(1, 10), (2, 99)], "id int, cid int")
    result = DataProcessor(doc, spark=spark).run(frame)
    assert result.report.error is None, result.report.error
    good = sorted(((r["id"], r["segment"]) for r in result.good.collect()), key=repr)
    assert good == sorted(expected_rows, key=repr)
    counts = result.report.counts
    assert (counts.filtered, counts.expanded) == (filtered, expanded)
    assert counts.reconciles() and "__ll_no_output_row" not in result.good.columns
