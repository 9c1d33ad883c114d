"""Loading and saving a ``manifest`` strategy's file manifest (SEMANTICS §3.4; lakelogic.sources.manifest):
local manifests with an atomic file replace, remote ones through Spark's Hadoop file system."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from lakelogic.errors import SourceError
from lakelogic.plan.steps import ReadSource
from lakelogic.runlog.store import lakelogic_home
from lakelogic.sources.manifest import (
    MANIFEST_STRATEGY,
    FileManifest,
    is_remote,
    manifest_location,
    normalized,
    parse_manifest,
    read_local,
    write_local,
)
from lakelogic.sources.windows import INCREMENTAL_MODES

_FILE_SOURCES = {"landing", "sftp", "file", "files"}
_LOCKS: dict[str, threading.Lock] = {}


def uses_manifest(step: ReadSource | None) -> bool:
    """An incremental file source whose watermark strategy is ``manifest``."""
    return (
        step is not None
        and step.source_type.lower() in _FILE_SOURCES
        and step.load_mode.lower() in INCREMENTAL_MODES
        and str(step.settings.get("watermark_strategy") or "").lower() == MANIFEST_STRATEGY
    )


def forget_manifest(
    spark: SparkSession, source: Any, *, contract_name: str, contract_dir: Path | None
) -> str | None:
    """Delete the manifest of a contract ``source`` (the model's block) that uses the ``manifest``
    strategy, so its next run reads every file again: what a reset (DRIVER §17) means for it. Returns the
    location when a manifest was there."""
    strategy = str(getattr(source, "watermark_strategy", "") or "").lower()
    mode = str(getattr(source, "load_mode", "") or "").lower()
    kind = str(getattr(source, "type", "") or "").lower()
    if strategy != MANIFEST_STRATEGY or mode not in INCREMENTAL_MODES or kind not in _FILE_SOURCES:
        return None
    declared = getattr(source, "manifest_path", None)
    location = manifest_location(
        str(declared) if declared else None,
        contract_name=contract_name,
        contract_dir=contract_dir,
        home=lakelogic_home(contract_dir),
    )
    try:
        with _LOCKS.setdefault(location, threading.Lock()):
            if not is_remote(location):
                path = Path(normalized(location))
                if not path.exists():
                    return None
                path.unlink()
                return location
            fs = _filesystem(spark, location)
            if not fs.exists(location):
                return None
            fs.delete(location, recursive=False)
            return location
    except (OSError, Py4JJavaError) as exc:
        raise SourceError(f"the manifest {location} could not be removed: {exc}") from exc


def load_manifest(
    spark: SparkSession, step: ReadSource, *, contract_name: str, contract_dir: Path | None
) -> FileManifest:
    declared = step.settings.get("manifest_path")
    location = manifest_location(
        str(declared) if declared else None,
        contract_name=contract_name,
        contract_dir=contract_dir,
        home=lakelogic_home(contract_dir),
    )
    return _read(spark, location)


def _read(spark: SparkSession, location: str) -> FileManifest:
    if not is_remote(location):
        return read_local(location)
    fs = _filesystem(spark, location)
    if not fs.exists(location):
        # the file system's replace is delete + rename: a crash between them leaves only the new text
        leftover = f"{location}.tmp"
        if fs.exists(leftover):
            return parse_manifest(location, fs.read_text(leftover))
        return FileManifest(location)
    return parse_manifest(location, fs.read_text(location))


def save_manifest(spark: SparkSession, location: str, files: list[str], now: datetime) -> None:
    """Add ``files`` to the manifest at ``location``: re-read under a lock, merged, replaced. Contracts of
    one process (the driver's threads) sharing a manifest never drop each other's files; writers in other
    processes are not coordinated (one manifest per contract avoids them: the default)."""
    try:
        with _LOCKS.setdefault(location, threading.Lock()):
            stored = _read(spark, location)
            updated = stored.with_files(files)  # what another contract added since stays
            if not is_remote(location):
                write_local(updated, now)
                return
            _filesystem(spark, location).write_text(location, updated.to_json(now))
    except (OSError, Py4JJavaError) as exc:
        raise SourceError(
            f"the run committed, but its manifest {location} could not be written: {exc}",
            hint="the next run reads this run's files again unless the manifest lists them",
        ) from exc


def _filesystem(spark: SparkSession, location: str) -> Any:
    from lakelogic.tables.spark_fs import HadoopFS

    return HadoopFS(spark, location.rsplit("/", 1)[0])
