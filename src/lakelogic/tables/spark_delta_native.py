"""Delta tables through Spark's own Delta support (Databricks, or delta-spark on the classpath).

Used instead of the delta-rs path when :func:`has_native_delta` says the session can write Delta. The stamp
goes into the commit's ``userMetadata`` (JSON): the ``userMetadata`` write option for DataFrame writes and the
``spark.databricks.delta.commitInfo.userMetadata`` session setting around ``MERGE INTO``.

Not exercised by the local test suite (no delta-spark there); the delta-rs adapter is.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from pyspark.sql.utils import AnalysisException

from lakelogic.tables.base import CommitResult, ReplaceResult, window_sql
from lakelogic.tables.spark_batch import cast_type_name
from lakelogic.tables.spark_evolution import EvolutionPlan
from lakelogic.tables.spark_fs import HadoopFS
from lakelogic.tables.spark_iceberg import quote_ident
from lakelogic.tables.spark_merge import OP, change_set_merge_sql, target_columns
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp, committed_in
from lakelogic.tables.target import ResolvedTarget

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


class NativeDeltaTable:
    """A Delta table at a path, written by Spark's Delta data source."""

    supports_widening = False

    def __init__(self, spark: SparkSession, target: ResolvedTarget) -> None:
        self.spark = spark
        self.target = target
        self.fs = HadoopFS(spark, target.name)
        self.sql_name = f"delta.`{target.name}`"

    def exists(self) -> bool:
        return self.fs.exists(self.fs.child("_delta_log"))

    def schema(self) -> StructType | None:
        if not self.exists():
            return None
        try:
            return self.read().schema
        except AnalysisException:
            return None

    def read(self) -> DataFrame:
        return self.spark.read.format("delta").load(self.target.name)

    def read_in_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> DataFrame:
        """Spark's Delta skips files by their statistics when the caller's range filter reaches the scan."""
        return self.read()

    def already_committed(self, stamp: CommitStamp) -> bool:
        if not self.exists():
            return False
        rows = self.spark.sql(f"DESCRIBE HISTORY {self.sql_name}").select("userMetadata").collect()
        history: list[dict[str, object]] = []  # newest first, as DESCRIBE HISTORY lists it
        for row in rows:
            try:
                props = json.loads(row["userMetadata"] or "{}")
            except ValueError:
                continue
            if isinstance(props, dict):
                history.append(props)
        return committed_in(history, stamp)

    def _version(self) -> str:
        row = self.spark.sql(f"DESCRIBE HISTORY {self.sql_name} LIMIT 1").select("version").first()
        return str(row["version"]) if row else "0"

    def _write(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, mode: str, **options: str
    ) -> CommitResult:
        writer = frame.write.format("delta").mode(mode).option("userMetadata", json.dumps(stamp.properties()))
        for key, value in options.items():
            writer = writer.option(key, value)
        if not self.exists():
            partition_cols = [c for c in spec.partition_by if c in frame.columns]
            if partition_cols:
                writer = writer.partitionBy(*partition_cols)
            for key, value in spec.table_properties_for("delta").items():
                writer = writer.option(key, value)
        writer.save(self.target.name)
        return CommitResult(committed=True, snapshot=self._version())

    def append(self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec) -> CommitResult:
        return self._write(frame, stamp, spec, "append")

    def overwrite(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, partitions: bool, replace_schema: bool
    ) -> CommitResult:
        options = {"overwriteSchema": "true"} if replace_schema else {}
        if partitions and self.exists():
            options["partitionOverwriteMode"] = "dynamic"
        return self._write(frame, stamp, spec, "overwrite", **options)

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
        schema = self.schema() if self.exists() else None
        kind = (
            cast_type_name(schema[column].dataType) if schema is not None and column in schema.names else None
        )
        window = window_sql(quote_ident(column), start, end, cast_to=kind)
        # the target rows the write replaces, counted before it (files it rewrites keep their other rows)
        deleted = self.read().where(window).count() if self.exists() else 0
        result = self._write(frame, stamp, spec, "overwrite", replaceWhere=window)
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
            return self._write(changes.where(f"{OP} = 'insert'").select(*columns), stamp, spec, "append")
        view = f"_ll_changes_{uuid.uuid4().hex[:12]}"
        changes.createOrReplaceTempView(view)
        statement = change_set_merge_sql(
            self.sql_name, view, columns=columns, match=match, bounds=bounds, ranged=ranged
        )
        try:
            self.commit_sql(statement, stamp)
        finally:
            self.spark.catalog.dropTempView(view)
        return CommitResult(committed=True, snapshot=self._version())

    def commit_sql(self, statement: str, stamp: CommitStamp) -> None:
        """Run one committing statement with the stamp as the commit's user metadata."""
        previous: Any = self.spark.conf.get(USER_METADATA_CONF, None)
        self.spark.conf.set(USER_METADATA_CONF, json.dumps(stamp.properties()))
        try:
            self.spark.sql(statement)
        finally:
            if previous is None:
                self.spark.conf.unset(USER_METADATA_CONF)
            else:
                self.spark.conf.set(USER_METADATA_CONF, previous)

    def version(self) -> str:
        return self._version()

    def evolve(self, plan: EvolutionPlan, new_schema: StructType) -> None:
        for f in plan.added:
            self.spark.sql(
                f"ALTER TABLE {self.sql_name} ADD COLUMNS ({quote_ident(f.name)} {f.dataType.simpleString()})"
            )

    def empty(self, stamp: CommitStamp) -> bool:
        if not self.exists():
            return False
        self.commit_sql(f"DELETE FROM {self.sql_name}", stamp)
        return True

    def drop(self) -> bool:
        existed = self.fs.exists(self.target.name)
        self.fs.delete(self.target.name)
        return existed

    def create_ddl(self, schema: StructType, spec: WriteSpec) -> str:
        cols = ", ".join(f"{quote_ident(f.name)} {f.dataType.simpleString().upper()}" for f in schema.fields)
        return f"CREATE TABLE IF NOT EXISTS {self.sql_name} ({cols}) USING delta"
