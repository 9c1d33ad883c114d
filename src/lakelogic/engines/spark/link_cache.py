"""The reference cache of a pipeline run (DRIVER §12): each link is loaded once per pipeline run and
reused by later contracts, keyed by what decides its rows (resolved location, format, columns, filter,
query). Cached frames are persisted; a link whose location is the target of a contract that commits
later in the same pipeline run is dropped at that commit; everything is released when the pipeline run
ends. Nothing is reused across pipeline runs.

Contracts run on several driver threads at once, so the cache is guarded by a lock; two contracts asking
for the same link at the same time load it once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from lakelogic.plan.steps import LoadLink

LinkKey = tuple[str, str, tuple[str, ...], str, str]


def link_key(step: LoadLink) -> LinkKey:
    location = (step.table or step.path or "").removeprefix("table:").rstrip("/")
    return (
        location,
        (step.type or "").lower(),
        tuple(step.columns or ()),
        step.filter or "",
        step.query or "",
    )


def _same_location(a: str, b: str) -> bool:
    def norm(x: str) -> str:
        return x.removeprefix("file://").removeprefix("table:").rstrip("/").lower()

    return norm(a) == norm(b)


@dataclass
class LinkCache:
    """Persisted link frames of one pipeline run. ``hits``/``loads`` count for the run summary."""

    frames: dict[LinkKey, DataFrame] = field(default_factory=dict)
    hits: int = 0
    loads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, step: LoadLink, load: Callable[[LoadLink], DataFrame]) -> DataFrame:
        key = link_key(step)
        with self._lock:
            cached = self.frames.get(key)
            if cached is not None:
                self.hits += 1
                return cached
            frame = load(step).persist(StorageLevel.MEMORY_AND_DISK)
            self.frames[key] = frame
            self.loads += 1
            return frame

    def invalidate(self, location: str) -> int:
        """Drop the links read from ``location`` (a target that just committed); how many were dropped."""
        with self._lock:
            stale = [k for k in self.frames if _same_location(k[0], location)]
            for key in stale:
                self.frames.pop(key).unpersist()
            return len(stale)

    def release(self) -> None:
        with self._lock:
            for frame in self.frames.values():
                frame.unpersist()
            self.frames.clear()
