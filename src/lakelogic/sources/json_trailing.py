"""JSON records with text after their value, found in local files before Spark reads them (SEMANTICS §3.3).

Spark's JSON parser stops after the first value of a record: ``{"id": 1}{"id": 2}``, ``{"id": 1} junk`` and
a ``multiLine`` file holding two documents all read as the first value alone, as a good row, and the rest
is gone without a trace. Such a record is malformed: the reader marks it from the record texts found here
(:mod:`.json_duplicate_keys` parses the files record by record when there are any).

The check costs one scan at C speed: in a line-delimited file only a line where a closing ``}`` or ``]``
is followed by something other than a blank, a comma or another closing bracket can hold a second value
(a string containing such text is the only other way), and only those lines are parsed, by Python's JSON
decoder. A line whose first value does not parse is left to Spark, which already marks it malformed.
Compressed files are checked when Python reads their compression (gzip, bz2); sources that let Spark
accept comments are not checked (a comment after the value is allowed there).
"""

from __future__ import annotations

import codecs
import json
import mmap
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from lakelogic.sources.csv_headers import open_text

_CANDIDATE_BYTES = re.compile(rb"[}\]][ \t]*[^ \t\r\n,\]}]")
_CANDIDATE_TEXT = re.compile(r"[}\]][ \t]*[^ \t\r\n,\]}]")
_DECODER = json.JSONDecoder()
_PLAIN = {".json", ".jsonl", ".ndjson", ".txt", ""}
_BLANKS = " \t\r\n"
TRAILING_REASON = "text after the JSON value"


def trailing_records(files: Sequence[str], options: Mapping[str, str]) -> set[str]:
    """The records (as Spark's text reader gives them: a line without its line end, or a whole file under
    ``multiLine``) of the local ``files`` that hold text after their first JSON value. ``options``: the
    JSON reader's, any key case."""
    merged = {k.lower(): str(v) for k, v in options.items()}
    if merged.get("allowcomments", "false").lower() == "true":
        return set()
    encoding = merged.get("encoding") or merged.get("charset") or "utf-8"
    try:
        encoding = codecs.lookup(encoding).name
    except LookupError:
        return set()
    multiline = merged.get("multiline", "false").lower() == "true"
    found: set[str] = set()
    for path in files:
        if not Path(path).is_file():
            continue
        if multiline:
            found |= _trailing_document(path, encoding)
        elif encoding in ("utf-8", "ascii") and Path(path).suffix.lower() in _PLAIN:
            found |= set(_trailing_lines_mapped(path))
        else:
            found |= set(_trailing_lines_text(path, encoding))
    return found


def has_trailing_text(record: str) -> bool:
    """Whether ``record`` is one JSON value followed by more than blanks (False when its first value does
    not parse: Spark marks that record malformed itself)."""
    text = record.lstrip(_BLANKS)
    try:
        _, end = _DECODER.raw_decode(text)
    except ValueError:
        return False
    return bool(text[end:].strip(_BLANKS))


def _trailing_lines_mapped(path: str) -> Iterator[str]:
    with open(path, "rb") as handle:
        if Path(path).stat().st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            checked_to = -1
            for match in _CANDIDATE_BYTES.finditer(data):  # type: ignore[call-overload]
                if match.start() < checked_to:
                    continue  # a line already checked
                start = data.rfind(b"\n", 0, match.start()) + 1
                end = data.find(b"\n", match.start())
                end = len(data) if end < 0 else end
                checked_to = end
                line = _record_text(data[start:end].decode("utf-8", errors="replace"), first=start == 0)
                if has_trailing_text(line):
                    yield line


def _trailing_lines_text(path: str, encoding: str) -> Iterator[str]:
    handle = open_text(path, encoding)
    if handle is None:
        return
    with handle:
        for number, raw in enumerate(_lines(handle)):
            if _CANDIDATE_TEXT.search(raw):
                line = _record_text(raw, first=number == 0)
                if has_trailing_text(line):
                    yield line


def _lines(handle: Iterable[str]) -> Iterator[str]:
    """Lines without their line ends, split at ``\\n`` as Spark's text reader splits them."""
    for line in handle:
        yield line.rstrip("\n")


def _record_text(line: str, *, first: bool) -> str:
    """A line as the record Spark reads: no carriage return before the line end, no byte-order mark."""
    text = line.removesuffix("\r")
    return text.removeprefix("\ufeff") if first else text


def _trailing_document(path: str, encoding: str) -> set[str]:
    """The whole file, when it holds more than one JSON document (Spark reads only the first)."""
    handle = open_text(path, encoding)
    if handle is None:
        return set()
    with handle:
        text = handle.read()
    record = text.removeprefix("\ufeff")
    return {record} if has_trailing_text(record) else set()
