"""The identity every commit carries, and the rule that decides "already committed" (SEMANTICS §13.4)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

PREFIX = "lakelogic."
KEYS = ("run_id", "pipeline_run_id", "contract", "window_start", "window_end")


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value is not None else ""


@dataclass(frozen=True)
class CommitStamp:
    """``lakelogic.*`` commit metadata of one write.

    ``role`` separates the target commit from the quarantine commit of the same run (they may land in
    the same log when a user points both at one table).
    """

    run_id: str
    contract: str
    pipeline_run_id: str | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    role: str = "target"
    # A backfill window (DRIVER §8): any earlier commit of the same contract, window and role, from any
    # pipeline run, makes the write a no-op, so backfilling a window again never duplicates its rows.
    any_pipeline_run: bool = False

    def properties(self) -> dict[str, str]:
        """Commit metadata as flat string properties (Iceberg summary, Delta commitInfo, marker JSON)."""
        return {
            f"{PREFIX}run_id": self.run_id,
            f"{PREFIX}pipeline_run_id": self.pipeline_run_id or "",
            f"{PREFIX}contract": self.contract,
            f"{PREFIX}window_start": _iso(self.window_start),
            f"{PREFIX}window_end": _iso(self.window_end),
            f"{PREFIX}role": self.role,
        }

    @property
    def window_key(self) -> str | None:
        """A short digest of (pipeline run, contract, window, role); None for standalone runs."""
        if not self.pipeline_run_id:
            return None
        text = "|".join(
            (self.pipeline_run_id, self.contract, _iso(self.window_start), _iso(self.window_end), self.role)
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @property
    def any_run_window_key(self) -> str | None:
        """A short digest of (contract, window, role) for a windowed commit, whatever its pipeline run:
        where a backfill finds the commits of its window (Parquet markers). None without a window."""
        if self.window_start is None and self.window_end is None:
            return None
        text = "|".join((self.contract, _iso(self.window_start), _iso(self.window_end), self.role))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def matches(self, props: Mapping[str, object]) -> bool:
        """True when ``props`` (one commit's metadata) records this run, or the same pipeline run, contract
        and window (for a backfill window: any pipeline run). Commits without a role are target commits."""
        role = str(props.get(f"{PREFIX}role") or "target")
        if role != self.role:
            return False
        if props.get(f"{PREFIX}run_id") == self.run_id:
            return True
        mine = self.properties()
        same = ("contract", "window_start", "window_end")
        if self.any_pipeline_run and self.any_run_window_key is not None:
            return all(str(props.get(f"{PREFIX}{k}") or "") == mine[f"{PREFIX}{k}"] for k in same)
        if not self.pipeline_run_id:
            return False
        return all(
            str(props.get(f"{PREFIX}{k}") or "") == mine[f"{PREFIX}{k}"] for k in ("pipeline_run_id", *same)
        )


def committed_in(history: Iterable[Mapping[str, object]], stamp: CommitStamp) -> bool:
    """Whether ``history`` (commit metadata, newest first) holds ``stamp``'s commit. For a backfill
    window, commits older than the table's latest reset do not count: the reset removed their rows, so
    backfilling the window again must write it (DRIVER §8)."""
    for props in history:
        if stamp.any_pipeline_run and str(props.get(f"{PREFIX}role") or "") == "reset":
            return False
        if stamp.matches(props):
            return True
    return False
