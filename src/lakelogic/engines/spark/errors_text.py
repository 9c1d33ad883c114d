"""Readable one-line messages for errors raised inside Spark (Py4J/JVM), for the CLI and reports."""

from __future__ import annotations

import re

_FRAME = re.compile(r"^\s*(at \S|\.\.\. \d+ more)")
_PY4J_CALL = re.compile(r"\s*An error occurred while calling \S+\.?")


def clean_error_message(exc: BaseException) -> str:
    """The first meaningful line of an error, without JVM stack frames."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text = str(java.toString())
        except Exception:  # noqa: BLE001 - the JVM may be gone; fall back to the Python text
            text = str(exc)
    else:
        text = str(exc)
    lines = [ln.strip() for ln in without_jvm_frames(text).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    return first if first.startswith(type(exc).__name__) else f"{type(exc).__name__}: {first}"


def without_jvm_frames(text: str) -> str:
    """``text`` without JVM stack frames: a message that wraps a Java exception keeps its own first line
    and the root cause (the last ``Caused by``), not the ~100 frame lines Py4J carries along."""
    lines = text.splitlines()
    if not any(_FRAME.match(line) for line in lines):
        return text
    kept = [ln.strip() for ln in lines if ln.strip() and not _FRAME.match(ln)]
    kept = [ln for ln in kept if ln != "Driver stacktrace:"]
    causes = [ln.removeprefix("Caused by: ") for ln in kept if ln.startswith("Caused by: ")]
    head = _PY4J_CALL.sub("", kept[0]).strip()
    root = causes[-1] if causes else (kept[1].lstrip(": ") if len(kept) > 1 else "")
    return f"{head} {root}".strip()
