"""Post-ingestion cleanup of source files (SEMANTICS §17): delete or archive the files a committed run read.

Runs after the target and quarantine commits, on the files of this run only. Each file is handled on its
own and every failure is collected, so one unreadable file does not leave the others half-done; the
caller decides whether failures fail the run (``cleanup_is_blocking``) or become a warning.
Local files only (plain paths and ``file:`` URIs): the archive move must be an atomic rename, which
object stores do not offer.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_GLOB_CHARS = "*?["


@dataclass
class CleanupResult:
    done: list[str] = field(default_factory=list)  # files deleted, or moved (their new paths)
    failures: list[str] = field(default_factory=list)  # "path: reason"


def clean_up_files(
    files: Sequence[str], *, action: str, root: str, archive_path: str | None, run_id: str
) -> CleanupResult:
    """Delete the files, or move each under ``archive_path`` at its path relative to ``root``.

    An archive name that is taken gets the run id before its suffix (``a.csv`` -> ``a.<run id>.csv``),
    so a re-delivered file never overwrites an earlier archived copy.
    """
    result = CleanupResult()
    base = _root_dir(root)
    for name in files:
        path = _local(name)
        try:
            if path is None:
                raise OSError("not a local file (object-store cleanup is not supported)")
            if action == "delete":
                path.unlink()
                result.done.append(str(path))
            else:
                if archive_path is None:  # the compiler requires it; a direct caller might not
                    raise OSError("archive needs archive_path")
                archive_root = Path(_local(archive_path) or archive_path)
                destination = _free_name(archive_root / _relative(path, base), run_id)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(path), str(destination))
                result.done.append(str(destination))
        except OSError as exc:
            result.failures.append(f"{name}: {exc.strerror or exc}")
    return result


def _local(name: str) -> Path | None:
    if name.startswith("file://"):
        return Path(name[len("file://") :])
    if name.startswith("file:"):
        return Path(name[len("file:") :])
    if "://" in name:
        return None
    return Path(name)


def _root_dir(root: str) -> Path:
    """The directory relative paths start from: the root itself, its folder for a single file, or the
    part of a glob before its first wildcard."""
    local = _local(root) or Path(root)
    text = str(local)
    if any(ch in text for ch in _GLOB_CHARS):
        prefix = text[: min(text.index(ch) for ch in _GLOB_CHARS if ch in text)]
        return Path(os.path.dirname(prefix) or ".")
    return local.parent if local.is_file() else local


def _relative(path: Path, base: Path) -> Path:
    try:
        return path.resolve().relative_to(base.resolve())
    except ValueError:
        return Path(path.name)  # outside the root (an explicit file list): keep the name only


def _free_name(destination: Path, run_id: str) -> Path:
    if not destination.exists():
        return destination
    suffix = "".join(destination.suffixes[-1:])
    stem = destination.name[: len(destination.name) - len(suffix)] if suffix else destination.name
    candidate = destination.with_name(f"{stem}.{run_id}{suffix}")
    extra = 1
    while candidate.exists():  # the same run archiving the same name twice: number the copies
        candidate = destination.with_name(f"{stem}.{run_id}.{extra}{suffix}")
        extra += 1
    return candidate


__all__ = ["CleanupResult", "clean_up_files"]
