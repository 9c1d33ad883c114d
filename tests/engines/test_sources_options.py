"""File source options and formats beyond the basics (SEMANTICS §3.1, §3.2, §4): found by a spec audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from tests.engines.helpers import contract, rows_of

pytestmark = pytest.mark.spark

FIELDS = [{"name": "id", "type": "integer", "required": True}, {"name": "name", "type": "string"}]


def _run(spark: Any, **source: Any) -> Any:
    return DataProcessor(contract(FIELDS, source={"type": "landing", **source}), spark=spark).run()


def test_a_quoted_line_break_stays_inside_its_csv_field(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('id,name\n1,"first\nsecond"\n2,plain\n3,"x",EXTRA\n')
    result = _run(spark, path=str(path))
    good, bad = result
    assert rows_of(good, "id", "name") == [(1, "first\nsecond"), (2, "plain")]
    errors = rows_of(bad, "_lakelogic_errors")
    assert len(errors) == 1 and errors[0][0][0].startswith("Rule failed: malformed_record")
    assert result.report.counts.source == 3


def test_encodings_by_python_or_java_name_and_jsonl_takes_encoding(spark: Any, tmp_path: Path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,name\n1,Jürgen\n".encode("latin-1"))
    result = _run(spark, path=str(latin), options={"encoding": "latin-1"})
    assert rows_of(result.good, "name") == [("Jürgen",)]
    lines = tmp_path / "in.jsonl"
    lines.write_bytes('{"id": 1, "name": "Zoë"}\n'.encode("latin-1"))
    result = _run(spark, path=str(lines), options={"encoding": "latin_1"})
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "name") == [("Zoë",)]
    wide = _run(spark, path=str(lines), options={"encoding": "utf-16"})
    assert wide.report.error is not None and "UTF-8" in wide.report.error.message
    unknown = _run(spark, path=str(latin), options={"encoding": "no-such-codec"})
    assert unknown.report.error is not None and "no-such-codec" in unknown.report.error.message


def test_unsupported_csv_and_format_settings_fail_with_a_report(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("id,name\n1,a\n")
    comment = _run(spark, path=str(path), options={"comment_prefix": "//"})
    assert comment.report.status == "failed" and comment.report.error is not None
    assert "comment_prefix" in comment.report.error.message
    xml = _run(spark, path=str(path), format="xml", options={"row_tag": "row"})
    assert xml.report.error is not None and "'xml' is not supported" in xml.report.error.message


def test_a_directory_source_takes_its_files_extension(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "landing"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,a\n")
    (data / "b.csv").write_text("id,name\n2,b\n")
    assert rows_of(_run(spark, path=str(data)).good, "id") == [(1,), (2,)]
    (data / "c.json").write_text('{"id": 3}\n')
    mixed = _run(spark, path=str(data))
    assert mixed.report.error is not None and ".csv, .json" in mixed.report.error.message


def test_partition_filters_read_only_the_matching_partitions(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "orders"
    frame = spark.createDataFrame(
        [(1, "a", "US"), (2, "b", "DE"), (3, "c", "US"), (4, "d", "FR")],
        "id int, name string, country string",
    )
    frame.write.partitionBy("country").parquet(str(root))
    result = _run(spark, path=str(root), format="parquet", partition_filters={"country": "US"})
    assert rows_of(result.good, "id", "country") == [(1, "US"), (3, "US")]
    assert result.report.counts.source == 2  # the filter is part of the read, not a row rule
    both = _run(spark, path=str(root), format="parquet", partition_filters={"country": ["DE", "FR"]})
    assert rows_of(both.good, "id") == [(2,), (4,)]
    missing = _run(spark, path=str(root), format="parquet", partition_filters={"region": "EU"})
    assert (
        missing.report.error is not None and "source.partition_filters.region" in missing.report.error.message
    )


def test_an_explicit_link_type_wins_over_the_path_extension(spark: Any, tmp_path: Path) -> None:
    ref = tmp_path / "regions.csv"  # a parquet directory with a misleading name
    spark.createDataFrame([(1, "north")], "id int, region string").write.parquet(str(ref))
    doc = contract(
        FIELDS,
        links=[{"name": "regions", "path": str(ref), "type": "parquet"}],
        transformations=[
            {
                "lookup": {
                    "field": "region",
                    "reference": "regions",
                    "on": "id",
                    "key": "id",
                    "value": "region",
                }
            }
        ],
    )
    good, _ = DataProcessor(doc, spark=spark).run(spark.createDataFrame([(1, "a")], "id int, name string"))
    assert rows_of(good, "id", "region") == [(1, "north")]


def test_bytes_invalid_in_the_encoding_make_a_csv_record_malformed(spark: Any, tmp_path: Path) -> None:
    """§3.3 "bad bytes": Spark decodes them to U+FFFD; the record is quarantined, not kept as good."""
    path = tmp_path / "a.csv"
    path.write_bytes("id,name\n1,ok\n2,J\xfcrgen\n".encode("latin-1"))  # 0xFC is no UTF-8
    result = _run(spark, path=str(path))
    good, bad = result
    assert rows_of(good, "id", "name") == [(1, "ok")]
    (errors,) = rows_of(bad, "_lakelogic_errors")
    assert errors[0][0].startswith("Rule failed: malformed_record (unparseable record: 2,J")
    assert rows_of(bad, "id") == [(None,)]  # data columns of a malformed record are NULL
    assert (result.report.counts.source, result.report.counts.quarantined) == (2, 1)


def test_header_less_csv_columns_take_the_model_field_names_in_order(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("1,ann,extra\n2,bob,more\n")
    result = _run(spark, path=str(path), options={"has_header": False})
    good, _ = result
    assert rows_of(good, "id", "name", "_c2") == [(1, "ann", "extra"), (2, "bob", "more")]
    assert good.columns[:2] == ["id", "name"]
