"""A JSON number too large for a decimal field's read type makes its record malformed only where the read
parses that field: the malformed branch must parse every field, or the row is in neither output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engines.helpers import contract

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("materialize", [False, True])
def test_a_decimal_overflowing_its_read_type_is_quarantined_not_lost(
    spark: Any, tmp_path: Path, materialize: bool
) -> None:
    from lakelogic.api import DataProcessor

    source = tmp_path / "in.jsonl"
    source.write_text('{"id":1,"v":1.25}\n{"id":2,"v":1000.0}\n{"id":3,"v":1.5}\n')
    fields = [{"name": "id", "type": "integer"}, {"name": "v", "type": "decimal(5,2)"}]
    landing = {"type": "landing", "path": str(source), "format": "json"}
    doc = contract(fields, source=landing, materialization={"strategy": "append", "format": "delta"})
    processor = DataProcessor(doc, spark=spark)
    result = processor.run(materialize=materialize, target=str(tmp_path / "t") if materialize else None)
    report = result.report
    assert report.status == "succeeded", report.error
    assert (report.counts.good, report.counts.quarantined) == (2, 1)
    if materialize:
        assert report.materialization is not None and report.materialization.quarantine_rows_written == 1
    else:
        [bad] = result.bad.collect()
        assert '"v":1000.0' in bad["_lakelogic_errors"][0]
