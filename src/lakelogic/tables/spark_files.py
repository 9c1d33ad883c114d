"""Plain Parquet / CSV / JSON directories with commit markers (no table log).

Commit protocol (one write):

1. Spark writes the new files into ``_lakelogic_staging/<token>/`` (invisible to readers: hidden dir).
2. A pending manifest ``_lakelogic_commits/pending-<token>.json`` lists the files to add and remove.
3. New files are renamed into the table, replaced files are deleted, the schema file is updated.
4. The marker ``_lakelogic_commits/<run_id>.json`` (and ``window-<digest>.json`` for pipeline
   runs) is written, then the pending manifest is removed.

A crash before step 2 leaves the table unchanged; a crash after it is rolled forward by the next write
(:meth:`FileTable.recover`). Readers may observe the renames of step 3 in progress: Parquet directories
have no atomic multi-file commit (use Delta or Iceberg when that matters).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

from lakelogic.tables.base import CommitResult
from lakelogic.tables.spark_batch import q
from lakelogic.tables.spark_filebase import DataFile, FileTableBase, Staged
from lakelogic.tables.spark_fs import footer_rows, partition_values
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

COMMITS_DIR = "_lakelogic_commits"
SCHEMA_FILE = "_lakelogic_schema.json"
_SUFFIX = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}


def _text_only(schema: StructType) -> StructType:
    """CSV/JSON sinks store arrays, maps and structs as JSON text (SEMANTICS §11)."""
    return StructType(
        [
            StructField(f.name, StringType(), True)
            if isinstance(f.dataType, (ArrayType, MapType, StructType))
            else f
            for f in schema.fields
        ]
    )


class FileTable(FileTableBase):
    """A Parquet, CSV or JSON directory (Hive-style partitions) with LakeLogic commit markers."""

    def __init__(self, spark: SparkSession, target: ResolvedTarget) -> None:
        super().__init__(spark, target)
        self.data_format = target.format
        self.file_suffix = _SUFFIX[target.format]
        self._pending: str | None = None

    # --- inspection ------------------------------------------------------------------------

    def _commits(self, name: str = "") -> str:
        return self.fs.child(f"{COMMITS_DIR}/{name}" if name else COMMITS_DIR)

    def exists(self) -> bool:
        return self.fs.exists(self.fs.child(SCHEMA_FILE)) or bool(self.current_files())

    def schema(self) -> StructType | None:
        schema_path = self.fs.child(SCHEMA_FILE)
        if self.fs.exists(schema_path):
            parsed = StructType.fromJson(json.loads(self.fs.read_text(schema_path)))
            return parsed
        if not self.current_files():
            return None
        reader = self.spark.read.format(self.data_format)
        for key, value in self.writer_options().items():
            reader = reader.option(key, value)
        if self.data_format == "parquet":
            reader = reader.option("mergeSchema", "true")
        elif self.data_format == "csv":
            reader = reader.option("inferSchema", "true")
        return reader.load(self.target.name).schema

    def current_files(self) -> list[DataFile]:
        return [
            DataFile(f.relative, f.path, f.size, partition_values(f.relative))
            for f in self.fs.list_files(self.target.name, suffix=self.file_suffix)
        ]

    def empty(self, stamp: CommitStamp) -> bool:
        """As for every path table, plus: the backfill-window markers go, since their rows went (a later
        backfill of those windows must write them again, DRIVER §8)."""
        emptied = super().empty(stamp)
        if emptied and self.fs.exists(self._commits()):
            for name in self.fs.list_dir(self._commits()):  # file names
                if name.startswith("window-any-"):
                    self.fs.delete(self._commits(name))
        return emptied

    def _marker_names(self, stamp: CommitStamp) -> list[str]:
        # SEMANTICS §13.4 names the run marker <run_id>.json (a table directory holds one role's commits)
        names = [f"{stamp.run_id}.json"]
        if stamp.window_key:
            names.append(f"window-{stamp.window_key}.json")
        if stamp.any_run_window_key:  # found again by a later backfill of the window (DRIVER §8)
            names.append(f"window-any-{stamp.any_run_window_key}.json")
        return names

    def already_committed(self, stamp: CommitStamp) -> bool:
        self.recover()
        legacy = f"run-{stamp.role}-{stamp.run_id}.json"  # written before session 9
        for name in [*self._marker_names(stamp), legacy]:
            path = self._commits(name)
            if self.fs.exists(path) and stamp.matches(json.loads(self.fs.read_text(path)).get("stamp") or {}):
                return True
        return False

    # --- writing ------------------------------------------------------------------------------

    def writer_options(self) -> dict[str, str]:
        if self.data_format == "csv":
            return {"header": "true"}
        return {}

    def prepare_frame(self, frame: DataFrame) -> DataFrame:
        if self.data_format == "parquet":
            return frame
        columns = [
            F.to_json(q(f.name)).alias(f.name)
            if isinstance(f.dataType, (ArrayType, MapType, StructType))
            else q(f.name)
            for f in frame.schema.fields
        ]
        return frame.select(*columns)

    def text_form(self, frame: DataFrame) -> DataFrame:
        """The batch as a CSV/JSON table stores it (nested values as JSON text), before it is compared
        with the stored schema: aligned first, an array met the stored string column and was cast with
        Spark's lossy ``[a, b]`` text on every write after the first."""
        return self.prepare_frame(frame)

    def discard(self, staged: Staged) -> None:
        if self._pending is None:  # a pending commit needs its staged files for roll-forward
            super().discard(staged)

    def commit(
        self,
        *,
        staged: Staged,
        removed: list[DataFile],
        schema: StructType,
        stamp: CommitStamp,
        spec: WriteSpec,
        rows_added: int | None,
    ) -> CommitResult:
        stored_schema = schema if self.data_format == "parquet" else _text_only(schema)
        token = uuid.uuid4().hex
        manifest = {
            "staging": staged.directory,
            "add": [f.relative for f in staged.files],
            "remove": [d.relative for d in removed],
            "schema": json.loads(stored_schema.json()),
            "markers": self._marker_names(stamp),
            "stamp": stamp.properties(),
            "created_at": datetime.now(UTC).isoformat(),
        }
        pending = self._commits(f"pending-{token}.json")
        self.fs.write_text(pending, json.dumps(manifest))
        self._pending = pending
        self._roll_forward(manifest)
        self.fs.delete(pending, recursive=False)
        self._pending = None
        rows = staged.rows
        if self.data_format == "parquet":
            counts = [footer_rows(f"{self.fs.root_uri}/{f.relative}") for f in staged.files]
            rows = sum(c or 0 for c in counts)
        return CommitResult(committed=True, snapshot=token, rows_added=rows)

    def _roll_forward(self, manifest: dict[str, object]) -> None:
        staging = str(manifest["staging"])
        added = [str(p) for p in manifest["add"]]  # type: ignore[attr-defined]
        for relative in added:  # new data first: a reader never sees the table without it
            source = f"{staging}/{relative}"
            if self.fs.exists(source):
                self.fs.rename(source, self.fs.child(relative))
        for relative in [str(p) for p in manifest["remove"]]:  # type: ignore[attr-defined]
            if relative not in added:
                self.fs.delete(self.fs.child(relative), recursive=False)
        self.fs.write_text(self.fs.child(SCHEMA_FILE), json.dumps(manifest["schema"]))
        body = json.dumps(
            {"stamp": manifest["stamp"], "files": added, "committed_at": manifest["created_at"]}
        )
        for name in [str(n) for n in manifest["markers"]]:  # type: ignore[attr-defined]
            self.fs.write_text(self._commits(name), body)
        self.fs.delete(staging)

    def recover(self) -> None:
        """Finish commits whose pending manifest survived a crash (their data files are complete)."""
        for name in sorted(self.fs.list_dir(self._commits())):
            if name.startswith("pending-") and name.endswith(".json"):
                path = self._commits(name)
                self._roll_forward(json.loads(self.fs.read_text(path)))
                self.fs.delete(path, recursive=False)
