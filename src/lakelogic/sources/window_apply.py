"""Applying a window decision to a Spark read: the watermark row filter and the report fields.

The row filter sits directly on top of the file scan, so Spark pushes it into the read (Parquet/ORC
statistics, and no rows outside the window ever reach casting or validation). The new cursor
(``report.watermark.current``) is the maximum watermark over the rows read, gathered by an
``Observation`` during the run's own actions: no extra Spark job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakelogic.errors import SourceError
from lakelogic.report import RunReport
from lakelogic.sources.columns import CORRUPT_COLUMN
from lakelogic.sources.delta_cursor import DELTA_VERSION_FIELD
from lakelogic.sources.windows import ReadWindow, RowWindow, WindowDecision

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

_WAIT_SECONDS = 30.0


@dataclass
class SourceWindowState:
    """What the source read did with the run's window; the runner copies it into the report."""

    window: ReadWindow
    decision: WindowDecision
    watermark: Observation | None = None
    # a delta_version read (SEMANTICS §3.4): the stored version and the version read up to
    versions: tuple[int | None, int] | None = None
    # the commits read added no data (compactions, whole-file deletes, metadata): the cursor passes them
    # even though the run reads no row, so log retention never strands it on an old version
    versions_idle: bool = False

    def fill_report(self, report: RunReport) -> None:
        """``report.window.reason`` and ``report.watermark.field/previous`` (known before any action).

        The reason a window did not apply wins; otherwise the window's own reason (the driver's, e.g.
        ``no_previous_success``) is kept, and a window without one records how it was applied.
        """
        reason = self.decision.reason or self.window.reason or self.decision.basis
        if reason is not None:
            report.window.reason = reason
        rows = self.decision.watermark
        if rows is not None:
            report.watermark.field = rows.field
            report.watermark.previous = rows.start
        if self.versions is not None:  # a run that reads nothing leaves the cursor where it was (§3.3)
            previous, current = self.versions
            report.watermark.field = DELTA_VERSION_FIELD
            report.watermark.previous = previous
            report.watermark.current = current if self.versions_idle else previous

    def fill_current(self, report: RunReport) -> None:
        """``report.watermark.current``; call only after the run's actions have executed."""
        if self.versions is not None:
            report.watermark.current = self.versions[1]
            return
        if self.watermark is None:
            return
        report.watermark.current = _observed_max(self.watermark)


def watermark_value(frame: DataFrame, field: str) -> Any:
    """The watermark of each row as a timestamp: timestamps and dates as they are; text as ISO 8601 or
    ``YYYY-MM-DD`` (Spark's cast) or ``YYYYMMDD``; integers as ``YYYYMMDD`` (a cast would read them as epoch
    seconds); NULL when the value is none of these."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, IntegralType, TimestampNTZType, TimestampType

    if field not in frame.columns:
        raise SourceError(
            f"watermark_field {field!r} is not a column of the source",
            hint=f"source columns: {', '.join(frame.columns[:20])}",
        )
    column = F.col(f"`{field}`")
    dtype = frame.schema[field].dataType
    if isinstance(dtype, TimestampType | TimestampNTZType | DateType):
        return column.cast("timestamp")
    compact = F.to_timestamp(column.cast("string"), "yyyyMMdd")
    if isinstance(dtype, IntegralType):
        return compact
    return F.coalesce(column.cast("timestamp"), compact)


def filter_rows(frame: DataFrame, rows: RowWindow, *, value: Any = None) -> DataFrame:
    """Keep ``start <= watermark < end`` (SEMANTICS §3.4); ``start < watermark`` when the window's start
    is exclusive (``max_target``: the rows at the target's maximum are already in the target).

    A row whose watermark is NULL or unparseable has no place in a bounded window: it is read by windows
    that start at the beginning (the first load, a full reload) and goes on to casting and validation
    there, so it is neither lost nor read again by every later window. A malformed record (its watermark
    cannot be read at all) is kept by every window: it is quarantined each time its file is read rather
    than dropped without a word (§3.3). ``value``: the field as a timestamp when the caller reads it
    otherwise than :func:`watermark_value` (a model date column with its formats).
    """
    from pyspark.sql import functions as F

    cursor = watermark_value(frame, rows.field) if value is None else value
    inside = F.lit(True)
    if rows.start is not None:
        after = cursor > F.lit(rows.start) if rows.start_exclusive else cursor >= F.lit(rows.start)
        inside = inside & after
    if rows.end is not None:
        inside = inside & (cursor < F.lit(rows.end))
    kept = (cursor.isNull() & F.lit(rows.start is None)) | inside
    if CORRUPT_COLUMN in frame.columns:
        kept = kept | F.col(CORRUPT_COLUMN).isNotNull()
    return frame.where(kept)


def observe_watermark(
    frame: DataFrame, field: str, run_id: str, *, value: Any = None
) -> tuple[DataFrame, Observation]:
    """Attach ``MAX(field)`` as an observation (filled by the run's first action over the frame);
    ``value``: the field as a timestamp, as :func:`filter_rows` takes it."""
    import uuid

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    # Unique per call: a resumed run reuses its run_id, and observation names are session-global.
    obs = Observation(f"ll_wm_{run_id.replace('-', '')}_{uuid.uuid4().hex[:8]}")
    # Epoch microseconds: observed metrics come back through Py4J, which does not convert timestamps.
    newest = F.unix_micros(F.max(watermark_value(frame, field) if value is None else value))
    return frame.observe(obs, newest.alias("max_wm")), obs


def _observed_max(obs: Observation) -> Any:
    import threading

    found: list[Any] = []

    def read() -> None:
        found.append(obs.get.get("max_wm"))

    # Observation.get blocks until an action has executed the frame; never hang the run on it.
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(_WAIT_SECONDS)
    if not found or found[0] is None:
        return None
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(found[0]))
