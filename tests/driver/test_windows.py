"""Window resolution (DRIVER §8) without a store or with an empty one."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from lakelogic.driver.windows import Window, WindowSpec, backfill_windows, not_past, resolve_window
from lakelogic.errors import RegistryError

AS_OF = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)


def day(d: int, month: int = 3) -> datetime:
    return datetime(2026, month, d, tzinfo=UTC)


def test_range_is_inclusive_of_the_end_date() -> None:
    w = resolve_window(WindowSpec("range", date(2026, 3, 1), date(2026, 3, 3)), "c", as_of=AS_OF, store=None)
    assert (w.label, w.start, w.end) == ("range", day(1), day(4))


def test_yesterday_and_none_and_reprocess() -> None:
    y = resolve_window(WindowSpec("yesterday"), "c", as_of=AS_OF, store=None)
    assert (y.start, y.end) == (day(9), day(10))
    n = resolve_window(WindowSpec("none"), "c", as_of=AS_OF, store=None)
    assert (n.label, n.start, n.end) == ("full", None, AS_OF)
    r = resolve_window(
        WindowSpec("reprocess", date(2026, 3, 5), date(2026, 3, 5)), "c", as_of=AS_OF, store=None
    )
    assert (r.label, r.start, r.end, r.run_mode) == ("reprocess", day(5), day(6), "reprocess")


def test_last_success_without_store_is_a_full_load() -> None:
    w = resolve_window(WindowSpec(), "c", as_of=AS_OF, store=None)
    assert (w.label, w.reason) == ("full", "no_run_log")


def test_backfill_windows_days_and_weeks() -> None:
    days = backfill_windows(date(2026, 3, 1), date(2026, 3, 3))
    assert [w.label for w in days] == ["backfill_20260301", "backfill_20260302", "backfill_20260303"]
    assert days[-1].end == day(4) and all(w.run_mode == "backfill" for w in days)
    weeks = backfill_windows(date(2026, 3, 1), date(2026, 3, 10), "week")
    assert [(w.start, w.end) for w in weeks] == [(day(1), day(8)), (day(8), day(11))]


def test_bad_window_flags() -> None:
    with pytest.raises(RegistryError, match="unknown mode"):
        WindowSpec("tomorrow")
    with pytest.raises(RegistryError, match="before"):
        WindowSpec("range", date(2026, 3, 2), date(2026, 3, 1))
    with pytest.raises(RegistryError, match="granularity"):
        backfill_windows(date(2026, 3, 1), date(2026, 3, 2), "month")


def test_windows_end_at_as_of_at_the_latest_except_reprocess_and_wholly_future_ones() -> None:
    through_today = Window("range", day(9), day(11))
    assert not_past(through_today, AS_OF) == Window("range", day(9), AS_OF)
    assert not_past(Window("range", day(1), day(4)), AS_OF) == Window("range", day(1), day(4))
    reprocess = Window("reprocess", day(10), day(11), run_mode="reprocess")
    assert not_past(reprocess, AS_OF) == reprocess  # a reprocess replaces its whole slice
    ahead = Window("backfill_20260312", day(12), day(13), run_mode="backfill")
    assert not_past(ahead, AS_OF) == ahead
