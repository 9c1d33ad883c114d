"""Recognise optimistic-concurrency conflicts among the errors a table write raises.

Another writer committing to the same table while a run writes is not a defect of the run: the run's
commit was refused, nothing of it is visible, and running it again recomputes on the new state (the
commit markers keep that exactly-once). Such failures become :class:`CommitConflictError`, which the
driver retries (DRIVER.md §13). The markers are the messages and exception names the formats use.
"""

from __future__ import annotations

from lakelogic.errors import CommitConflictError

# Iceberg: a fast-forward after main moved, a refused metadata swap, a failed isolation check.
# Delta (Spark): the Concurrent*Exception family. delta-rs: a commit whose version was already taken.
_MARKERS = (
    "Cannot fast-forward",
    "CommitFailedException",
    "Found conflicting files",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "CommitFailedError",
    "version already exists",
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def as_conflict(exc: BaseException, target: str) -> CommitConflictError | None:
    """A CommitConflictError for ``exc`` when it (or what caused it) is a concurrent-commit refusal."""
    for error in _chain(exc):
        text = f"{type(error).__name__}: {error}"
        marker = next((m for m in _MARKERS if m in text), None)
        if marker is not None:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return CommitConflictError(
                f"another writer committed to {target} during this run ({first}); nothing of this run "
                "was committed",
                hint="run it again (the driver retries commit conflicts with --retries)",
            )
    return None
