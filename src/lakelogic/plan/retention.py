"""``compliance.retention`` (SEMANTICS §18): ``{period, column}``; rows whose ``column`` is older than
``as_of - period`` are due for deletion by ``lakelogic retention apply``.

Periods: ISO 8601 (``P90D``, ``P1Y``, ``P6M``, ``P2W``, ``P1Y2M10DT2H``) or a number with a unit (``90d``,
``12h``, ``2w``, ``30m`` is minutes). Years and months are calendar units: one month before 31 March is
28/29 February. A bare number is refused: days or hours would both be a guess.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lakelogic.errors import PlanError

_ISO = re.compile(
    r"P(?:(?P<Y>\d+)Y)?(?:(?P<M>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?",
    re.IGNORECASE,
)
_SHORT = re.compile(r"(\d+)\s*([smhdwy])", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


@dataclass(frozen=True)
class RetentionPolicy:
    period: str
    column: str
    years: int = 0
    months: int = 0
    delta: timedelta = timedelta(0)

    def cutoff(self, as_of: datetime) -> datetime:
        """The oldest instant kept: rows with ``column < cutoff`` are expired."""
        total_months = as_of.month - 1 - self.months - 12 * self.years
        year, month = as_of.year + total_months // 12, total_months % 12 + 1
        day = min(as_of.day, calendar.monthrange(year, month)[1])
        return as_of.replace(year=year, month=month, day=day) - self.delta


def _period_parts(text: str) -> tuple[int, int, timedelta] | None:
    iso = _ISO.fullmatch(text)
    if iso is not None and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        g = {k: int(v) for k, v in iso.groupdict().items() if v is not None}
        seconds = sum(g.get(k, 0) * _SECONDS[k.lower()] for k in ("W", "D", "h", "m", "s"))
        return g.get("Y", 0), g.get("M", 0), timedelta(seconds=seconds)
    short = _SHORT.fullmatch(text)
    if short is not None:
        amount, unit = int(short.group(1)), short.group(2).lower()
        if unit == "y":
            return amount, 0, timedelta(0)
        return 0, 0, timedelta(seconds=amount * _SECONDS[unit])
    return None


def retention_policy(contract: Any) -> RetentionPolicy | None:
    """The contract's retention policy, None when it has none; a malformed one is a PlanError."""
    compliance = getattr(contract, "compliance", None) or {}
    retention = compliance.get("retention") if isinstance(compliance, dict) else None
    if retention is None:
        return None
    path = "compliance.retention"
    if not isinstance(retention, dict):
        raise PlanError("retention is a mapping {period, column}", yaml_path=path)
    period, column = retention.get("period"), retention.get("column")
    if not isinstance(column, str) or not column:
        raise PlanError(
            "retention needs the column whose age decides",
            yaml_path=f"{path}.column",
            hint="set compliance.retention.column (a timestamp or date field), or enable lineage: a "
            "hierarchy retention period then uses its processed-at column",
        )
    parts = _period_parts(str(period).strip()) if isinstance(period, str) else None
    if parts is None or parts == (0, 0, timedelta(0)):
        raise PlanError(
            f"{period!r} is not a retention period",
            yaml_path=f"{path}.period",
            hint="ISO 8601 (P90D, P1Y, P6M, PT12H) or a number with a unit (90d, 12h, 2w, 1y)",
        )
    fields = {f.name for f in contract.model.fields}
    if column not in fields and not column.startswith("_lakelogic_"):  # lineage columns are written too
        raise PlanError(
            f"retention column {column!r} is not a model field",
            yaml_path=f"{path}.column",
            hint=f"one of: {', '.join(sorted(fields))}",
        )
    return RetentionPolicy(str(period), column, parts[0], parts[1], parts[2])
