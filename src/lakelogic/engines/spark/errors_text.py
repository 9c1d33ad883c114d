"""Readable one-line messages for errors raised inside Spark (Py4J/JVM), for the CLI and reports."""

from __future__ import annotations


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
    lines = [
        ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.strip().startswith("at ")
    ]
    first = lines[0] if lines else type(exc).__name__
    return first if first.startswith(type(exc).__name__) else f"{type(exc).__name__}: {first}"
