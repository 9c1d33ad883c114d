"""File sources (SEMANTICS §3): raw reads, malformed records, empty inputs, options, report source info."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from tests.engines.helpers import contract, rows_of

pytestmark = pytest.mark.spark

FIELDS = [{"name": "id", "type": "integer", "required": True}, {"name": "name", "type": "string"}]


def _doc(path: Path, fmt: str, **source: Any) -> dict[str, Any]:
    return contract(FIELDS, source={"type": "landing", "path": str(path), "format": fmt, **source})


def test_csv_reads_text_and_quarantines_malformed_rows(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,ann\n2,bob,EXTRA\nx3,cy\n")
    (data / "b.csv").write_text("id,name\n")  # header only: zero rows
    (data / "empty.csv").write_text("")
    result = DataProcessor(_doc(data, "csv"), spark=spark).run()
    report = result.report
    good, bad = result
    assert report.status == "succeeded", report.error
    assert rows_of(good, "id", "name") == [(1, "ann")]
    errors = sorted(tuple(r[0]) for r in rows_of(bad, "_lakelogic_errors"))
    assert errors == [
        ('Rule failed: id_type (cannot cast "x3" to integer)', "Rule failed: id_required (id IS NOT NULL)"),
        ("Rule failed: malformed_record (unparseable record: 2,bob,EXTRA)",),
    ]
    malformed = next(r for r in bad.collect() if "malformed" in r["_lakelogic_errors"][0])
    assert malformed["id"] is None and malformed["name"] is None  # data columns NULL
    assert report.counts.source == 3 and report.counts.reconciles()
    assert {r.name: r.failed for r in report.rules}["malformed_record"] == 1
    assert report.source.files_count == 3 and report.source.max_source_mtime is not None


def test_csv_files_with_other_column_orders_are_read_by_name(spark: Any, tmp_path: Path) -> None:
    """Each file's own header names its columns: Spark maps every file to the first file's header by
    position, which swapped `id` and `name` of a reordered export and let the rows pass as good. A column
    a file lacks is NULL there (§7.1), here a missing required id."""
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,ann\n")
    (data / "b.csv").write_text("name,id\nbob,2\n")
    (data / "c.csv").write_text("name\ncy\n")
    (data / "d.csv").write_text("id,name\n4,dee\n")
    result = DataProcessor(_doc(data, "csv"), spark=spark).run()
    good, bad = result
    assert rows_of(good, "id", "name") == [(1, "ann"), (2, "bob"), (4, "dee")]
    assert rows_of(bad, "name", "_lakelogic_errors") == [
        ("cy", ["Rule failed: id_required (id IS NOT NULL)"])
    ]
    assert result.report.counts.source == 4 and result.report.counts.reconciles()


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_columnar_files_with_more_columns_in_later_files_lose_none(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    """Spark reads a set of Parquet/ORC files with one file's schema: an `email` that only the later export
    has was dropped from every file (silently, by file name order). The files' schemas are merged, so it
    is NULL only where a file lacks it (§7.1), whichever file sorts first."""
    fields = [{"name": "id", "type": "integer"}, {"name": "email", "type": "string"}]
    for older, newer in (("a", "b"), ("b", "a")):
        data = tmp_path / f"{fmt}_{older}"
        for name, frame in (
            (older, spark.createDataFrame([(1,), (2,)], "id int")),
            (newer, spark.createDataFrame([(3, "c@x")], "id int, email string")),
        ):
            staging = tmp_path / f"staging_{fmt}_{older}_{name}"
            frame.coalesce(1).write.format(fmt).save(str(staging))
            data.mkdir(exist_ok=True)
            next(staging.glob(f"part-*.{fmt}")).rename(data / f"{name}.{fmt}")
        doc = contract(fields, source={"type": "landing", "path": str(data), "format": fmt})
        good, _ = DataProcessor(doc, spark=spark).run()
        assert rows_of(good, "id", "email") == [(1, None), (2, None), (3, "c@x")], older


def test_json_numbers_into_decimal_fields_keep_every_digit(spark: Any, tmp_path: Path) -> None:
    """Spark infers a JSON number with a fraction as a double: 12345678901234567.89 into a decimal(20,2)
    field was 12345678901234568.00, silently. Also under partition directories; a number with more
    integer digits than the field holds is quarantined, not changed."""
    data = tmp_path / "in" / "region=eu"
    data.mkdir(parents=True)
    (data / "a.json").write_text(
        '{"id": 1, "amount": 12345678901234567.89}\n{"id": 2, "amount": 0.1}\n'
        '{"id": 3, "amount": 1234567890123456789.5}\n'
    )
    fields = [{"name": "id", "type": "integer"}, {"name": "amount", "type": "decimal(20,2)"}]
    doc = contract(fields, source={"type": "landing", "path": str(tmp_path / "in"), "format": "json"})
    result = DataProcessor(doc, spark=spark).run()
    good, bad = result
    assert [(i, str(amount)) for i, amount in rows_of(good, "id", "amount")] == [
        (1, "12345678901234567.89"),
        (2, "0.10"),
    ]
    assert [r["region"] for r in good.collect()] == ["eu", "eu"]
    [too_large] = bad.collect()  # more integer digits than decimal(20,2) holds: malformed, with its text
    assert "1234567890123456789.5" in too_large["_lakelogic_errors"][0]
    assert result.report.counts.reconciles()


def test_json_objects_into_json_fields_keep_their_own_shape(spark: Any, tmp_path: Path) -> None:
    """Spark infers one type per key for all records: an array in one record and a number in another
    became strings inside the object, and a `null` key was dropped. A `json` field takes each value's own
    JSON text."""
    (tmp_path / "in.json").write_text(
        '{"id": 1, "j": {"c": []}}\n{"id": 2, "j": {"c": 1}}\n{"id": 3, "j": {"a": null, "b": 1}}\n'
    )
    fields = [{"name": "id", "type": "integer"}, {"name": "j", "type": "json"}]
    doc = contract(fields, source={"type": "landing", "path": str(tmp_path / "in.json"), "format": "json"})
    good, bad = DataProcessor(doc, spark=spark).run()
    assert rows_of(good, "id", "j") == [(1, '{"c":[]}'), (2, '{"c":1}'), (3, '{"a":null,"b":1}')]
    assert bad.count() == 0


def test_csv_array_fields_are_cast_from_json_array_text(spark: Any, tmp_path: Path) -> None:
    """§5.3 array<T>: JSON-array text, elements cast to T. A CSV source with an array field failed every
    run (the malformed-record shaping cast the raw text column to the array type)."""
    (tmp_path / "in.csv").write_text('id,a\n1,"[1,2]"\n2,"[3,x]"\n3\n')
    fields = [{"name": "id", "type": "integer"}, {"name": "a", "type": "array<integer>"}]
    doc = contract(fields, source={"type": "landing", "path": str(tmp_path / "in.csv"), "format": "csv"})
    result = DataProcessor(doc, spark=spark).run()
    good, bad = result
    assert rows_of(good, "id", "a") == [(1, [1, 2])]
    assert sorted(str(r["_lakelogic_errors"]) for r in bad.collect()) == [
        "['Rule failed: a_type (cannot cast \"[3,x]\" to array<integer>)']",
        "['Rule failed: malformed_record (unparseable record: 3)']",
    ]
    assert result.report.counts.reconciles()


def test_differently_headed_csv_files_keep_lineage_comments_and_compression(
    spark: Any, tmp_path: Path
) -> None:
    """The per-header groups are combined by a union, which has no `_metadata` column: each group carries
    its source file itself. Headers are found as Spark finds them: after comment lines, inside `.gz`."""
    import gzip

    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("# export of monday\nid,name\n1,ann\n")
    (data / "b.csv").write_text("# export of tuesday\nname,id\nbob,2\n")
    with gzip.open(data / "c.csv.gz", "wt") as handle:
        handle.write("name,id\ncy,3\n")
    doc = _doc(data, "csv", options={"comment_prefix": "#"})
    doc["lineage"] = {"enabled": True}
    result = DataProcessor(doc, spark=spark).run()
    good, _ = result
    assert result.report.status == "succeeded", result.report.error
    rows = sorted((r["id"], r["name"], Path(r["_lakelogic_source"]).name) for r in good.collect())
    assert rows == [(1, "ann", "a.csv"), (2, "bob", "b.csv"), (3, "cy", "c.csv.gz")]


def test_json_lines_broken_line_is_malformed(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": 1, "name": "a"}\n{"id": 2, "name": \n{"id": 3, "name": "c"}\n')
    result = DataProcessor(_doc(path, "jsonl"), spark=spark).run()
    good, bad = result
    assert rows_of(good, "id") == [(1,), (3,)]
    assert rows_of(bad, "_lakelogic_categories") == [(["schema"],)]
    assert result.report.counts.quarantined == 1


@pytest.mark.parametrize(
    ("behavior", "status", "error"), [("skip", "no_new_data", None), ("fail", "failed", "empty_source")]
)
def test_empty_source_behaviour(
    spark: Any, tmp_path: Path, behavior: str, status: str, error: str | None
) -> None:
    (tmp_path / "only_header.csv").write_text("id,name\n")
    result = DataProcessor(_doc(tmp_path, "csv", empty_behavior=behavior), spark=spark).run()
    assert result.report.status == status
    assert (result.report.error.type if result.report.error else None) == error
    assert result.report.counts.source == 0


def test_unknown_source_option_is_a_contract_error(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,name\n1,a\n")
    doc = _doc(tmp_path / "a.csv", "csv", options={"delimiter": ";", "frobnicate": True})
    try:
        result = DataProcessor(doc, spark=spark).run()
    except Exception as exc:  # noqa: BLE001 - the loader may already reject the option
        assert "frobnicate" in str(exc)
        return
    assert result.report.status == "failed" and result.report.error is not None
    assert "frobnicate" in result.report.error.message


def test_csv_options_delimiter_and_null_values(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id;name\n1;NA\n2;b\n")
    doc = _doc(tmp_path / "a.csv", "csv", options={"delimiter": ";", "null_values": ["", "NA"]})
    good, _ = DataProcessor(doc, spark=spark).run()
    assert good is not None
    assert rows_of(good, "id", "name") == [(1, None), (2, "b")]


def test_source_path_argument_and_outputs(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "src.parquet"
    spark.createDataFrame([(1, "a"), (None, "b")], "id int, name string").write.parquet(str(src))
    out_good, out_bad = tmp_path / "good", tmp_path / "bad"
    result = DataProcessor(contract(FIELDS), spark=spark).run(
        str(src), output_good=out_good, output_bad=out_bad
    )
    assert result.report.status == "succeeded"
    assert spark.read.parquet(str(out_good)).count() == 1
    assert spark.read.parquet(str(out_bad)).select("_lakelogic_errors").first()[0] == [
        "Rule failed: id_required (id IS NOT NULL)"
    ]
    assert not list(tmp_path.glob("*staging*"))


def test_failed_run_writes_no_outputs(spark: Any, tmp_path: Path) -> None:
    doc = contract(FIELDS, quarantine={"fail_on_quarantine": True})
    frame = spark.createDataFrame([(None, "b")], "id int, name string")
    result = DataProcessor(doc, spark=spark).run(frame, output_good=tmp_path / "g", output_bad=tmp_path / "b")
    assert result.report.status == "failed"
    assert not (tmp_path / "g").exists() and not (tmp_path / "b").exists()
    assert not list(tmp_path.iterdir())


def test_partition_folders_give_columns_and_a_mixed_layout_loses_no_file(spark: Any, tmp_path: Path) -> None:
    """`key=value` folders become columns when every file sits in the same layout. A file beside the
    partition folders is read too (Spark's partition discovery would skip it without a word)."""
    root = tmp_path / "landing"
    for day, ids in (("1", [1, 2]), ("2", [3])):
        (root / f"day={day}").mkdir(parents=True)
        (root / f"day={day}" / "part.jsonl").write_text("".join(f'{{"id": {i}}}\n' for i in ids))
    (root / "_temporary" / "0").mkdir(parents=True)  # a writer's leftovers: never data
    (root / "_temporary" / "0" / "part.jsonl").write_text('{"id": 99}\n')
    fields = [{"name": "id", "type": "integer"}]
    uniform = DataProcessor(
        contract(fields, source={"type": "landing", "path": str(root), "format": "json"}), spark=spark
    )
    assert sorted(rows_of(uniform.run().good, "id", "day")) == [
        (1, 1),
        (2, 1),
        (3, 2),
    ]
    (root / "loose.jsonl").write_text('{"id": 4}\n')
    mixed = DataProcessor(
        contract(fields, source={"type": "landing", "path": str(root), "format": "json"}), spark=spark
    )
    result = mixed.run()
    assert sorted(r[0] for r in rows_of(result.good, "id")) == [1, 2, 3, 4]
    assert result.report.counts.source == 4


@pytest.mark.parametrize("multiline", [False, True])
def test_a_json_source_with_only_malformed_records_quarantines_them(
    spark: Any, tmp_path: Path, multiline: bool
) -> None:
    """§3.3: every unparseable record is a quarantined row counted in `source`, also when no record at
    all parses (Spark then infers nothing but its corrupt-record column and refuses to query it)."""
    path = tmp_path / ("f.json" if multiline else "f.jsonl")
    path.write_text('[{"id": 1}, {"id": 2,' if multiline else 'not json\n\n{"id":\n')
    fields = [{"name": "id", "type": "integer", "required": True}, {"name": "name", "type": "string"}]
    source = {"type": "landing", "path": str(path), "format": "json" if multiline else "jsonl"}
    if multiline:
        source["options"] = {"multiline": True}
    result = DataProcessor(contract(fields, source=source), spark=spark).run()
    assert result.report.error is None, result.report.error
    counts = result.report.counts
    assert (counts.source, counts.good, counts.quarantined) == ((1, 0, 1) if multiline else (2, 0, 2))
    errors = [r["_lakelogic_errors"][0] for r in result.bad.collect()]
    assert all(e.startswith("Rule failed: malformed_record") for e in errors)


def test_a_single_quoted_json_record_is_malformed(spark: Any, tmp_path: Path) -> None:
    """§3.3: JSON strings are double-quoted; Spark's reader accepts single quotes unless told not to."""
    path = tmp_path / "f.jsonl"
    path.write_text("{\"id\": 1, \"name\": \"a\"}\n{'id': 2, 'name': 'b'}\n")
    fields = [{"name": "id", "type": "integer"}, {"name": "name", "type": "string"}]
    result = DataProcessor(
        contract(fields, source={"type": "landing", "path": str(path), "format": "jsonl"}), spark=spark
    ).run()
    assert (result.report.counts.good, result.report.counts.quarantined) == (1, 1), result.report.error


def test_a_csv_file_with_a_broken_quote_is_quarantined_line_by_line(spark: Any, tmp_path: Path) -> None:
    """Spark's lenient parser read an unclosed quote on through the rest of the file into one value: the
    record kept its field count, so it passed as one good row and the rows it swallowed were gone while
    the counts reconciled. Such a file's records cannot be delimited; each of its lines is quarantined
    with the reason, and the other files are read as usual."""
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text('id,name\n1,"ann\n2,bob\n\n3,cy\n')
    (data / "b.csv").write_text('id,name\n4,"dee"\n')
    doc = _doc(data, "csv")
    doc["lineage"] = {"enabled": True}
    result = DataProcessor(doc, spark=spark).run()
    good, bad = result
    report = result.report
    assert report.status == "succeeded", report.error
    assert rows_of(good, "id", "name") == [(4, "dee")]
    reason = (
        "a.csv cannot be split into records: a quoted value is never closed before the end of the file "
        "(the record starting at line 2)"
    )
    quarantined = sorted(
        (r["_lakelogic_errors"][0], r["id"], Path(r["_lakelogic_source"]).name) for r in bad.collect()
    )
    assert quarantined == [
        (f'Rule failed: malformed_record ({reason}: 1,"ann)', None, "a.csv"),
        (f"Rule failed: malformed_record ({reason}: 2,bob)", None, "a.csv"),
        (f"Rule failed: malformed_record ({reason}: 3,cy)", None, "a.csv"),
    ]
    assert report.counts.source == 4 and report.counts.reconciles()
    assert any("a.csv" in w and "line by line" in w for w in report.warnings)


def test_a_csv_quote_swallowing_up_to_a_later_quote_is_caught_too(spark: Any, tmp_path: Path) -> None:
    """An unclosed quote ends at the next quote followed by a delimiter or line end: the row between was
    lost inside one good row. With every file broken, the model's columns are still there (NULL)."""
    path = tmp_path / "a.csv"
    path.write_text('id,name\n1,"ann\n2,bob\n3,"cy"\n')
    result = DataProcessor(_doc(path, "csv"), spark=spark).run()
    good, bad = result
    assert result.report.status == "partial", result.report.error  # every row quarantined
    assert good.count() == 0 and set(good.columns) >= {"id", "name"}
    texts = sorted(r["_lakelogic_errors"][0].rsplit(": ", 1)[1] for r in bad.collect())
    assert texts == ['1,"ann)', "2,bob)", '3,"cy")']
    assert result.report.counts.source == 3


def _truncated_gzip(path: Path, text: str) -> None:
    import gzip

    packed = gzip.compress(text.encode())
    path.write_bytes(packed[: len(packed) // 2])


@pytest.mark.parametrize(
    ("name", "fmt", "expected"),
    [
        # Spark's gzip reader ends a truncated stream quietly: the rows after the cut were lost
        ("cut.csv.gz", "csv", "Compressed file ended before the end-of-stream marker"),
        ("cut.json.gz", "json", "Compressed file ended before the end-of-stream marker"),
        ("foreign.csv.gz", "csv", "Not a gzipped file"),
        ("wide.csv", "csv", "a record has more than 20480 fields"),  # raised inside the scan job
    ],
)
def test_unreadable_source_files_fail_the_run_naming_the_file(
    spark: Any, tmp_path: Path, name: str, fmt: str, expected: str
) -> None:
    data = tmp_path / "in"
    data.mkdir()
    path = data / name
    rows = [f'{{"id": {i}, "name": "n{i}"}}' if fmt == "json" else f"{i},n{i}" for i in range(20000)]
    if name.startswith("cut"):
        _truncated_gzip(path, ("" if fmt == "json" else "id,name\n") + "\n".join(rows) + "\n")
    elif name.startswith("foreign"):
        path.write_bytes(b"id,name\n1,a\n")
        (data / "other.csv").write_text("name,id\nb,2\n")  # a second header: the files are grouped first
    else:
        path.write_text("id,name\n1,a\n" + ",".join(["x"] * 20481) + "\n")
    result = DataProcessor(_doc(data, fmt), spark=spark).run()
    error = result.report.error
    assert result.report.status == "failed" and error is not None
    assert error.type == "source" and expected in error.message and str(path) in error.message
    assert "Py4J" not in error.message and "\tat " not in error.message


def test_a_csv_header_naming_a_model_column_twice_is_a_source_error(spark: Any, tmp_path: Path) -> None:
    """Spark renamed both copies (`name1`, `Name3`), so the model's `name` read NULL for every row."""
    path = tmp_path / "a.csv"
    path.write_text("id,name,note,Name,note\n1,a,x,b,y\n")
    error = DataProcessor(_doc(path, "csv"), spark=spark).run().report.error
    assert error is not None and error.type == "source"
    assert (
        "names the column 'name' more than once (columns 2, 4)" in error.message
        and str(path) in error.message
    )


def test_csv_headers_repeating_other_columns_or_numbering_them_still_load(spark: Any, tmp_path: Path) -> None:
    """A repeated column the model does not read is not ambiguous; `name1`, `name2` are two names, and so
    are `name` and `name ` (Spark compares header names as written)."""
    path = tmp_path / "a.csv"
    path.write_text("id,name,note,note,name1,name2,name \n1,a,x,y,p,q,r\n")  # Spark keeps `name ` apart
    result = DataProcessor(_doc(path, "csv"), spark=spark).run()
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id", "name") == [(1, "a")]
