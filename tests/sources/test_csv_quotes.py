"""The strict quote check of local CSV files (sources/csv_quotes.py), without Spark."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest

from lakelogic.sources.csv_quotes import broken_quoting

SPARK_DEFAULTS = {"sep": ",", "quote": '"', "escape": "\\"}


def _check(tmp_path: Path, text: str, name: str = "f.csv", **options: str) -> dict[str, tuple[int, str]]:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    found = broken_quoting([str(path)], {**SPARK_DEFAULTS, **options}, "utf-8")
    return {Path(p).name: (problem.line, problem.problem) for p, problem in found.items()}


@pytest.mark.parametrize(
    ("text", "line", "wording"),
    [
        ('id,note\n1,"open\n2,x\n3,y\n', 2, "never closed"),  # runs to the end of the file
        ('id,note\n1,"open\n2,x\n3,y', 2, "never closed"),  # no final line end
        ('id,note\n1,ok\n2,"open\n3,"closed later"\n4,z\n', 3, "not doubled"),  # swallows up to a later quote
        ('id,a,b\n1,"open,x\n2,"b, c",ok\n', 2, "not doubled"),
        ('id,note\r\n1,"open\r\n2,x\r\n', 2, "never closed"),
    ],
)
def test_a_broken_quote_names_the_line_its_record_starts_on(
    tmp_path: Path, text: str, line: int, wording: str
) -> None:
    [(found_line, problem)] = _check(tmp_path, text).values()
    assert found_line == line and wording in problem


@pytest.mark.parametrize(
    "text",
    [
        'id,note\n1,"multi\nline"\n2,ok\n',  # RFC 4180 line break inside quotes
        'id,note\n1,"say ""hi"""\n',  # RFC 4180 doubled quotes
        'id,note\n1,"say \\"hi\\""\n',  # the escape character
        'id,note\n1,5" pipe\n2,a"b"c\n',  # a quote inside an unquoted value is literal
        "id,note\n1,plain\n",
        "",
        'id,note\n1,"' + "x" * 200_000 + '"\n',  # longer than the csv module's default field limit
    ],
)
def test_well_quoted_files_pass(tmp_path: Path, text: str) -> None:
    assert _check(tmp_path, text) == {}


def test_options_decide_what_a_quote_and_a_separator_are(tmp_path: Path) -> None:
    assert _check(tmp_path, "id;note\n1;'a\n2;b\n", quote="'", sep=";") == {"f.csv": (2, _never_closed())}
    assert _check(tmp_path, "id;note\n1;'a\n2;b\n", quote='"', sep=";", name="g.csv") == {}
    # quoting switched off: nothing to check
    assert _check(tmp_path, 'id,note\n1,"a\n', quote="", name="h.csv") == {}


def test_comment_lines_are_not_records_and_keep_line_numbers(tmp_path: Path) -> None:
    text = '# a "comment\nid,note\n1,ok\n2,"open\n'
    assert _check(tmp_path, text, comment="#") == {"f.csv": (4, _never_closed())}
    assert _check(tmp_path, '# a "comment\nid,note\n1,ok\n', comment="#", name="g.csv") == {}


def test_compressed_files_are_checked_inside(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "a.csv.gz", "wt") as handle:
        handle.write('id,note\n1,"open\n2,x\n')
    with bz2.open(tmp_path / "b.csv.bz2", "wt") as handle:
        handle.write('id,note\n1,"fine"\n')
    files = [str(tmp_path / "a.csv.gz"), str(tmp_path / "b.csv.bz2")]
    assert [Path(p).name for p in broken_quoting(files, SPARK_DEFAULTS, "utf-8")] == ["a.csv.gz"]


def test_other_encodings_are_decoded_before_checking(tmp_path: Path) -> None:
    path = tmp_path / "u16.csv"
    path.write_bytes('id,note\n1,"open\n2,x\n'.encode("utf-16"))
    assert list(broken_quoting([str(path)], SPARK_DEFAULTS, "utf-16")) == [str(path)]
    latin = tmp_path / "latin.csv"
    latin.write_bytes('id,note\n1,"café"\n'.encode("latin-1"))
    assert broken_quoting([str(latin)], SPARK_DEFAULTS, "latin-1") == {}


def _never_closed() -> str:
    return "a quoted value is never closed before the end of the file"


@pytest.mark.parametrize(
    "text",
    [
        'id,name,city\n1,"Smith, J" ,Paris\n2,"Doe",Rome\n',  # blanks after a closing quote: Spark reads it
        'id,path\n1,"a b"\n2,C:\\temp\\\n',  # the escape character outside quotes is data to Spark
        'id,path\n1,"a b"\n2,C:\\temp\\\n3,"x"\n',
    ],
)
def test_what_spark_reads_rightly_is_not_flagged(tmp_path: Path, text: str) -> None:
    """Python's strict reader objects to these; Spark's own reading of quotes does not lose a row."""
    assert _check(tmp_path, text) == {}
