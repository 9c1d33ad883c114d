"""Date-folder listing (SEMANTICS §3.1 ``source.partition``): of the files under a source directory, only
those in date folders inside the window are read.

``format`` is a strftime pattern of the folder path below the source directory (``%Y/%m/%d``,
``y_%Y/m_%m/d_%d``, ``dt=%Y-%m-%d``). A file qualifies when the first segments of its path below the
directory (as many as the format has) parse with the format to a date in the window and, with
``file_pattern``, its name matches that glob. The window is ``[start_date, end_date]`` (both inclusive),
or ``lookback_days`` days back from its end; an open end is the run's as-of date, an open start reads
every dated folder up to the end. Files outside date folders are not read: the block says where the data
is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from lakelogic.errors import PlanError


def date_window(partition: Mapping[str, Any], as_of: date) -> tuple[date | None, date]:
    """The inclusive date window of a ``partition`` block."""
    end = _day(partition.get("end_date"), "end_date") or as_of
    start = _day(partition.get("start_date"), "start_date")
    lookback = partition.get("lookback_days")
    if start is None and lookback is not None:
        start = end - timedelta(days=int(lookback))
    return start, end


def in_date_folders(files: Sequence[str], root: str, partition: Mapping[str, Any], as_of: date) -> list[str]:
    """The ``files`` (absolute paths or ``file:`` URIs under ``root``) in date folders inside the window."""
    fmt = str(partition.get("format") or "").strip("/")
    if not fmt:
        raise PlanError("source.partition needs a strftime `format`", yaml_path="source.partition.format")
    start, end = date_window(partition, as_of)
    depth = len(PurePosixPath(fmt).parts)
    pattern = partition.get("file_pattern")
    base = PurePosixPath(_plain(root))
    chosen = []
    for file in files:
        path = PurePosixPath(_plain(file))
        try:
            parts = path.relative_to(base).parts
        except ValueError:
            continue
        if len(parts) <= depth or (pattern and not fnmatch.fnmatch(parts[-1], str(pattern))):
            continue
        try:
            day = datetime.strptime("/".join(parts[:depth]), fmt).date()
        except ValueError:
            continue  # not a date folder of this layout
        if (start is None or day >= start) and day <= end:
            chosen.append(file)
    return chosen


def _plain(path: str) -> str:
    return path.removeprefix("file://").removeprefix("file:")


def _day(value: Any, key: str) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError as exc:
        raise PlanError(
            f"source.partition.{key} must be a date (YYYY-MM-DD), got {value!r}",
            yaml_path=f"source.partition.{key}",
        ) from exc
