"""Local CSV files whose quoting is broken, found before Spark reads them.

Spark reads CSV sources with ``multiLine`` (a quoted value may hold line breaks, RFC 4180), and its
parser is lenient about quotes: a quote left open runs on across line breaks until the next quote that
is followed by a delimiter or line end, or to the end of the file. The records it swallows become part
of one value; when the field count still matches, that record is a good row and the others are gone
while the counts reconcile. The parse gives no trace of it, so each local file is checked here: a
quoted value that never closes, or a quote inside a quoted value that is neither doubled nor escaped nor
followed (after blanks) by a delimiter or line end, marks the file. Python's strict CSV reader (C speed)
looks first; it is stricter than Spark in places, so what it finds is confirmed by
:func:`spark_quote_problem`, which follows Spark's reading of quotes. A marked file's records cannot be
delimited, so the reader quarantines its lines instead of reading it (:mod:`.files`).

Both quote conventions pass: doubled quotes (RFC 4180) and the escape character. A file without the
quote character at all is skipped after a byte search. Compressed files are checked when Python reads
their compression (gzip, bz2); other compressions, multi-character delimiters and disabled quoting are
not checked.
"""

from __future__ import annotations

import codecs
import csv
import mmap
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lakelogic.sources.csv_headers import open_text
from lakelogic.sources.unreadable import compressed_error

# A long quoted value is data, not a problem: lift the module's 128 KiB field limit (process-wide; it
# only ever widens what the csv module accepts).
csv.field_size_limit(sys.maxsize)

_CHECKED_COMPRESSIONS = {".gz", ".bz2"}
_FIELD, _UNQUOTED, _QUOTED, _CLOSED = "field", "unquoted", "quoted", "closed"
_NEVER_CLOSED = "a quoted value is never closed before the end of the file"
_NOT_CLOSING = (
    "a {quote} inside a quoted value is not doubled, not escaped and not followed by the delimiter "
    "or a line end"
)
_UNCHECKED_COMPRESSIONS = {".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br"}


@dataclass(frozen=True)
class QuoteProblem:
    """Where a file's quoting breaks: the line its record starts on and what is wrong there."""

    line: int
    problem: str

    def reason(self, path: str) -> str:
        """Why every line of the file at ``path`` is quarantined."""
        name = Path(path).name
        return (
            f"{name} cannot be split into records: {self.problem} (the record starting at line {self.line})"
        )


def broken_quoting(
    files: Sequence[str], options: Mapping[str, str], encoding: str
) -> dict[str, QuoteProblem]:
    """The files of ``files`` whose quoting is broken under the Spark reader ``options`` (``sep``,
    ``quote``, ``escape``, ``comment``), each with its first problem. ``encoding`` is the source's, as
    Python names it."""
    sep, quote = options.get("sep", ","), options.get("quote", '"')
    escape = options.get("escape", "\\")
    if len(sep) != 1 or len(quote) != 1 or quote == "\x00":
        return {}
    found = {}
    for path in files:
        problem = _first_problem(
            path,
            sep=sep,
            quote=quote,
            escape=escape if len(escape) == 1 and escape not in ("\x00", quote) else None,
            encoding=encoding,
            comment=options.get("comment") or None,
        )
        if problem is not None:
            found[path] = problem
    return found


def _first_problem(
    path: str, *, sep: str, quote: str, escape: str | None, encoding: str, comment: str | None
) -> QuoteProblem | None:
    suffix = Path(path).suffix.lower()
    if suffix in _UNCHECKED_COMPRESSIONS or not Path(path).is_file():
        return None
    if (
        suffix not in _CHECKED_COMPRESSIONS
        and _searchable(encoding)
        and not _contains(path, quote.encode(encoding, "replace"))
    ):
        return None
    try:
        if not _strict_reader_objects(path, encoding, sep=sep, quote=quote, escape=escape, comment=comment):
            return None
        # The strict reader is stricter than Spark in places (blanks after a closing quote, the escape
        # character outside quotes): only what Spark's own reading of quotes confirms marks the file.
        handle = open_text(path, encoding)
        assert handle is not None  # the strict reader opened it just now
        with handle:
            lines = _without_comments(handle, comment) if comment else handle
            return spark_quote_problem(lines, sep=sep, quote=quote, escape=escape)
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or foreign compressed stream
        raise compressed_error(path, exc) from exc


def _strict_reader_objects(
    path: str, encoding: str, *, sep: str, quote: str, escape: str | None, comment: str | None
) -> bool:
    """Whether Python's strict CSV reader (C speed) finds anything wrong with the file's quoting."""
    handle = open_text(path, encoding)
    if handle is None:
        return False
    with handle:
        lines = _without_comments(handle, comment) if comment else handle
        reader = csv.reader(
            lines, delimiter=sep, quotechar=quote, escapechar=escape, doublequote=True, strict=True
        )
        try:
            for _ in reader:
                pass
        except csv.Error:
            return True
    return False


def spark_quote_problem(
    lines: Iterable[str], *, sep: str, quote: str, escape: str | None
) -> QuoteProblem | None:
    """The first quote Spark's CSV parser would read past a record's end, following its rules: a quote
    opens a value only at the start of a field; inside quotes the escape character escapes the next
    character and a doubled quote is a quote; a closing quote may be followed by blanks, then the
    separator or the line end. Anything else after a closing quote, or a quote still open at the end of
    the file, is the problem. Python-level, so it only confirms what the strict reader found."""
    special = re.compile("[" + re.escape(quote + (escape or "")) + "]")
    state, start = _FIELD, 1
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        if state != _QUOTED:
            state, start = _FIELD, number
        pos = 0
        while pos < len(body):
            if state == _FIELD:
                if body[pos] == quote:
                    state, pos = _QUOTED, pos + 1
                else:
                    state = _UNQUOTED
            elif state == _UNQUOTED:
                found = body.find(sep, pos)
                pos, state = (len(body), _UNQUOTED) if found < 0 else (found + 1, _FIELD)
            elif state == _QUOTED:
                hit = special.search(body, pos)
                if hit is None:
                    pos = len(body)
                elif body[hit.start()] != quote or body[hit.start() + 1 : hit.start() + 2] == quote:
                    pos = hit.start() + 2  # an escaped character, or a doubled quote: data
                else:
                    state, pos = _CLOSED, hit.start() + 1
            else:  # _CLOSED: blanks, then the separator or the line end
                while pos < len(body) and body[pos] in " \t":
                    pos += 1
                if pos < len(body):
                    if body[pos] != sep:
                        return QuoteProblem(start, _NOT_CLOSING.format(quote=quote))
                    state, pos = _FIELD, pos + 1
    if state == _QUOTED:
        return QuoteProblem(start, _NEVER_CLOSED)
    return None


def _searchable(encoding: str) -> bool:
    """Whether a character's encoded bytes can be searched for in files of ``encoding`` without
    decoding (no byte-order mark, no alignment)."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return not name.startswith(("utf-16", "utf-32"))


def _contains(path: str, needle: bytes) -> bool:
    """Whether the file holds ``needle`` (a memory-mapped search: no Python-level loop)."""
    with open(path, "rb") as raw:
        if Path(path).stat().st_size == 0:
            return False
        with mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return mapped.find(needle) != -1


def _without_comments(lines: IO[str], comment: str) -> Iterator[str]:
    """The lines with comment lines emptied (their line end kept, so line numbers stay the file's). A line
    starting with the prefix inside a quoted value is emptied too: that only shortens the value."""
    return (line[len(line.rstrip("\r\n")) :] if line.startswith(comment) else line for line in lines)
