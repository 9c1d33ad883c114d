"""CSV files of one source grouped by their header line.

Spark's CSV reader takes the column names from one file's header and maps every other file's fields to
them by position. A directory where one export has `amount,id` and another `id,amount` then loads each
file's values under the other's names, and the rows pass as good. Each group of files that share a
header is read on its own, and the groups are combined by column name. A column that a file lacks is
NULL there (SEMANTICS §7.1).

Only listed (local) files are grouped; remote directories and globs go to Spark unlisted.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from lakelogic.sources.unreadable import compressed_error

# Spark reads these compressions by extension too; Python reads the first two, the rest keep one group
_PYTHON_READABLE = {".gz": gzip.open, ".bz2": bz2.open}
_OTHER_COMPRESSIONS = {".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br"}
UNKNOWN = "\x00unknown header"  # a header this module cannot read: grouped with the first files


def header_line(path: str, encoding: str, comment: str | None) -> str | None:
    """The header of the local CSV file ``path``: its first line that is neither blank nor a comment, as
    Spark takes it (BOM and line end removed). None for a file without one; :data:`UNKNOWN` when the file
    cannot be read here (an unknown encoding or compression)."""
    handle = open_text(path, encoding)
    if handle is None:
        return UNKNOWN
    try:
        with handle:
            return _first_header(handle, comment)
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or foreign compressed stream
        raise compressed_error(path, exc) from exc


def open_text(path: str, encoding: str) -> IO[str] | None:
    """The local file ``path`` as text with its line ends kept (undecodable bytes replaced), or None when
    Python cannot read it (an unknown encoding or a compression it has no reader for)."""
    suffix = Path(path).suffix.lower()
    if suffix in _OTHER_COMPRESSIONS:
        return None
    try:
        codecs.lookup(encoding)
    except LookupError:
        return None
    opener = _PYTHON_READABLE.get(suffix)
    if opener is not None:
        return opener(path, "rt", encoding=encoding, errors="replace", newline="")  # type: ignore[no-any-return,operator]
    return open(path, encoding=encoding, errors="replace", newline="")


def _first_header(lines: Iterable[str], comment: str | None) -> str | None:
    for number, raw in enumerate(lines):
        line = raw.removeprefix("\ufeff") if number == 0 else raw
        line = line.rstrip("\r\n")
        if not line.strip() or (comment and line.startswith(comment)):
            continue
        return line
    return None


def files_by_header(files: list[str], encoding: str, comment: str | None) -> list[list[str]]:
    """``files`` grouped by identical header lines, in order of first appearance. Files without a header
    line or with one that cannot be read here join the first group; one group when every file has the
    same header."""
    groups: dict[str | None, list[str]] = {}
    for path in files:
        groups.setdefault(header_line(path, encoding, comment), []).append(path)
    unplaced = groups.pop(None, []) + groups.pop(UNKNOWN, [])
    ordered = list(groups.values()) or [[]]
    ordered[0].extend(unplaced)
    return ordered
