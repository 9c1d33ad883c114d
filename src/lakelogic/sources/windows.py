"""Processing windows pushed into file reads (SEMANTICS §3.4, DRIVER §8). No Spark here.

A run may carry a window ``[start, end)`` (the driver computes it; a standalone run may pass one). This
module decides, before anything is read, what the window means for one file source:

* ``incremental``/``cdc`` without ``watermark_field``: *file selection*. Under ``last_success``-style
  windows a file qualifies when its modification time is in the window (a late file for an old day is
  still picked up); under explicit windows (``range``, ``yesterday``, ``backfill_*``, ``reprocess``) by
  the business date in its name (``YYYY-MM-DD`` or ``YYYYMMDD``), else by modification time. No
  qualifying file means no new data, never a fallback to all files. A ``reprocess`` window of a contract
  with a date column filters every file's rows by that column instead (DRIVER §8).
* ``incremental``/``cdc`` with ``watermark_field``: every listed file is read and rows are filtered to
  ``start <= watermark_field < end`` (``start < …`` when the window's start is exclusive; the filter is
  applied by the engine, see :class:`RowWindow`).
* ``full``: everything is read; under an explicit window rows are filtered by a declared
  ``watermark_field``, else by the contract's date column (``materialization.reprocess_date_column``,
  else its first ``partition_by`` column), so a reprocess or backfill window takes only its own dates;
  a contract with neither records the window as ``window_not_applicable``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

INCREMENTAL_MODES = ("incremental", "cdc")
EXPLICIT_LABELS = ("range", "yesterday", "reprocess")
WINDOW_NOT_APPLICABLE = "window_not_applicable"
# The basis of a row window over a full contract's date column (DRIVER §8).
BY_DATE_COLUMN = "reprocess_date_column"

# A date in a file name, ISO (2024-01-31) or compact (20240131), not glued to other digits.
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


@dataclass(frozen=True)
class ReadWindow:
    """The window of one run as the source reader sees it (``start`` None = from the beginning).

    ``start_exclusive``: rows must be strictly after ``start`` (a ``max_target`` bound: the rows at the
    target's maximum watermark were written by the run that set it, SEMANTICS §3.4). It applies to the
    watermark row filter only: a file selected by modification time keeps an inclusive start.
    """

    label: str = "window"
    start: datetime | None = None
    end: datetime | None = None
    reason: str | None = None
    start_exclusive: bool = False
    # The cursor the previous successful run stored (run log ``watermark_field``/``watermark_value``), for
    # strategies whose cursor is no timestamp (``delta_version``: a table version).
    cursor_field: str | None = None
    cursor: str | None = None

    @property
    def explicit(self) -> bool:
        """Range, yesterday, backfill and reprocess windows select by business date (DRIVER §8)."""
        return self.label in EXPLICIT_LABELS or self.label.startswith("backfill_")

    @property
    def bounded(self) -> bool:
        return self.start is not None or self.end is not None

    @classmethod
    def of(cls, window: Any) -> ReadWindow | None:
        """A window from what ``DataProcessor.run(window=...)`` accepts.

        ``None``; a ``(start, end)`` tuple (label ``window``); or any object/mapping with ``start``,
        ``end`` and optionally ``label``/``reason`` (e.g. the driver's ``Window``).
        """
        if window is None:
            return None
        if isinstance(window, ReadWindow):
            return window
        if isinstance(window, tuple | list):
            if len(window) != 2:
                raise ValueError(f"window must be (start, end); got {len(window)} values")
            return cls("window", _utc(window[0]), _utc(window[1]))
        get = window.get if isinstance(window, dict) else lambda k, d=None: getattr(window, k, d)
        return cls(
            label=str(get("label", "window") or "window"),
            start=_utc(get("start")),
            end=_utc(get("end")),
            reason=get("reason"),
            cursor_field=get("cursor_field"),
            cursor=get("cursor"),
        )

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        return self.start, self.end


@dataclass(frozen=True)
class RowWindow:
    """Rows to keep: ``start <= field < end``, or ``start < field < end`` when ``start_exclusive`` (either
    bound may be open)."""

    field: str
    start: datetime | None
    end: datetime | None
    start_exclusive: bool = False


@dataclass
class WindowDecision:
    """What the reader does with a window: which files, which row filter, and why (report.window)."""

    files: list[str]
    # Why the window did NOT restrict the read (window_not_applicable, …); None when it did.
    reason: str | None = None
    # How the window restricted the read: file_mtime, file_name_date, watermark_field or
    # reprocess_date_column (the rows of a full contract by its date column).
    basis: str | None = None
    row_window: RowWindow | None = None
    applied: bool = False  # the window restricted the read (an empty read is then "no new data")
    skipped_files: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def watermark(self) -> RowWindow | None:
        """The row window when its field is the contract's watermark (``report.watermark``, the run's
        cursor); a full contract's date column filters rows but is no cursor."""
        return self.row_window if self.basis != BY_DATE_COLUMN else None


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(0), tzinfo=UTC)
    if isinstance(value, str):
        return _utc(datetime.fromisoformat(value))
    raise ValueError(f"window bound must be a datetime, date or ISO string; got {value!r}")


