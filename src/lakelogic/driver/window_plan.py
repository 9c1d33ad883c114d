"""Which pipeline runs one driver invocation makes (DRIVER §8 backfill, §11 resume, §18 orchestrators).

A plain invocation is one pipeline run in the selected window mode. A backfill is one pipeline run per
window, all under one ``backfill_id``. ``--resume`` finishes the stopped pipeline run first, then the
backfill's later windows, which the state file names (``args.backfill``: range, granularity and the
stopped window's position).

An orchestrator passes its own run id (``--pipeline-run-id``) with a shared ``--state-path`` and runs the
same command on a retry. The id names the whole invocation: a single run takes it as is; a backfill's
windows take ``<id>-w<position>`` and its ``backfill_id`` is the id itself, so a retry finds the state
its first attempt left and resumes it, instead of recomputing every window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from lakelogic.driver.state import DriverState
from lakelogic.driver.windows import Window, backfill_windows
from lakelogic.errors import RegistryError


@dataclass
class WindowPlan:
    """The pipeline runs to make: ``(position in the backfill, fixed window)``, None for the window mode."""

    windows: list[tuple[int, Window | None]]
    total: int = 1
    backfill_id: str | None = None
    backfill: dict[str, Any] = field(default_factory=dict)  # the range a state file records
    requested_run_id: str | None = None  # --pipeline-run-id

    def run_id(self, index: int) -> str | None:
        """The pipeline run id of the window at ``index``; None lets the caller draw a new one."""
        if self.requested_run_id is None:
            return None
        if not self.backfill or self.total == 1:  # one pipeline run: it takes the id as it is
            return self.requested_run_id
        return f"{self.requested_run_id}-w{index + 1}"

    def state_args(self, index: int) -> dict[str, Any]:
        """What a state file needs to carry the plan on from the window at ``index``."""
        args: dict[str, Any] = {}
        if self.backfill:
            args["backfill"] = self.backfill | {"index": index}
        if self.requested_run_id is not None:
            args["requested_run_id"] = self.requested_run_id
        return args


def plan_windows(
    backfill_range: tuple[date, date, str] | None, requested_run_id: str | None, new_id: str
) -> WindowPlan:
    """A fresh invocation: the backfill's windows, or one run in the window mode."""
    if backfill_range is None:
        return WindowPlan([(0, None)], requested_run_id=requested_run_id)
    start, end, granularity = backfill_range
    windows = backfill_windows(start, end, granularity)
    return WindowPlan(
        list(enumerate(windows)),
        total=len(windows),
        backfill_id=requested_run_id or new_id,
        backfill={"start": start.isoformat(), "end": end.isoformat(), "granularity": granularity},
        requested_run_id=requested_run_id,
    )


def _saved_windows(saved: dict[str, Any]) -> tuple[list[Window], int]:
    """The backfill a state file records: all its windows and the stopped window's position."""
    full = backfill_windows(
        date.fromisoformat(saved["start"]),
        date.fromisoformat(saved["end"]),
        saved.get("granularity", "day"),
    )
    return full, int(saved.get("index", len(full)))


def resume_plan(resumed: DriverState) -> WindowPlan:
    """``--resume``: the stopped pipeline run (its nodes keep their saved windows; nodes it never reached
    get its backfill window), then the backfill's later windows."""
    requested = resumed.args.get("requested_run_id")
    saved = resumed.args.get("backfill") or {}
    if not saved:
        return WindowPlan([(0, None)], backfill_id=resumed.backfill_id, requested_run_id=requested)
    full, position = _saved_windows(saved)
    stopped = full[position] if position < len(full) else None
    later = [(i, w) for i, w in enumerate(full) if i > position]
    return WindowPlan(
        [(position, stopped), *later],
        total=len(full),
        backfill_id=resumed.backfill_id,
        backfill={k: v for k, v in saved.items() if k != "index"},
        requested_run_id=requested,
    )


def resumes_by_itself(saved: DriverState | None, plan: WindowPlan, selected: set[str]) -> bool:
    """§18: the state file holds this orchestrator run id's invocation and it has work left: a node of
    the saved pipeline run that did not finish, or backfill windows after it. The same id asking for
    another backfill range (or none) is a configuration error, never a silent resume of the saved one."""
    requested = plan.requested_run_id
    if saved is None or requested is None:
        return False
    if requested not in (saved.pipeline_run_id, saved.args.get("requested_run_id")):
        return False
    unfinished = any(n not in saved.nodes or not saved.nodes[n].done for n in selected)
    backfill = saved.args.get("backfill") or {}
    windows_left = False
    if backfill:
        full, position = _saved_windows(backfill)
        windows_left = position + 1 < len(full)
    if not (unfinished or windows_left):
        return False  # that invocation finished: the same id runs again
    recorded = {k: v for k, v in backfill.items() if k != "index"}
    if recorded != plan.backfill:
        raise RegistryError(
            f"the state file holds the unfinished pipeline run {requested} with {_describe(recorded)}, "
            f"not {_describe(plan.backfill)}",
            hint="resume it with the same arguments, or use another --pipeline-run-id or --state-path",
        )
    return True


def _describe(backfill: dict[str, Any]) -> str:
    if not backfill:
        return "no backfill"
    return f"backfill {backfill['start']}..{backfill['end']} by {backfill.get('granularity', 'day')}"
