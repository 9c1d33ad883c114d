"""Links and the rules and ops that read them (session 31 audit): key types, CSV/JSON reference files,
names, LakeLogic's own columns in ops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lakelogic.errors import ContractError
from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark


def _links(tmp_path: Path, name: str, text: str) -> list[dict[str, Any]]:
    path = tmp_path / name
    path.write_text(text)
    return [{"name": "r", "path": str(path)}]


def test_referential_integrity_compares_keys_of_two_types_as_text(spark: Any, tmp_path: Path) -> None:
    """`' 7'`, `'07'` and `'7.9'` matched the integer key 7: the equality cast the text to a number."""
    links = _links(tmp_path, "ref.jsonl", '{"k": 7}\n{"k": 8}\n')
    rule = {"referential_integrity": {"field": "c", "reference": "r", "key": "k"}}
    doc = contract([{"name": "c", "type": "string"}], links=links, quality={"row_rules": [rule]})
    values = ["7", "7.9", " 7", "07", "8.0", "8", None]
    result = run(spark, doc, [{"c": v} for v in values])
    assert sorted(str(v) for (v,) in rows_of(result.good, "c")) == ["7", "8", "None"]
    assert result.report.counts.quarantined == 4


def test_a_reference_rule_on_a_column_the_link_lacks_is_a_plan_error_naming_the_rule(
    spark: Any, tmp_path: Path
) -> None:
    links = _links(tmp_path, "ref.jsonl", '{"k": 7}\n')
    rule = {"referential_integrity": {"field": "c", "reference": "r", "key": "nokey"}}
    doc = contract([{"name": "c", "type": "integer"}], links=links, quality={"row_rules": [rule]})
    error = run(spark, doc, [{"c": 7}]).report.error
    assert error is not None and error.type == "plan"
    assert "link 'r' has no column(s) nokey" in error.message and "quality.row_rules[0]" in error.message


def test_reference_files_are_read_like_sources(spark: Any, tmp_path: Path) -> None:
    """A CSV value quoted across lines is one value; a pretty-printed JSON document is read whole; a
    broken JSON record fails the run naming the link (it was a row of NULLs)."""
    fields = [{"name": "id", "type": "integer"}, {"name": "n", "type": "string"}]
    lookup = {"lookup": {"field": "n", "reference": "r", "on": "id", "key": "k", "value": "n"}}
    csv_links = _links(tmp_path, "ref.csv", 'k,n\n1,"line one\nline two"\n2,two\n')
    good = run(
        spark, contract(fields, links=csv_links, transformations=[lookup]), [{"id": 1}, {"id": 2}]
    ).good
    assert rows_of(good, "id", "n") == [(1, "line one\nline two"), (2, "two")]
    pretty = _links(tmp_path, "pretty.json", json.dumps([{"k": 1, "n": "one"}], indent=2))
    good = run(spark, contract(fields, links=pretty, transformations=[lookup]), [{"id": 1}]).good
    assert rows_of(good, "id", "n") == [(1, "one")]
    broken = _links(tmp_path, "broken.jsonl", '{"k": 1, "n": "one"}\n{"k": 2, "n": "two"\n')
    error = run(spark, contract(fields, links=broken, transformations=[lookup]), [{"id": 1}]).report.error
    assert error is not None and error.type == "source" and "link 'r'" in error.message


def test_link_names_that_differ_only_in_case_are_one_name(tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    twice = [{"name": "r", "path": str(tmp_path / "a.csv")}, {"name": "R", "path": str(tmp_path / "b.csv")}]
    with pytest.raises(ContractError, match="duplicate link name 'R'"):
        DataProcessor(contract([{"name": "id", "type": "integer"}], links=twice))
    with pytest.raises(ContractError, match="may not be named 'source'"):
        DataProcessor(
            contract([{"name": "id", "type": "integer"}], links=[{"name": "Source", "path": "x.csv"}])
        )


def test_lakelogic_columns_take_no_part_in_deduplicate_or_unpivot(spark: Any, tmp_path: Path) -> None:
    """With lineage reading source files, equal rows of two files were two keys to `deduplicate: {}`,
    and `unpivot` made rows of the source file column."""
    from lakelogic.api import DataProcessor

    landing = tmp_path / "two"
    landing.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (landing / name).write_text('{"id": 1, "v": "x"}\n')
    fields = [{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}]
    source = {"type": "landing", "path": str(landing), "format": "json"}
    deduped = DataProcessor(
        contract(fields, source=source, lineage={"enabled": True}, transformations=[{"deduplicate": {}}]),
        spark=spark,
    ).run()
    assert deduped.report.counts.good == 1 and deduped.report.counts.deduplicated == 1
    assert rows_of(deduped.good, "id", "v") == [(1, "x")]
    unpivot = {"unpivot": {"id_vars": ["id"], "key_field": "key", "value_field": "value"}}
    kv = [
        {"name": "id", "type": "integer"},
        {"name": "key", "type": "string"},
        {"name": "value", "type": "string"},
    ]
    melted = DataProcessor(
        contract(kv, source=source, lineage={"enabled": True}, transformations=[unpivot]), spark=spark
    ).run()
    assert rows_of(melted.good, "id", "key", "value") == [(1, "v", "x"), (1, "v", "x")]
    assert {r["_lakelogic_source"].rsplit("/", 1)[-1] for r in melted.good.collect()} == {
        "a.jsonl",
        "b.jsonl",
    }