def name_date(path: str) -> date | None:
    """The business date in a file's name (the last valid one), else None."""
    found: date | None = None
    for match in _NAME_DATE.finditer(Path(path).name):
        try:
            found = date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:  # 8 digits that are not a calendar date (an id, a counter)
            continue
    return found


def file_mtime(path: str) -> datetime:
    return datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)


def _inside(moment: datetime, window: ReadWindow) -> bool:
    if window.start is not None and moment < window.start:
        return False
    return window.end is None or moment < window.end


def select_files(files: Sequence[str], window: ReadWindow) -> list[str]:
    """Files of an incremental file source that fall in ``window`` (by name date or mtime)."""
    chosen: list[str] = []
    for path in files:
        day = name_date(path) if window.explicit else None
        moment = datetime.combine(day, time(0), tzinfo=UTC) if day is not None else file_mtime(path)
        if _inside(moment, window):
            chosen.append(path)
    return chosen


def decide(
    files: Sequence[str],
    window: ReadWindow | None,
    *,
    load_mode: str,
    watermark_field: str | None,
    date_column: str | None = None,
) -> WindowDecision:
    """Apply ``window`` to the listed ``files`` of one file source (see the module docstring).

    ``date_column``: what a ``full`` contract without ``watermark_field`` windows its rows by under an
    explicit window, and any contract without one under a reprocess window (DRIVER §8:
    ``reprocess_date_column``, else the first ``partition_by`` column).
    """
    listed = list(files)
    if window is None or not window.bounded:
        return WindowDecision(listed)
    mode = (load_mode or "full").lower()
    if mode in INCREMENTAL_MODES:
        if watermark_field:
            rows = RowWindow(watermark_field, window.start, window.end, window.start_exclusive)
            return WindowDecision(listed, basis="watermark_field", row_window=rows, applied=True)
        if window.label == "reprocess" and date_column:
            # DRIVER §8: a reprocess takes the rows of its dates, wherever they landed (a late row sits in
            # a later day's file); the write replaces exactly those dates
            rows = RowWindow(date_column, window.start, window.end)
            return WindowDecision(listed, basis=BY_DATE_COLUMN, row_window=rows, applied=True)
        chosen = select_files(listed, window)
        basis = "file_name_date" if window.explicit else "file_mtime"
        return WindowDecision(chosen, basis=basis, applied=True, skipped_files=len(listed) - len(chosen))
    if window.explicit and watermark_field:
        rows = RowWindow(watermark_field, window.start, window.end, window.start_exclusive)
        return WindowDecision(listed, basis="watermark_field", row_window=rows, applied=True)
    if window.explicit and date_column:
        rows = RowWindow(date_column, window.start, window.end)
        return WindowDecision(listed, basis=BY_DATE_COLUMN, row_window=rows, applied=True)
    return WindowDecision(listed, WINDOW_NOT_APPLICABLE)
