"""Processing windows (DRIVER §8): which ``[start, end)`` each contract reads in a pipeline run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from lakelogic.errors import RegistryError
from lakelogic.sources.delta_cursor import DELTA_VERSION_FIELD

WINDOW_MODES = ("last_success", "none", "range", "yesterday", "reprocess")


@dataclass(frozen=True)
class Window:
    label: str
    start: datetime | None
    end: datetime | None
    reason: str | None = None
    run_mode: str = "normal"  # normal | backfill | reprocess
    # the last success's stored cursor (run log watermark field and value), for strategies that keep
    # their own (delta_version)
    cursor_field: str | None = None
    cursor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "reason": self.reason,
        } | ({"cursor_field": self.cursor_field, "cursor": self.cursor} if self.cursor_field else {})

    def describe(self) -> str:
        start = self.start.isoformat(timespec="seconds") if self.start else "-"
        end = self.end.isoformat(timespec="seconds") if self.end else "-"
        return f"{self.label} [{start}, {end})" + (f" ({self.reason})" if self.reason else "")


@dataclass(frozen=True)
class WindowSpec:
    """The ``--window`` family of flags, validated once for the whole pipeline run."""

    mode: str = "last_success"
    start_date: date | None = None
    end_date: date | None = None

    def __post_init__(self) -> None:
        if self.mode not in WINDOW_MODES:
            raise RegistryError(f"--window: unknown mode {self.mode!r}; allowed: {', '.join(WINDOW_MODES)}")
        if self.mode in ("range", "reprocess"):
            if self.start_date is None or self.end_date is None:
                raise RegistryError(f"--window {self.mode} needs a start and an end date")
            if self.end_date < self.start_date:
                raise RegistryError(
                    f"--window {self.mode}: end date {self.end_date} is before {self.start_date}"
                )


class SuccessLookup(Protocol):
    def exists(self) -> bool: ...

    def last_success(self, contract: str) -> dict[str, Any] | None: ...

    def last_cursor(self, contract: str, field: str) -> dict[str, Any] | None: ...


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _as_utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def resolve_window(
    spec: WindowSpec, contract: str, *, as_of: datetime, store: SuccessLookup | None
) -> Window:
    """The window of one contract; ``store`` is read only, for ``last_success``."""
    if spec.mode == "none":
        return Window("full", None, as_of, "window_none")
    if spec.mode == "yesterday":
        today = _midnight(as_of.astimezone(UTC).date())
        return Window("yesterday", today - timedelta(days=1), today)
    if spec.mode == "range":
        assert spec.start_date and spec.end_date
        return Window("range", _midnight(spec.start_date), _midnight(spec.end_date) + timedelta(days=1))
    if spec.mode == "reprocess":
        assert spec.start_date and spec.end_date
        return Window(
            "reprocess",
            _midnight(spec.start_date),
            _midnight(spec.end_date) + timedelta(days=1),
            run_mode="reprocess",
        )
    if store is None:
        return Window("full", None, as_of, "no_run_log")
    row = store.last_success(contract) if store.exists() else None
    if row is None or row.get("window_end") is None:
        return Window("full", None, as_of, "no_previous_success")
    # a contract whose cursor is a Delta version (SEMANTICS §3.4 delta_version) reads the commits after it
    stored = store.last_cursor(contract, DELTA_VERSION_FIELD)
    return Window(
        "incremental",
        _as_utc(row["window_end"]),
        as_of,
        "last_success",
        cursor_field=DELTA_VERSION_FIELD if stored else None,
        cursor=stored.get("watermark_value") if stored else None,
    )


def not_past(window: Window, as_of: datetime) -> Window:
    """``window`` ending at ``as_of`` at the latest. A range or backfill through today ends at tomorrow's
    midnight, and the run log keeps that end as the contract's cursor: the next ``last_success`` window
    would start in the future and skip every file landing until then. Rows dated after ``as_of`` are
    read by that next window instead. Reprocess windows keep their slice (they never move a cursor)."""
    if window.run_mode == "reprocess" or window.end is None or window.end <= as_of:
        return window
    if window.start is not None and window.start >= as_of:  # wholly ahead: nothing to shorten it to
        return window
    return replace(window, end=as_of)


def backfill_windows(start: date, end: date, granularity: str = "day") -> list[Window]:
    """Consecutive 1- or 7-day windows from ``start``; the last one ends at ``end`` + 1 day."""
    if granularity not in ("day", "week"):
        raise RegistryError(f"--backfill-granularity: {granularity!r}; allowed: day, week")
    if end < start:
        raise RegistryError(f"backfill end date {end} is before start date {start}")
    step = timedelta(days=1 if granularity == "day" else 7)
    stop = _midnight(end) + timedelta(days=1)
    out: list[Window] = []
    cursor = _midnight(start)
    while cursor < stop:
        nxt = min(cursor + step, stop)
        out.append(Window(f"backfill_{cursor:%Y%m%d}", cursor, nxt, run_mode="backfill"))
        cursor = nxt
    return out
