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

    def fill_report(self, report: RunReport) -> None:
        """``report.window.reason`` and ``report.watermark.field/previous`` (known before any action).

        The reason a window did not apply wins; otherwise the window's own reason (the driver's, e.g.
        ``no_previous_success``) is kept, and a window without one records how it was applied.
        """
        reason = self.decision.reason or self.window.reason or self.decision.basis
        if reason is not None:
            report.window.reason = reason
        rows = self.decision.row_window
        if rows is not None:
            report.watermark.field = rows.field
            report.watermark.previous = rows.start

    def fill_current(self, report: RunReport) -> None:
        """``report.watermark.current``; call only after the run's actions have executed."""
        if self.watermark is None:
            return
        report.watermark.current = _observed_max(self.watermark)


def filter_rows(frame: DataFrame, rows: RowWindow) -> DataFrame:
    """Keep ``start <= field < end``; rows whose watermark is NULL/unparseable are kept.

    Why keep them: dropping rows here would lose data silently (SEMANTICS: bad data is quarantined,
    never dropped); they go on to casting and validation like any other row.
    """
    from pyspark.sql import functions as F

    if rows.field not in frame.columns:
        raise SourceError(
            f"watermark_field {rows.field!r} is not a column of the source",
            hint=f"source columns: {', '.join(frame.columns[:20])}",
        )
    cursor = F.col(f"`{rows.field}`").cast("timestamp")
    inside = F.lit(True)
    if rows.start is not None:
        inside = inside & (cursor >= F.lit(rows.start))
    if rows.end is not None:
        inside = inside & (cursor < F.lit(rows.end))
    return frame.where(cursor.isNull() | inside)


def observe_watermark(frame: DataFrame, field: str, run_id: str) -> tuple[DataFrame, Observation]:
    """Attach ``MAX(field)`` as an observation (filled by the run's first action over the frame)."""
    import uuid

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    # Unique per call: a resumed run reuses its run_id, and observation names are session-global.
    obs = Observation(f"ll_wm_{run_id.replace('-', '')}_{uuid.uuid4().hex[:8]}")
    # Epoch microseconds: observed metrics come back through Py4J, which does not convert timestamps.
    newest = F.unix_micros(F.max(F.col(f"`{field}`").cast("timestamp")))
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
