"""Driver state file and resume (DRIVER §14).

The state is rewritten atomically (temp file + rename) after every contract finishes, so a killed driver
leaves the last consistent picture. ``--resume`` reuses the saved pipeline run id, ``as_of`` and each node's
window; nodes that already succeeded are recorded ``skipped`` (``already_succeeded``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lakelogic.driver.gates import Outcome
from lakelogic.driver.windows import Window
from lakelogic.errors import RegistryError
from lakelogic.runlog.summary import atomic_write_json

STATE_VERSION = 1
DONE_STATUSES = frozenset({"succeeded", "partial", "no_new_data"})


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass
class SavedNode:
    status: str
    run_id: str | None
    window: Window
    committed: bool = False
    gated: bool = False
    gate_reason: str | None = None

    @property
    def done(self) -> bool:
        return self.status in DONE_STATUSES


@dataclass
class DriverState:
    path: Path
    pipeline_run_id: str
    as_of: datetime
    backfill_id: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, SavedNode] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "pipeline_run_id": self.pipeline_run_id,
            "backfill_id": self.backfill_id,
            "as_of": self.as_of.isoformat(),
            "args": self.args,
            "nodes": {
                node_id: {
                    "status": saved.status,
                    "run_id": saved.run_id,
                    "window": saved.window.to_dict() | {"run_mode": saved.window.run_mode},
                    "committed": saved.committed,
                    "gated": saved.gated,
                    "gate_reason": saved.gate_reason,
                }
                for node_id, saved in sorted(self.nodes.items())
            },
        }

    def record(self, outcome: Outcome, window: Window) -> None:
        """Store one finished node and rewrite the file atomically."""
        if outcome.skip_reason == "already_succeeded":
            return  # keep the original success (its run id and window)
        report = outcome.report
        committed = bool(report and report.materialization and report.materialization.committed)
        with self._lock:
            self.nodes[outcome.node_id] = SavedNode(
                status=outcome.status,
                run_id=report.run_id if report else None,
                window=window,
                committed=committed,
                gated=outcome.gated,
                gate_reason=outcome.gate_reason,
            )
            atomic_write_json(self.path, self.to_dict())

    def record_start(self, node_id: str, run_id: str, window: Window) -> None:
        """Mark a node in flight with its run id, so a crash leaves the run id to resume with."""
        with self._lock:
            self.nodes[node_id] = SavedNode(status="running", run_id=run_id, window=window)
            atomic_write_json(self.path, self.to_dict())

    def save(self) -> None:
        with self._lock:
            atomic_write_json(self.path, self.to_dict())


def load_state(path: Path) -> DriverState:
    """Read a state file written by :class:`DriverState`; a missing or foreign file is an error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"--resume: no state file at {path}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise RegistryError(f"--resume: cannot read state file {path}: {exc}") from None
    if data.get("version") != STATE_VERSION:
        raise RegistryError(
            f"{path}: unsupported state version {data.get('version')!r}; allowed: {STATE_VERSION}"
        )
    nodes = {}
    for node_id, raw in (data.get("nodes") or {}).items():
        w = raw.get("window") or {}
        window = Window(
            w.get("label") or "full",
            _dt(w.get("start")),
            _dt(w.get("end")),
            w.get("reason"),
            w.get("run_mode") or "normal",
            cursor_field=w.get("cursor_field"),
            cursor=w.get("cursor"),
        )
        nodes[node_id] = SavedNode(
            status=raw.get("status", ""),
            run_id=raw.get("run_id"),
            window=window,
            committed=bool(raw.get("committed")),
            gated=bool(raw.get("gated")),
            gate_reason=raw.get("gate_reason"),
        )
    as_of = _dt(data.get("as_of"))
    if as_of is None or not data.get("pipeline_run_id"):
        raise RegistryError(f"{path}: state file lacks pipeline_run_id or as_of")
    return DriverState(
        path=path,
        pipeline_run_id=data["pipeline_run_id"],
        as_of=as_of,
        backfill_id=data.get("backfill_id"),
        args=data.get("args") or {},
        nodes=nodes,
    )
