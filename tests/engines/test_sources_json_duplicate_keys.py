"""JSON records that repeat a key (SEMANTICS §3.3): malformed records, quarantined; the rest of the source
loads. Spark's schema inference used to fail the whole read (COLUMN_ALREADY_EXISTS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor, RunResult
from tests.engines.helpers import contract, rows_of

pytestmark = pytest.mark.spark

FIELDS = [{"name": "id", "type": "integer", "required": True}, {"name": "name", "type": "string"}]


def _run(
    spark: Any,
    path: Path,
    fields: list[dict[str, Any]] = FIELDS,
    blocks: dict[str, Any] | None = None,
    **source: Any,
) -> RunResult:
    source = {"type": "landing", "path": str(path), "format": "jsonl", **source}
    return DataProcessor(contract(fields, source=source, **(blocks or {})), spark=spark).run()


def _errors(result: RunResult) -> list[str]:
    return sorted(r["_lakelogic_errors"][0] for r in result.bad.collect())


def test_a_json_line_repeating_a_key_is_malformed_whatever_the_values(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"id": 1, "name": "a"}\n'
        '{"id": 2, "id": 3, "name": "b"}\n'
        '{"id": 4, "name": "c", "id": 4}\n'
        '{"id": 5, "name": \n'
        '{"id": 6, "name": "f"}\n'
    )
    result = _run(spark, path)
    counts = result.report.counts
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id", "name") == [(1, "a"), (6, "f")]
    assert _errors(result) == [
        'Rule failed: malformed_record (duplicate key "id": {"id": 2, "id": 3, "name": "b"})',
        'Rule failed: malformed_record (duplicate key "id": {"id": 4, "name": "c", "id": 4})',
        'Rule failed: malformed_record (unparseable record: {"id": 5, "name": )',
    ]
    assert rows_of(result.bad, "id", "name", "_lakelogic_categories") == [(None, None, ["schema"])] * 3
    assert (counts.source, counts.good, counts.quarantined) == (5, 2, 3) and counts.reconciles()
    assert {r.name: r.failed for r in result.report.rules}["malformed_record"] == 3


def test_keys_differing_only_in_case_repeat_a_key(spark: Any, tmp_path: Path) -> None:
    """Spark's column names are case-insensitive by default, so ``Id`` and ``id`` are one column."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"Id": 1, "id": 2, "name": "x"}\n{"id": 3, "name": "y"}\n')
    result = _run(spark, path)
    assert rows_of(result.good, "id", "name") == [(3, "y")], result.report.error
    assert _errors(result) == [
        'Rule failed: malformed_record (duplicate key "Id", "id": {"Id": 1, "id": 2, "name": "x"})'
    ]
    assert result.report.counts.reconciles()


def test_keys_repeated_inside_nested_objects_are_found(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"id": 1, "meta": {"k": 1}, "tags": [{"t": "a"}]}\n'
        '{"id": 2, "meta": {"k": 1, "k": 2}, "tags": []}\n'
        '{"id": 3, "meta": {"k": 3}, "tags": [{"t": "b"}, {"t": "c", "t": "d"}]}\n'
    )
    fields = [*FIELDS[:1], {"name": "meta", "type": "json"}, {"name": "tags", "type": "json"}]
    result = _run(spark, path, fields)
    assert rows_of(result.good, "id", "meta") == [(1, '{"k":1}')], result.report.error
    errors = _errors(result)
    assert errors[0].startswith('Rule failed: malformed_record (duplicate key "meta.k": {"id": 2,')
    assert errors[1].startswith('Rule failed: malformed_record (duplicate key "tags[].t": {"id": 3,')
    assert result.report.counts.source == 3 and result.report.counts.reconciles()


def test_a_multiline_array_quarantines_only_the_element_repeating_a_key(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text('[\n  {"id": 1, "name": "a"},\n  {"id": 2, "id": 2, "name": "b"},\n  {"id": 3}\n]\n')
    result = _run(spark, path, format="json", options={"multiline": True})
    counts = result.report.counts
    assert rows_of(result.good, "id", "name") == [(1, "a"), (3, None)], result.report.error
    assert _errors(result) == [
        'Rule failed: malformed_record (duplicate key "id": {"id":2,"id":2,"name":"b"})'
    ]
    assert (counts.source, counts.good, counts.quarantined) == (3, 2, 1) and counts.reconciles()


def test_the_reread_keeps_partition_folders_and_source_files(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "landing"
    for day, text in (
        ("1", '{"id": 1, "name": "a"}\n'),
        ("2", '{"id": 2, "id": 9}\n{"id": 3, "name": "c"}\n'),
    ):
        (root / f"day={day}").mkdir(parents=True)
        (root / f"day={day}" / "part.jsonl").write_text(text)
    result = _run(spark, root, format="json", blocks={"lineage": {"enabled": True}})
    good = [(r["id"], r["day"], Path(r["_lakelogic_source"]).parent.name) for r in result.good.collect()]
    assert sorted(good) == [(1, 1, "day=1"), (3, 2, "day=2")], result.report.error
    assert result.report.counts.quarantined == 1 and result.report.counts.reconciles()
