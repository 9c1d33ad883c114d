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


def normal_location(location: str) -> str:
    """One spelling per location: catalog tables fully qualified (as a commit reports its target) and
    case-insensitive, as catalog identifiers are; paths without ``file://`` or a trailing slash, with their
    case kept (``Codes.csv`` and ``codes.csv`` are two files on Linux and object stores)."""
    from lakelogic.tables.target import is_table_name, qualify_table

    text = location.strip()
    if is_table_name(text):
        return qualify_table(text).lower()
    return text.removeprefix("file://").rstrip("/")


def link_key(step: LoadLink) -> LinkKey:
    return (
        normal_location(step.table or step.path or ""),
        (step.type or "").lower(),
        tuple(step.columns or ()),
        step.filter or "",
        step.query or "",
    )


@dataclass
class LinkCache:
    """Persisted link frames of one pipeline run; ``hits``/``loads`` say how much the cache saved."""

    frames: dict[LinkKey, DataFrame] = field(default_factory=dict)
    hits: int = 0
    loads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # one lock per key: a contract loading one link does not hold up another contract's other links
    _loading: dict[LinkKey, threading.Lock] = field(default_factory=dict, repr=False)

    def get(self, step: LoadLink, load: Callable[[LoadLink], DataFrame]) -> DataFrame:
        key = link_key(step)
        with self._lock:
            cached = self.frames.get(key)
            if cached is not None:
                self.hits += 1
                return cached
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                cached = self.frames.get(key)
                if cached is not None:  # loaded by another contract while this one waited
                    self.hits += 1
                    return cached
            frame = load(step).persist(StorageLevel.MEMORY_AND_DISK)
            with self._lock:
                self.frames[key] = frame
                self.loads += 1
            return frame

    def invalidate(self, location: str) -> int:
        """Drop the links read from ``location`` (a target that just committed); how many were dropped."""
        where = normal_location(location)
        with self._lock:
            stale = [k for k in self.frames if k[0] == where]
            for key in stale:
                self.frames.pop(key).unpersist()
            return len(stale)

    def release(self) -> None:
        with self._lock:
            for frame in self.frames.values():
                frame.unpersist()
            self.frames.clear()
            self._loading.clear()
