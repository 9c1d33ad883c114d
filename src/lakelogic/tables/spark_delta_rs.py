"""Delta tables written by Spark executors and committed with delta-rs (no delta-spark needed).

Spark writes Parquet data files into the table directory (via staging, so a crash leaves only
unreferenced files that ``VACUUM`` removes); the driver then commits them with one delta-rs write
transaction whose ``add``/``remove`` actions are built from file metadata (size, modification time,
partition values from the Hive-style directories, ``numRecords`` from the Parquet footer). No data rows
pass through the driver. The commit info carries the ``lakelogic.*`` stamp.

Cost: merge/SCD2/reprocess rewrite the files that hold affected keys (copy-on-write); see
docs/materialization.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from lakelogic.errors import CommitError, MissingDependencyError, UnsupportedError
from lakelogic.tables.base import CommitResult
from lakelogic.tables.delta_files import delta_file, file_commit_blocker, files_blocker, spark_decodes
from lakelogic.tables.delta_stats import file_stats
from lakelogic.tables.file_ranges import top_level_ranges
from lakelogic.tables.spark_evolution import EvolutionPlan
from lakelogic.tables.spark_filebase import DataFile, FileTableBase, Staged
from lakelogic.tables.spark_fs import FileStatus, footer, partition_values
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp, committed_in

TIMESTAMP_CONF = "spark.sql.parquet.outputTimestampType"


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "writing Delta without delta-spark needs the deltalake package", hint="pip install deltalake"
        ) from exc
    return deltalake


class DeltaRsTable(FileTableBase):
    """A Delta table at a path, committed with delta-rs."""

    data_format = "parquet"
    file_suffix = ".parquet"

    # The version a keyed write (merge, SCD2) read its stored rows at. Its change set is only right on
    # that version, so the commit is made on top of it and refuses to be rebased: another writer's commit
    # in between is a CommitConflictError (retried by the driver), never a merge applied to rows this run
    # did not see (two writers inserting the same new key would both succeed). Cleared by the commit.
    _read_version: int | None = None

    def _table(self) -> Any:
        table = _deltalake().DeltaTable(self.target.name, version=self._read_version)
        self._refuse(file_commit_blocker(table))
        return table

    def _refuse(self, blocker: str | None) -> None:
        """Files written by Spark and committed as plain add/remove actions would break such a table
        (e.g. column mapping: the files' column names are not the physical ones, so every reader sees
        NULLs), or its stored rows would be read wrongly: refused before anything is written."""
        if blocker is not None:
            raise UnsupportedError(
                f"the Delta table {self.target.name} has {blocker}, which LakeLogic's delta-rs writer "
                "(Spark-written files committed by delta-rs) cannot honour",
                hint="write it from a Spark session with Delta (delta-spark or Databricks)",
            )

    def read(self) -> DataFrame:
        self._pin_read_version()
        return super().read()

    def read_files(self, files: list[DataFile], schema: StructType | None = None) -> DataFrame:
        # stored rows are read back by Spark's partition discovery, which misreads some values delta-rs
        # writes (escaped non-ASCII bytes, empty strings): refused before a merge acts on wrong keys
        misread = next((f.relative for f in files if not spark_decodes(unquote(f.relative))), None)
        if misread is not None:
            self._refuse(f"partition values Spark's partition discovery misreads ({unquote(misread)})")
        # a file's URI is percent-encoded (the log's path is a URI); Spark takes the name on storage
        return super().read_files([replace(f, uri=unquote(f.uri)) for f in files], schema)

    def read_in_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> DataFrame:
        self._pin_read_version()
        return super().read_in_range(bounds)

    def _pin_read_version(self) -> None:
        if self._read_version is None and self.exists():
            self._read_version = int(_deltalake().DeltaTable(self.target.name).version())

    def exists(self) -> bool:
        return bool(_deltalake().DeltaTable.is_deltatable(self.target.name))

    def version(self) -> str:
        return str(self._table().version())

    def schema(self) -> StructType | None:
        if not self.exists():
            return None
        return from_arrow_schema(pa.schema(self._table().schema().to_arrow()))

    def current_files(self) -> list[DataFile]:
        table = self._table()
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        partition_cols = list(table.metadata().partition_columns)
        self._refuse(
            files_blocker(actions, [delta_file(str(a["path"]), tuple(partition_cols)) for a in actions])
        )
        fields = pa.schema(table.schema().to_arrow())
        nested = [f.name for f in fields if pa.types.is_nested(f.type)]
        flat = [f.name for f in fields if not pa.types.is_nested(f.type)]
        files = []
        for action in actions:
            relative = str(action["path"])
            values = {c: action.get(f"partition.{c}") for c in partition_cols}
            uri = f"{self.fs.root_uri}/{relative}"
            files.append(
                DataFile(
                    relative,
                    uri,
                    int(action["size_bytes"]),
                    {k: _text(v) for k, v in values.items()},
                    top_level_ranges(action, flat, nested),
                )
            )
        return files

    def already_committed(self, stamp: CommitStamp) -> bool:
        if not self.exists():
            return False
        return committed_in(self._table().history(), stamp)  # newest first

    _replace_schema = False

    def overwrite(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, partitions: bool, replace_schema: bool
    ) -> CommitResult:
        if not (replace_schema and self.exists()):
            return super().overwrite(frame, stamp, spec, partitions=partitions, replace_schema=replace_schema)
        self._replace_schema = True
        try:
            return self._commit_frame(frame, [], stamp, spec)
        finally:
            self._replace_schema = False

    def evolve(self, plan: EvolutionPlan, new_schema: StructType) -> None:
        """Add new columns with delta-rs (a metadata-only commit before the data commit, not stamped)."""
        if not plan.added:
            return
        deltalake = _deltalake()
        arrow = to_arrow_schema(StructType(list(plan.added)))
        fields = list(deltalake.Schema.from_arrow(arrow).fields)
        if self._read_version is None:
            self._table().alter.add_columns(fields)
            return
        # already read (a merge's unknown-member check): this commit must follow that version directly,
        # and the data commit then follows this one
        from deltalake.transaction import CommitProperties

        self._table().alter.add_columns(fields, commit_properties=CommitProperties(max_commit_retries=0))
        self._read_version += 1

    def prepare_frame(self, frame: DataFrame) -> DataFrame:
        # Delta stores timestamps as INT64 microseconds; Spark's default INT96 is not readable as Delta.
        if self.spark.conf.get(TIMESTAMP_CONF, "INT96") != "TIMESTAMP_MICROS":
            self.spark.conf.set(TIMESTAMP_CONF, "TIMESTAMP_MICROS")
        return frame

    def _move_into_table(self, staged: Staged) -> list[FileStatus]:
        moved = []
        for f in staged.files:
            destination = self.fs.child(f.relative)
            self.fs.rename(f.path, destination)
            moved.append(
                FileStatus(f"{self.fs.root_uri}/{f.relative}", f.relative, f.size, f.modification_time)
            )
        return moved

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
        deltalake = _deltalake()
        from deltalake.transaction import AddAction, CommitProperties, RemoveAction

        if removed and self.exists():
            configuration = self._table().metadata().configuration or {}
            if str(configuration.get("delta.appendOnly", "")).lower() == "true":
                raise UnsupportedError(
                    f"the Delta table {self.target.name} is append-only (delta.appendOnly): a "
                    f"{spec.strategy} that replaces files cannot be committed to it",
                    hint="use strategy append, or unset delta.appendOnly",
                )
        files = self._move_into_table(staged)
        adds = []
        total = 0
        for f in files:
            metadata = footer(f.path)
            total += int(metadata.num_rows) if metadata is not None else 0
            # numRecords, and bounds and NULL counts where the footer states them exactly: data skipping
            # for every Delta reader (delta_stats.py)
            stats = json.dumps(file_stats(metadata)) if metadata is not None else ""
            adds.append(
                AddAction(f.relative, f.size, partition_values(f.relative), f.modification_time, True, stats)
            )
        now = int(time.time() * 1000)
        # the log keeps paths URL-encoded and delta-rs encodes what it is given: a removed file is named by
        # its path as on disk (as its add was), or a partition value with a space or ':' was encoded twice
        # and the remove matched no file (a partitioned overwrite then doubled the partition)
        removes = [RemoveAction(unquote(d.relative), True, now, d.size, d.partition_values) for d in removed]
        arrow_schema = to_arrow_schema(schema)
        partition_by = [c for c in spec.partition_by if c in schema.fieldNames()] or None
        pinned = self._read_version is not None
        properties = CommitProperties(
            custom_metadata=stamp.properties(), max_commit_retries=0 if pinned else None
        )
        try:
            if not self.exists():
                from deltalake.transaction import create_table_with_add_actions

                configuration = spec.table_properties_for("delta") or None
                create_table_with_add_actions(
                    self.target.name,
                    deltalake.Schema.from_arrow(arrow_schema),
                    adds,
                    mode="error",
                    partition_by=partition_by,
                    configuration=configuration,
                    commit_properties=properties,
                )
            else:
                table = self._table()
                actions: list[Any] = [*adds, *removes]
                mode = "append"
                if self._replace_schema:  # evolution: overwrite — delta-rs replaces files and schema
                    actions, mode = list(adds), "overwrite"
                else:
                    partition_by = list(table.metadata().partition_columns) or None
                table.create_write_transaction(
                    actions,
                    mode=mode,
                    schema=arrow_schema,
                    partition_by=partition_by,
                    commit_properties=properties,
                )
        except UnsupportedError:
            raise
        except Exception as exc:
            raise CommitError(f"Delta commit to {self.target.name} failed: {exc}") from exc
        finally:
            self._read_version = None
        return CommitResult(committed=True, snapshot=str(self._table().version()), rows_added=total)


def _text(value: Any) -> str | None:
    """A partition value as the text Spark writes in a ``k=v`` folder (what staged files are matched by):
    delta-rs hands timestamps back as aware datetimes, whose ``str`` (``2024-01-01 10:00:00+00:00``) never
    equals Spark's ``2024-01-01 10:00:00``, so a partitioned overwrite replaced nothing."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return f"{text}.{value.microsecond:06d}".rstrip("0") if value.microsecond else text
    return str(value)
