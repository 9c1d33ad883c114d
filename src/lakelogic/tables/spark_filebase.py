"""Shared mechanics of path-based tables (Delta via delta-rs, Parquet, CSV, JSON).

Every write is "stage, then commit": Spark writes new data files into a hidden staging directory under
the table (``_lakelogic_staging/<token>``); the format's commit then makes exactly those files visible
and retires the replaced ones in one step. Row-level writes (merge, SCD2, reprocess) rewrite only the
files that hold affected rows: the affected files are found with one key-only scan of the target
(``input_file_name()``), their unaffected rows are carried over, and the change rows are added.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakelogic.tables.base import CommitResult, ReplaceResult
from lakelogic.tables.file_ranges import may_hold
from lakelogic.tables.spark_batch import q
from lakelogic.tables.spark_evolution import EvolutionPlan
from lakelogic.tables.spark_fs import FileStatus, HadoopFS
from lakelogic.tables.spark_merge import OP, bounds_predicate, target_columns
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

STAGING_DIR = "_lakelogic_staging"
FILE_COLUMN = "_ll_file"


@dataclass(frozen=True)
class DataFile:
    """A live data file of the table: ``relative`` path (as the format records it) and its URI.
    ``ranges``: per column, the [min, max] of its values the format states exactly (file_ranges.py)."""

    relative: str
    uri: str
    size: int
    partition_values: dict[str, str | None]
    ranges: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Staged:
    """Files Spark wrote into the staging directory, relative to it."""

    directory: str
    files: list[FileStatus]
    rows: int | None = None  # rows written, when counted while staging (text formats)


def normalize_uri(uri: str) -> str:
    """Compare file URIs regardless of ``file:`` spelling and percent-encoding."""
    text = unquote(uri)
    for prefix in ("file://", "file:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    return "/" + text.lstrip("/") if not text.startswith(("s3", "gs", "abfs", "hdfs", "wasb")) else text


class FileTableBase(ABC):
    """Write/commit skeleton for path tables; subclasses supply the file list, the schema and the commit."""

    data_format: str = "parquet"
    supports_widening: bool = False  # old files keep their narrower physical type
    file_suffix: str = ".parquet"

    def __init__(self, spark: SparkSession, target: ResolvedTarget) -> None:
        self.spark = spark
        self.target = target
        self.fs = HadoopFS(spark, target.name)

    # --- format hooks -----------------------------------------------------------------------

    @abstractmethod
    def exists(self) -> bool: ...

    @abstractmethod
    def schema(self) -> StructType | None: ...

    @abstractmethod
    def current_files(self) -> list[DataFile]: ...

    @abstractmethod
    def already_committed(self, stamp: CommitStamp) -> bool: ...

    @abstractmethod
    def commit(
        self,
        *,
        staged: Staged,
        removed: list[DataFile],
        schema: StructType,
        stamp: CommitStamp,
        spec: WriteSpec,
        rows_added: int | None,
    ) -> CommitResult: ...

    def evolve(self, plan: EvolutionPlan, new_schema: StructType) -> None:
        """Path tables take the new schema with the data commit (see :meth:`commit`)."""
        return None

    def writer_options(self) -> dict[str, str]:
        return {}

    def prepare_frame(self, frame: DataFrame) -> DataFrame:
        return frame

    # --- reading ------------------------------------------------------------------------------

    def read_files(self, files: list[DataFile], schema: StructType | None = None) -> DataFrame:
        schema = schema or self.schema()
        if schema is None:
            raise FileNotFoundError(f"no table at {self.target.name}")
        if not files:
            return self.spark.createDataFrame([], schema)
        reader = self.spark.read.schema(schema).option("basePath", self.fs.root_uri)
        for key, value in self.writer_options().items():
            reader = reader.option(key, value)
        return reader.format(self.data_format).load([f.uri for f in files])

    def read(self) -> DataFrame:
        return self.read_files(self.current_files())

    def files_in_range(self, bounds: Mapping[str, tuple[Any, Any]] | None) -> list[DataFile]:
        """The live files that can hold a row within ``bounds`` by their stated ranges (all without)."""
        files = self.current_files()
        return [f for f in files if may_hold(f.ranges, bounds)] if bounds else files

    def read_in_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> DataFrame:
        return self.read_files(self.files_in_range(bounds))

    # --- staging ------------------------------------------------------------------------------

    def stage(self, frame: DataFrame, spec: WriteSpec) -> Staged:
        directory = self.fs.child(f"{STAGING_DIR}/{uuid.uuid4().hex}")
        cluster_cols = [c for c in spec.cluster_by if c in frame.columns]
        if cluster_cols:  # cluster_by: rows sorted within each written file
            frame = frame.sortWithinPartitions(*[F.col(f"`{c}`") for c in cluster_cols])
        counted = None
        if self.data_format != "parquet":  # CSV/JSON keep no row count (Parquet footers do): count in the job
            from pyspark.sql import Observation

            counted = Observation()
            frame = frame.observe(counted, F.count(F.lit(1)).alias("rows"))
        writer = self.prepare_frame(frame).write.mode("overwrite").format(self.data_format)
        for key, value in self.writer_options().items():
            writer = writer.option(key, value)
        partition_cols = [c for c in spec.partition_by if c in frame.columns]
        if partition_cols:
            writer = writer.partitionBy(*partition_cols)
        writer.save(directory)
        rows = counted.get.get("rows") if counted is not None else None
        return Staged(directory, self.fs.list_files(directory, suffix=self.file_suffix), rows)

    def discard(self, staged: Staged) -> None:
        self.fs.delete(staged.directory)

    # --- strategies -----------------------------------------------------------------------------

    def _commit_frame(
        self, frame: DataFrame, removed: list[DataFile], stamp: CommitStamp, spec: WriteSpec
    ) -> CommitResult:
        staged = self.stage(frame, spec)
        try:
            return self.commit(
                staged=staged, removed=removed, schema=frame.schema, stamp=stamp, spec=spec, rows_added=None
            )
        finally:
            self.discard(staged)

    def append(self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec) -> CommitResult:
        return self._commit_frame(frame, [], stamp, spec)

    def overwrite(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, partitions: bool, replace_schema: bool
    ) -> CommitResult:
        current = self.current_files() if self.exists() else []
        partition_cols = [c for c in spec.partition_by if c in frame.columns]
        if not partitions or not partition_cols or not current:
            return self._commit_frame(frame, current, stamp, spec)
        staged = self.stage(frame, spec)
        try:
            keys = {tuple(_partition_of(f.relative).get(c) for c in partition_cols) for f in staged.files}
            removed = [f for f in current if tuple(f.partition_values.get(c) for c in partition_cols) in keys]
            return self.commit(
                staged=staged, removed=removed, schema=frame.schema, stamp=stamp, spec=spec, rows_added=None
            )
        finally:
            self.discard(staged)

    def read_with_file(self, files: list[DataFile] | None = None) -> DataFrame:
        """The rows of ``files`` (default: the whole table) plus the URI of the file holding each row
        (``_ll_file``)."""
        rows = self.read() if files is None else self.read_files(files)
        return rows.withColumn(FILE_COLUMN, F.input_file_name())

    def _affected_files(self, rows: DataFrame) -> list[DataFile]:
        """Live files named in the ``_ll_file`` column of ``rows`` (from :meth:`read_with_file`)."""
        by_uri = {normalize_uri(f.uri): f for f in self.current_files()}
        names = rows.select(FILE_COLUMN).distinct().collect()
        return [by_uri[n] for n in (normalize_uri(str(r[FILE_COLUMN])) for r in names) if n in by_uri]

    def replace_where(
        self,
        frame: DataFrame,
        stamp: CommitStamp,
        spec: WriteSpec,
        *,
        column: str,
        start: object,
        end: object,
    ) -> CommitResult:
        """Rewrite the files holding window rows: their other rows are written again beside the batch.
        The scan that finds those files counts the window's rows too (the rows the commit deletes)."""
        if not self.exists():
            return self.append(frame, stamp, spec)
        in_window = F.lit(True)
        if start is not None:
            in_window = in_window & (q(column) >= F.lit(start))
        if end is not None:
            in_window = in_window & (q(column) < F.lit(end))
        per_file = (
            self.read_with_file().where(in_window).groupBy(FILE_COLUMN).agg(F.count(F.lit(1)).alias("rows"))
        ).collect()
        by_uri = {normalize_uri(f.uri): f for f in self.current_files()}
        hit = [(by_uri.get(normalize_uri(str(r[FILE_COLUMN]))), int(r["rows"])) for r in per_file]
        affected = [f for f, _ in hit if f is not None]
        deleted = sum(rows for f, rows in hit if f is not None)
        kept = self.read_files(affected, frame.schema).where(~F.coalesce(in_window, F.lit(False)))
        new = kept.unionByName(frame.select(*kept.columns))
        result = self._commit_frame(new, affected, stamp, spec)
        return ReplaceResult(result.committed, result.snapshot, result.rows_added, rows_deleted=deleted)

    def apply_changes(
        self,
        changes: DataFrame,
        stamp: CommitStamp,
        spec: WriteSpec,
        *,
        match: tuple[str, ...],
        bounds: Mapping[str, tuple[Any, Any]] | None = None,
        counts: Mapping[str, int] | None = None,
        ranged: tuple[str, ...] = (),
    ) -> CommitResult:
        columns = target_columns(changes)
        if not self.exists():
            return self._commit_frame(changes.where(F.col(OP) == "insert").select(*columns), [], stamp, spec)
        touched = changes.where(F.col(OP).isin("update", "delete")).select(*[q(c) for c in match]).distinct()
        # the touched keys' range: files whose stated range misses it are not read, and Parquet row groups
        # outside it are skipped (key_range.py)
        stored = self.read_with_file(self.files_in_range(bounds))
        within = bounds_predicate(bounds, alias="") if bounds else ""
        if within:
            stored = stored.where(within)
        affected = self._affected_files(stored.join(touched, on=list(match), how="left_semi"))
        schema = changes.select(*[q(c) for c in columns]).schema
        kept = self.read_files(affected, schema).join(touched, on=list(match), how="left_anti")
        new_rows = changes.where(F.col(OP).isin("insert", "update")).select(*columns)
        new = kept.select(*columns).unionByName(new_rows)
        return self._commit_frame(new, affected, stamp, spec)

    def empty(self, stamp: CommitStamp) -> bool:
        """Remove every row in one commit (schema and commit history stay). False when absent."""
        if not self.exists():
            return False
        schema = self.schema()
        assert schema is not None
        directory = self.fs.child(f"{STAGING_DIR}/{uuid.uuid4().hex}")
        self.commit(
            staged=Staged(directory, []),
            removed=self.current_files(),
            schema=schema,
            stamp=stamp,
            spec=WriteSpec(),
            rows_added=0,
        )
        return True

    def drop(self) -> bool:
        existed = self.fs.exists(self.target.name)
        self.fs.delete(self.target.name)
        return existed

    def create_ddl(self, schema: StructType, spec: WriteSpec) -> str:
        cols = ", ".join(f"`{f.name}` {f.dataType.simpleString().upper()}" for f in schema.fields)
        name = self.target.name.rstrip("/").rsplit("/", 1)[-1]
        ddl = f"CREATE TABLE IF NOT EXISTS `{name}` ({cols}) USING {self.target.format}"
        if spec.partition_by:
            ddl += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in spec.partition_by) + ")"
        return ddl + f" LOCATION '{self.target.name}'"


def _partition_of(relative: str) -> dict[str, str | None]:
    from lakelogic.tables.spark_fs import partition_values

    return partition_values(relative)


def json_safe(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
