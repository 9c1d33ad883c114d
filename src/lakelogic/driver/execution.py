"""What a contract run is given and returns, and which failures are retried (DRIVER §13).

Shared by the scheduler (:mod:`lakelogic.driver.runner`) and every contract runner implementation.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from tenacity import RetryCallState

from lakelogic.driver.gates import Outcome
from lakelogic.driver.nodes import Node
from lakelogic.driver.windows import Window, WindowSpec
from lakelogic.errors import CommitConflictError, LakeLogicError
from lakelogic.report import RunReport


@dataclass(frozen=True)
class RunRequest:
    """Everything a contract runner needs for one attempt."""

    node: Node
    run_id: str
    pipeline_run_id: str
    window: Window
    as_of: datetime
    attempt: int = 1
    # the driver's run-log ``committing`` row, written by the run just before its target commit
    before_commit: Callable[[RunReport], None] | None = None


ContractRunner = Callable[[RunRequest], RunReport]
EventSink = Callable[[str, str, Outcome | None], None]  # (node id, state, outcome when finished)


@dataclass
class DriverOptions:
    max_workers: int = 4
    fail_fast: bool = False
    max_quarantine_ratio: float | None = None
    retries: int = 0
    retry_backoff: float = 1.0
    retry_max_delay: float = 60.0
    timeout_minutes: float | None = None
    max_consecutive_failures: int = 0
    window: WindowSpec = field(default_factory=WindowSpec)
    window_override: Window | None = None  # a backfill window, fixed for every contract
    environment: str | None = None
    engine: str = "spark"
    backfill_id: str | None = None
    overrides: tuple[str, ...] = ()


@dataclass
class PipelineResult:
    pipeline_run_id: str
    as_of: datetime
    started_at: datetime
    finished_at: datetime
    outcomes: dict[str, Outcome]
    layer_seconds: dict[str, float]
    windows: dict[str, Window]
    circuit_open: bool = False

    def window_label(self, default: str) -> str:
        """The label of this pipeline run's windows (§1: ``incremental``, ``full``, ``backfill_…``): the
        one they share, ``mixed`` when contracts ran in different ones, ``default`` when none ran."""
        labels = {w.label for w in self.windows.values()}
        if not labels:
            return default
        return labels.pop() if len(labels) == 1 else "mixed"

    @property
    def exit_code(self) -> int:
        statuses = [o.status for o in self.outcomes.values()]
        if "failed" in statuses or self.circuit_open:
            return 1
        if "awaiting_approval" in statuses:
            return 3
        return 0

    @property
    def status(self) -> str:
        return {0: "succeeded", 1: "failed", 3: "awaiting_approval"}[self.exit_code]


# --- transient errors and retries ---------------------------------------------------------------

_TRANSIENT_MARKERS = (
    "ExecutorLostFailure",
    "CommitFailedException",
    "ConcurrentModification",
    "Connection reset",
    "Too Many Requests",
    " 429",
    " 503",
    " 502",
    "timed out",
)


def is_transient(exc: BaseException) -> bool:
    """Only transient failures are retried (§13); LakeLogic contract, plan and run-policy errors never."""
    if isinstance(exc, LakeLogicError) and not isinstance(exc, ConnectionError):
        return isinstance(exc, CommitConflictError)
    if isinstance(exc, PermissionError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError | OSError):
        return True
    return any(marker in str(exc) for marker in _TRANSIENT_MARKERS)


def backoff(options: DriverOptions) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        n = state.attempt_number
        return min(options.retry_max_delay, options.retry_backoff * 2 ** (n - 1)) * random.uniform(0.5, 1.0)

    return wait


def error_type(exc: BaseException) -> str:
    return getattr(exc, "error_type", None) or type(exc).__name__
