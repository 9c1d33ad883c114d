"""JSON records with text after their value are malformed (SEMANTICS §3.3), never read as their first
value alone."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from lakelogic.sources.json_trailing import has_trailing_text, trailing_records
from tests.engines.helpers import contract

LINES = [
    '{"id": 1, "name": "a"}',
    '{"id": 2, "name": "b"}{"id": 3, "name": "c"}',
    '{"id": 4, "name": "d"} junk',
    '[{"id": 5, "name": "e"}] [1]',
    '{"id": 6, "name": "f}x"}',  # looks like trailing text to the scan, but is one value
    '[{"id": 7, "name": "g"}, {"id": 8, "name": "h"}]',
    '{"id": 9, "name": "i"}   ',
    '{"id": 10, "name": ',  # broken: Spark's own malformed record, not this check's
]
TRAILING = {LINES[1], LINES[2], LINES[3]}


def test_the_scan_finds_exactly_the_records_with_text_after_their_value(tmp_path: Path) -> None:
    plain = tmp_path / "a.jsonl"
    plain.write_text("\ufeff" + "\r\n".join(LINES) + "\n")
    zipped = tmp_path / "b.jsonl.gz"
    zipped.write_bytes(gzip.compress(("\n".join(LINES)).encode()))
    assert trailing_records([str(plain)], {}) == TRAILING
    assert trailing_records([str(zipped)], {}) == TRAILING
    assert trailing_records([str(plain)], {"allowComments": "true"}) == set()  # `// x` may follow there
    document = tmp_path / "doc.json"
    document.write_text('{\n  "id": 1\n}\n{\n  "id": 2\n}\n')
    assert trailing_records([str(document)], {"multiLine": "true"}) == {document.read_text()}
    assert not has_trailing_text('  {"a": [1, {"b": "]x"}]}  ') and has_trailing_text('"a" "b"')


@pytest.mark.spark
def test_such_records_are_quarantined_with_their_text_and_the_rest_is_read(
    spark: Any, tmp_path: Path
) -> None:
    from lakelogic.api import DataProcessor

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.jsonl").write_text("\n".join(LINES) + "\n")
    (landing / "b.jsonl").write_text('{"id": 11, "name": "k"}\n')
    fields = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"}]
    doc = contract(fields, source={"type": "landing", "path": str(landing), "format": "json"})
    result = DataProcessor(doc, spark=spark).run()
    report = result.report
    assert report.error is None, report.error
    assert sorted(r["id"] for r in result.good.collect()) == [1, 6, 7, 8, 9, 11]
    bad = result.bad.collect()
    trailing = [r for r in bad if any("text after the JSON value" in e for e in r["_lakelogic_errors"])]
    assert len(trailing) == 3 and len(bad) == 4  # and the broken line, as before
    quoted = " ".join(e for r in trailing for e in r["_lakelogic_errors"])
    assert '\\"id\\": 3' in quoted or '"id": 3' in quoted  # the whole record is quoted, second value too
    c = report.counts
    assert c.source == c.good + c.quarantined + c.filtered - c.expanded
    assert any("hold text after their value" in w for w in report.warnings)
