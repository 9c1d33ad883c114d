"""File-system operations through Spark's Hadoop FileSystem, so paths work on local disk, HDFS, S3A, ABFS.

Only metadata moves through the driver (listings, renames, small marker files); data files are written
by Spark executors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FileStatus:
    path: str  # fully qualified URI as the file system reports it
    relative: str  # path relative to the listing root, '/'-separated
    size: int
    modification_time: int  # ms since epoch


class HadoopFS:
    """A thin wrapper over ``org.apache.hadoop.fs.FileSystem`` for one root path."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        context: Any = spark.sparkContext
        self._jvm = context._jvm
        self._conf = context._jsc.hadoopConfiguration()
        self.root = root.rstrip("/")
        self._root_path = self._path(self.root)
        self._fs = self._root_path.getFileSystem(self._conf)
        self._fs.setWriteChecksum(False)  # no .crc side files next to markers on local disk
        self.root_uri = str(self._fs.makeQualified(self._root_path).toString()).rstrip("/")

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def child(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def mkdirs(self, path: str) -> None:
        self._fs.mkdirs(self._path(path))

    def delete(self, path: str, *, recursive: bool = True) -> None:
        if self.exists(path):
            self._fs.delete(self._path(path), recursive)

    def rename(self, source: str, destination: str) -> None:
        parent = self._path(destination).getParent()
        if parent is not None and not self._fs.exists(parent):
            self._fs.mkdirs(parent)
        if not self._fs.rename(self._path(source), self._path(destination)):
            raise OSError(f"rename {source} -> {destination} failed")

    def list_files(self, path: str, *, suffix: str = "", skip_hidden: bool = True) -> list[FileStatus]:
        """Recursive listing of regular files under ``path`` (hidden ``_``/``.`` entries skipped)."""
        if not self.exists(path):
            return []
        base = str(self._fs.makeQualified(self._path(path)).toString()).rstrip("/")
        found: list[FileStatus] = []
        iterator = self._fs.listFiles(self._path(path), True)
        while iterator.hasNext():
            status = iterator.next()
            uri = str(status.getPath().toString())
            relative = uri[len(base) :].lstrip("/")
            parts = relative.split("/")
            if skip_hidden and any(p.startswith(("_", ".")) for p in parts):
                continue
            if suffix and not relative.endswith(suffix):
                continue
            found.append(FileStatus(uri, relative, int(status.getLen()), int(status.getModificationTime())))
        return found

    def list_dir(self, path: str) -> list[str]:
        if not self.exists(path):
            return []
        return [str(s.getPath().getName()) for s in self._fs.listStatus(self._path(path))]

    def write_text(self, path: str, text: str) -> None:
        """Write a small file atomically: write ``.tmp`` then rename."""
        tmp = f"{path}.tmp"
        stream = self._fs.create(self._path(tmp), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if self.exists(path):
            self._fs.delete(self._path(path), False)
        self.rename(tmp, path)

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._path(path))
        try:
            reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(stream, "UTF-8"))
            lines = []
            line = reader.readLine()
            while line is not None:
                lines.append(line)
                line = reader.readLine()
            return "\n".join(lines)
        finally:
            stream.close()


def partition_values(relative: str) -> dict[str, str | None]:
    """Hive-style ``k=v`` directory segments of a relative file path."""
    values: dict[str, str | None] = {}
    for segment in relative.split("/")[:-1]:
        if "=" in segment:
            key, _, value = segment.partition("=")
            decoded = unquote(value)
            values[unquote(key)] = None if decoded == "__HIVE_DEFAULT_PARTITION__" else decoded
    return values


def footer(uri: str) -> pq.FileMetaData | None:
    """The Parquet footer of a file (metadata only), or None when it cannot be read."""
    try:
        if uri.startswith("file:"):
            return pq.read_metadata(uri.removeprefix("file:").replace("///", "/", 1))
        from pyarrow import fs as pafs

        filesystem, path = pafs.FileSystem.from_uri(uri)
        return pq.read_metadata(path, filesystem=filesystem)
    except (OSError, ValueError, pa.ArrowException):
        return None  # stats are optional in Delta; readers then scan the file


def footer_rows(uri: str) -> int | None:
    """Row count from the Parquet footer (metadata only)."""
    metadata = footer(uri)
    return int(metadata.num_rows) if metadata is not None else None
