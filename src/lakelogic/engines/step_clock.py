"""Seconds per execution step for the run report (SEMANTICS §8, §22 ``timings``).

Steps nest (the source read is timed inside the evaluation that plans every step), so the clock keeps
*exclusive* time: while an inner step runs, the outer one is paused, and the seconds of all steps add up
to the time the run spent in any of them. The current step is also what a failure reports as
``error.step``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lakelogic.report import TIMING_STEPS


@dataclass
class StepClock:
    step: str = "compile"
    timings: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TIMING_STEPS, 0.0))
    _open: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        now = time.perf_counter()
        if self._open:
            outer, since = self._open[-1]
            self._add(outer, now - since)
        self._open.append((name, now))
        self.step = name
        failed = False
        try:
            yield
        except BaseException:
            failed = True  # the innermost step that failed stays the reported one
            raise
        finally:
            _, since = self._open.pop()
            now = time.perf_counter()
            self._add(name, now - since)
            if self._open:
                outer, _ = self._open[-1]
                self._open[-1] = (outer, now)
                if not failed:
                    self.step = outer

    def _add(self, name: str, seconds: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + seconds, 4)
