"""The ``manifest`` watermark strategy (SEMANTICS §3.4): a file source reads the files its manifest does not
list yet, and the files a run took are added once the run has committed. No Spark here.

The manifest is a small JSON document, ``{"processed": [<path>, ...], "last_updated": <ISO-8601 UTC>}``.
Files are named by their absolute local path, so a file delivered again under the same name is not read
again (rename it to have it read). Local manifests are replaced atomically (``os.replace``); remote ones go
through the engine's file system (``lakelogic.engines.spark.manifest_store``).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lakelogic.errors import SourceError

MANIFEST_STRATEGY = "manifest"
# Where a manifest is not a local file (Databricks' `dbfs:/` has a single slash).
REMOTE_PREFIXES = ("dbfs:/",)
MANIFESTS_FOLDER = "manifests"


def normalized(path: str) -> str:
    """One spelling per local file: absolute, without a ``file:`` scheme."""
    bare = path.removeprefix("file://") if path.startswith("file://") else path.removeprefix("file:")
    return os.path.abspath(bare)


@dataclass(frozen=True)
class FileManifest:
    """Where the manifest lives and the files it lists (normalized paths)."""

    location: str
    processed: frozenset[str] = frozenset()

    def unprocessed(self, files: Sequence[str]) -> list[str]:
        """``files`` (as listed, order kept) that the manifest does not list."""
        return [f for f in files if normalized(f) not in self.processed]

    def with_files(self, files: Iterable[str]) -> FileManifest:
        return FileManifest(self.location, self.processed | {normalized(f) for f in files})

    def to_json(self, now: datetime) -> str:
        document = {
            "processed": sorted(self.processed),
            "last_updated": now.astimezone(UTC).isoformat(),
        }
        return json.dumps(document, indent=1) + "\n"


def parse_manifest(location: str, text: str) -> FileManifest:
    """The manifest stored at ``location``; a document of another shape is an error naming it."""
    try:
        # an empty file is no manifest: reading it as "nothing processed" would read every file again
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            f"manifest {location} is not valid JSON: {exc}",
            hint='expected {"processed": [<file path>, ...], "last_updated": "<timestamp>"}',
        ) from exc
    processed = document.get("processed", []) if isinstance(document, dict) else None
    if not isinstance(processed, list) or not all(isinstance(p, str) for p in processed):
        raise SourceError(
            f"manifest {location}: 'processed' must be a list of file paths",
            hint='expected {"processed": [<file path>, ...], "last_updated": "<timestamp>"}',
        )
    return FileManifest(location, frozenset(normalized(p) for p in processed))


def manifest_location(
    declared: str | None, *, contract_name: str, contract_dir: Path | None, home: Path
) -> str:
    """``source.manifest_path`` (relative to the contract's folder), else ``<home>/manifests/<name>.json``
    (``home``: ``LAKELOGIC_HOME``, else the project's ``.lakelogic``; ``contract_name``: the node id,
    ``<layer>.<contract>``, which the file name spells with other characters replaced by ``_``)."""
    if declared:
        if is_remote(declared) or declared.startswith("file:") or os.path.isabs(declared):
            return declared
        return str((contract_dir or Path.cwd()) / declared)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in contract_name) or "contract"
    return str(home / MANIFESTS_FOLDER / f"{safe}.json")


def is_remote(location: str) -> bool:
    return location.startswith(REMOTE_PREFIXES) or ("://" in location and not location.startswith("file:"))


def read_local(location: str) -> FileManifest:
    """The manifest at a local ``location``; none there yet = nothing processed."""
    path = Path(normalized(location))
    if not path.exists():
        return FileManifest(location)
    return parse_manifest(location, path.read_text(encoding="utf-8"))


def write_local(manifest: FileManifest, now: datetime) -> None:
    """Replace the local manifest atomically and durably: a crash leaves the old one or the new one."""
    path = Path(normalized(manifest.location))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")  # one per writer, threads included
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(manifest.to_json(now))
        handle.flush()
        os.fsync(handle.fileno())  # the data is on disk before the rename makes it the manifest
    os.replace(temporary, path)
