"""The cursor of the ``delta_version`` watermark strategy (SEMANTICS §3.4): a Delta table version, kept in
the run log as the run's ``watermark`` (the reading itself is lakelogic.tables.delta_files)."""

from __future__ import annotations

from lakelogic.errors import SourceError

DELTA_VERSION_STRATEGY = "delta_version"
# report.watermark.field of a delta_version run: its cursor is a table version, not a column.
DELTA_VERSION_FIELD = "_delta_version"


def stored_version(field: str | None, value: str | None) -> int | None:
    """The Delta version a run-log cursor holds; None when the cursor is another strategy's (or none)."""
    if field != DELTA_VERSION_FIELD or value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError as exc:
        raise SourceError(
            f"the stored delta_version cursor {value!r} is not a table version",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        ) from exc
