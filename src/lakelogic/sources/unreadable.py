"""Source files whose content cannot be read: a ``source`` error naming the file, not a JVM trace.

Spark reports a corrupt file (a truncated footer, a stream that is not gzip, a CSV record wider than
the parser's column limit) as a raw ``Py4JJavaError``, either while a reader infers the schema or while
a job scans the rows. Only failures about the files' content are converted: a network or permission
error stays as it is, so the driver still retries it.

Spark's gzip and bzip2 readers end a truncated stream without an error, and the rows after the cut
are lost while the counts reconcile; :func:`check_compressed` decompresses local files to their end
first.
"""

from __future__ import annotations

import bz2
import gzip
import re
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lakelogic.errors import SourceError

# what the JVM says about a text file (CSV, JSON) it cannot read: only a source is read as text, so a
# run that fails this way failed on its source wherever the failure surfaced
TEXT_FILE_PROBLEMS = (
    "not a gzip file",
    "java.util.zip.ZipException",
    "incorrect header check",
    "TextParsingException",
)
# ... and about a columnar file or schemas it cannot merge: a target holds such files too, so these are
# only converted where a source is being read
COLUMNAR_FILE_PROBLEMS = (
    "is not a Parquet file",
    "Could not read footer",
    "CANNOT_MERGE_SCHEMAS",
    "Failed to merge",
    "Malformed ORC file",
    "ParquetDecodingException",
)
_FILE_IN_MESSAGE = re.compile(r"Encountered error while reading file (\S+?)\.? Details")
_TOO_MANY_COLUMNS = re.compile(
    r"TextParsingException: java\.lang\.ArrayIndexOutOfBoundsException - Index (\d+)"
)
_HINT = "a truncated or corrupt file, or files whose column types conflict? Fix or remove them and run again"

_OPENERS: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open}
_CHUNK = 1 << 20


def jvm_causes(exc: BaseException) -> list[str]:
    """The JVM exception chain of a failed Spark call, outermost first (empty when not from the JVM)."""
    causes = []
    cause: Any = getattr(exc, "java_exception", None)
    while cause is not None:
        causes.append(str(cause.toString()))
        cause = cause.getCause()
    return causes


def unreadable_source(
    exc: BaseException,
    *,
    what: str = "source files",
    problems: Sequence[str] = TEXT_FILE_PROBLEMS + COLUMNAR_FILE_PROBLEMS,
) -> SourceError | None:
    """A ``source`` error for a Spark failure about a file's content (one of ``problems``), else None."""
    causes = jvm_causes(exc)
    if not any(marker in cause for cause in causes for marker in problems):
        return None
    named = next((m.group(1) for c in causes if (m := _FILE_IN_MESSAGE.search(c))), None)
    if named is not None and named.startswith("file:///"):
        named = named.removeprefix("file://")
    where = f"the source file {named}" if named else f"the {what}"
    wide = next((m.group(1) for c in causes if (m := _TOO_MANY_COLUMNS.search(c))), None)
    if wide is not None:
        return SourceError(
            f"could not read {where}: a record has more than {wide} fields",
            hint="a broken delimiter or quoting? Or raise the reader's limit with "
            "source.options.engine_options.maxColumns",
        )
    root = causes[-1].strip().splitlines()[0]
    return SourceError(f"could not read {where}: {root}", hint=_HINT)


def check_compressed(files: Sequence[str]) -> None:
    """Decompress each local ``.gz``/``.bz2`` file to its end; a truncated or corrupt one is a ``source``
    error naming it."""
    for path in files:
        opener = _OPENERS.get(Path(path).suffix.lower())
        if opener is None or not Path(path).is_file():  # a remote path or glob: Spark reads it unchecked
            continue
        try:
            with opener(path, "rb") as stream:
                while stream.read(_CHUNK):
                    pass
        except (OSError, EOFError, zlib.error) as exc:
            raise compressed_error(path, exc) from exc


def compressed_error(path: str, exc: BaseException) -> SourceError:
    return SourceError(
        f"could not read the source file {path}: {exc}",
        hint="a truncated or corrupt compressed file? Fix or remove it and run again",
    )
