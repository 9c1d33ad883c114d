"""Iceberg tables through the Spark catalog (any catalog type: hadoop, hive, REST, Glue, Nessie).

Writes use DataFrameWriterV2 (``snapshot-property.*`` options carry the commit stamp) and ``MERGE INTO``
(stamped through :func:`run_with_commit_properties`). Every operation is one Iceberg snapshot on ``main``,
except change sets: their update and insert snapshots are made on a run branch and published together by
one fast-forward (:mod:`lakelogic.tables.spark_iceberg_branch`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from loguru import logger
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, StructType, TimestampType
from pyspark.sql.utils import AnalysisException

from lakelogic.tables.base import CommitResult, ReplaceResult, window_sql
from lakelogic.tables.iceberg_java import MAIN, JavaIcebergTable
from lakelogic.tables.key_range import FileBounds, share_in_range
from lakelogic.tables.spark_batch import cast_type_name, quote_ident
from lakelogic.tables.spark_commit import run_with_commit_properties
from lakelogic.tables.spark_evolution import EvolutionPlan
from lakelogic.tables.spark_iceberg_branch import Commits, commit_on_branch
from lakelogic.tables.spark_merge import OP, change_set_insert_sql, change_set_update_sql, target_columns
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import PREFIX, CommitStamp, committed_in
from lakelogic.tables.target import ResolvedTarget

# Up to this many data files overlapping a key range are measured through Iceberg's Java scan planning
# (6 + 4 per key column gateway calls each, ~1 ms a file); more are read from the ``data_files`` metadata
# table in one query (~0.1 s).
_FEW_FILES = 16


def quote_table(name: str) -> str:
    return ".".join(quote_ident(p) for p in name.split("."))


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class IcebergTable:
    """An Iceberg table ``catalog.namespace.table``."""

    supports_widening = True

    @staticmethod
    def widens(narrow: DataType, wide: DataType) -> bool:
        """Iceberg promotes int → long, float → double and a decimal's precision; a date does not
        become a timestamp (the commit refused it with a raw Java message)."""
        return not (isinstance(narrow, DateType) and isinstance(wide, TimestampType))

    def __init__(self, spark: SparkSession, target: ResolvedTarget) -> None:
        self.spark = spark
        self.target = target
        self.name = target.name
        self.sql_name = quote_table(target.name)
        # main's snapshot this write reads: pinned by the first read, the base of the write's branch
        self.read_snapshot: int | None = None

    # --- inspection ------------------------------------------------------------------------

    def exists(self) -> bool:
        return self.schema() is not None

    def schema(self) -> StructType | None:
        try:
            return self.spark.table(self.sql_name).schema
        except AnalysisException:
            return None

    def read(self) -> DataFrame:
        """The table as this write sees it. The first read pins main's current snapshot; later reads see the
        same rows, and the write's branch starts there (spark_iceberg_branch), so another writer's commit
        after that read makes the publish fail as a retryable conflict: changes computed from a state that
        is gone never land (an SCD2 version closed by the other writer would otherwise get a second current
        version)."""
        if self._pinned_snapshot() is None:  # no snapshot yet: nothing to pin
            return self.spark.table(self.sql_name)
        return self.spark.sql(f"SELECT * FROM {self.sql_name} VERSION AS OF {self.read_snapshot}")

    def _pinned_snapshot(self) -> int | None:
        """The snapshot this write reads: main's current one, pinned at the first call."""
        if self.read_snapshot is None:
            self.read_snapshot = self._main_snapshot()
        return self.read_snapshot

    def _main_snapshot(self) -> int | None:
        return JavaIcebergTable(self.spark, self.sql_name).head(MAIN)

    def read_in_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> DataFrame:
        """Iceberg skips files by their metrics when the caller's range filter is pushed into the scan."""
        return self.read()

    def estimated_scan_bytes(self, predicate: str | None) -> int:
        """Spark's size estimate of the rows a scan restricted by ``predicate`` reads: Iceberg plans the
        scan with the filter pushed down, prunes files by their metrics and reports the remaining files'
        record count, which Spark sizes by the row width of the schema. Planning reads manifests only; no
        Spark job runs."""
        frame = self.read() if predicate is None else self.read().where(predicate)
        return int(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())

    def share_in_key_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> float:
        """The estimated share of the rows in the files overlapping ``bounds`` whose keys lie inside them
        (:func:`key_range.share_in_range`), from each data file's key bounds at the snapshot this write
        reads (manifests only): through Iceberg's Java scan planning when few files overlap (~15 ms; the
        ``data_files`` metadata query costs ~0.1 s, most of an SCD2 write's planning over a clustered
        batch), else from that query. 1.0 when there is nothing to measure or the catalog has no readable
        metrics."""
        schema = self.schema()
        columns = [k for k in bounds if schema is not None and k in schema.names]
        if schema is None or not columns:
            return 1.0
        pinned = self._pinned_snapshot()
        wanted = {c: bounds[c] for c in columns}
        if pinned is not None:  # few files overlap (a clustered batch): Iceberg's planning, ~15 ms
            planned = JavaIcebergTable(self.spark, self.sql_name).files_in_key_range(
                pinned, wanted, limit=_FEW_FILES
            )
            if planned is not None:
                return share_in_range(planned, wanted)
        at = f" VERSION AS OF {pinned}" if pinned is not None else ""

        def metric(column: str, bound: str) -> str:
            value = f"readable_metrics.{quote_ident(column)}.{bound}"
            data_type = schema[column].dataType
            if isinstance(data_type, TimestampType):
                return f"unix_micros({value})"
            if isinstance(data_type, DateType):
                return f"unix_date({value})"
            return value

        selected = ", ".join(
            f"{metric(c, 'lower_bound')} AS lo{i}, {metric(c, 'upper_bound')} AS hi{i}"
            for i, c in enumerate(columns)
        )
        try:
            rows = self.spark.sql(
                f"SELECT record_count, {selected} FROM {self.sql_name}.data_files{at}"
            ).collect()
        except AnalysisException as exc:  # no readable_metrics (an older Iceberg): file-granular estimate
            logger.debug(f"{self.name}: no per-file key bounds for the range estimate ({exc})")
            return 1.0
        files: list[FileBounds] = [
            (int(r["record_count"]), {c: (r[f"lo{i}"], r[f"hi{i}"]) for i, c in enumerate(columns)})
            for r in rows
        ]
        return share_in_range(files, wanted)

    def _main_lineage(self) -> set[int]:
        """Snapshot ids in main's ancestry. Not the ``history`` table: a fast-forward (our merge publishes
        through a branch) makes only its last snapshot current, the ones before it are ancestors all the
        same. A snapshot on another branch, or rolled back, is not committed."""
        catalog, _, identifier = self.name.partition(".")
        rows = self.spark.sql(
            f"CALL {quote_ident(catalog)}.system.ancestors_of(table => {sql_string(identifier)})"
        ).collect()
        return {int(r["snapshot_id"]) for r in rows}

    def _stamped(self, where: str) -> Commits:
        """(snapshot id, summary) of main-branch snapshots matching ``where``, newest first."""
        snapshots = f"{self.sql_name}.snapshots"
        rows = self.spark.sql(
            f"SELECT snapshot_id, summary FROM {snapshots} WHERE {where} ORDER BY committed_at DESC"
        ).collect()
        if not rows:
            return []
        lineage = self._main_lineage()
        return [
            (str(r["snapshot_id"]), dict(r["summary"] or {}))
            for r in rows
            if int(r["snapshot_id"]) in lineage
        ]

    def _summaries(self, where: str) -> list[dict[str, Any]]:
        return [summary for _, summary in self._stamped(where)]

    def stamped_snapshots(self, stamp: CommitStamp) -> Commits:
        """(snapshot id, summary) of the main-branch snapshots this run committed, newest first."""
        found = self._stamped(f"summary['{PREFIX}run_id'] = {sql_string(stamp.run_id)}")
        return [(snapshot, summary) for snapshot, summary in found if stamp.matches(summary)]

    def already_committed(self, stamp: CommitStamp) -> bool:
        if not self.exists():
            return False
        clauses = [f"summary['{PREFIX}run_id'] = {sql_string(stamp.run_id)}"]
        if stamp.any_pipeline_run and stamp.any_run_window_key:
            # a backfill window: the same contract's commits of that window, from any pipeline run
            start = stamp.properties()[f"{PREFIX}window_start"]
            clauses.append(
                f"(summary['{PREFIX}contract'] = {sql_string(stamp.contract)} AND "
                f"summary['{PREFIX}window_start'] = {sql_string(start)})"
            )
            clauses.append(f"summary['{PREFIX}role'] = 'reset'")  # a reset ends the search
        elif stamp.pipeline_run_id:
            clauses.append(f"summary['{PREFIX}pipeline_run_id'] = {sql_string(stamp.pipeline_run_id)}")
        return committed_in(self._summaries(" OR ".join(clauses)), stamp)

    def snapshot_of(self, stamp: CommitStamp) -> str | None:
        found = self.stamped_snapshots(stamp)
        return found[0][0] if found else None

    # --- writes ------------------------------------------------------------------------------

    def _ensure_namespace(self) -> None:
        namespace = ".".join(quote_ident(p) for p in self.name.split(".")[:-1])
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")

    def _writer(self, frame: DataFrame, stamp: CommitStamp) -> Any:
        writer = frame.writeTo(self.sql_name)
        for key, value in stamp.properties().items():
            writer = writer.option(f"snapshot-property.{key}", value)
        return writer

    def _properties(self, spec: WriteSpec) -> dict[str, str]:
        return spec.table_properties_for("iceberg")

    def _create(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, replace: bool = False
    ) -> None:
        self._ensure_namespace()
        writer = self._writer(frame, stamp).using("iceberg")
        partition_cols = [c for c in spec.partition_by if c in frame.columns]
        if partition_cols:
            writer = writer.partitionedBy(*[F.col(quote_ident(c)) for c in partition_cols])
        for key, value in self._properties(spec).items():
            writer = writer.tableProperty(key, value)
        if replace:
            writer.createOrReplace()
        else:
            writer.create()
        cluster_cols = [c for c in spec.cluster_by if c in frame.columns]
        if cluster_cols:  # later writes sort by these within each task (Iceberg write order)
            order = ", ".join(quote_ident(c) for c in cluster_cols)
            self.spark.sql(f"ALTER TABLE {self.sql_name} WRITE LOCALLY ORDERED BY {order}")

    def _result(self, stamp: CommitStamp, published: Commits | None = None) -> CommitResult:
        """The run's newest snapshot in main and the records its snapshots added (a branch publish
        brings several). ``published``: the commits a branch publish just brought to main, which are
        exactly that (no metadata read)."""
        snapshots = self.stamped_snapshots(stamp) if published is None else published  # newest first
        added = sum(int(summary.get("added-records", 0) or 0) for _, summary in snapshots)
        return CommitResult(committed=True, snapshot=snapshots[0][0] if snapshots else None, rows_added=added)

    def commit_sql(self, statement: str, stamp: CommitStamp) -> DataFrame:
        """Run one row-level statement (MERGE/INSERT/DELETE) as a snapshot stamped with ``stamp``; returns
        the executed statement (its plan holds the metrics the statement's source observed)."""
        executed: list[DataFrame] = []

        def run() -> None:
            executed.append(self.spark.sql(statement))

        run_with_commit_properties(self.spark, stamp.properties(), run)
        return executed[0]

    def append(self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec) -> CommitResult:
        if not self.exists():
            self._create(frame, stamp, spec)
        else:
            self._writer(frame, stamp).append()
        return self._result(stamp)

    def overwrite(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, partitions: bool, replace_schema: bool
    ) -> CommitResult:
        if not self.exists() or replace_schema:
            self._create(frame, stamp, spec, replace=replace_schema)
        elif partitions:
            self._writer(frame, stamp).overwritePartitions()
        else:
            self._writer(frame, stamp).overwrite(F.lit(True))
        return self._result(stamp)

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
        if not self.exists():
            self._create(frame, stamp, spec)
            return self._result(stamp)
        # One MERGE: insert every batch row, delete target rows in the window. (DataFrameWriterV2
        # overwrite(condition) only works when the window aligns with whole files/partitions.) The
        # counts come from the snapshot summary: ``spec.batch_rows`` rows are inserted (the caller
        # counted them).
        window = window_sql(f"t.{quote_ident(column)}", start, end, cast_to=self._type_of(column))
        view = f"_ll_reprocess_{uuid.uuid4().hex[:12]}"
        frame.createOrReplaceTempView(view)
        cols = ", ".join(quote_ident(c) for c in frame.columns)
        values = ", ".join(f"s.{quote_ident(c)}" for c in frame.columns)
        statement = (
            f"MERGE INTO {self.sql_name} t USING {view} s ON 1 = 0 "
            f"WHEN NOT MATCHED THEN INSERT ({cols}) VALUES ({values}) "
            f"WHEN NOT MATCHED BY SOURCE AND {window} THEN DELETE"
        )

        try:
            self.commit_sql(statement, stamp)
        finally:
            self.spark.catalog.dropTempView(view)
        snapshots = self.stamped_snapshots(stamp)
        result = self._result(stamp, snapshots)
        deleted = None if spec.batch_rows is None else replaced_rows(snapshots, spec.batch_rows)
        return ReplaceResult(result.committed, result.snapshot, result.rows_added, rows_deleted=deleted)

    def _type_of(self, column: str) -> str:
        schema = self.schema()
        return cast_type_name(schema[column].dataType) if schema is not None else "STRING"

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
        """Updates/deletes by a matched-only MERGE, inserts by a plain INSERT, both on the run's branch and
        published together (spark_iceberg_branch): no outer join between the change set and the target.
        Unlike the merge fast path, one MERGE with a NOT MATCHED clause is no gain here even over a small
        key range: the inserts need no target scan, and shuffling the range cost more than the broadcast's
        cache and the second statement (decisions.md, "Session 16")."""
        if not self.exists():
            written = [F.col(quote_ident(c)) for c in target_columns(changes)]
            inserts = changes.where(F.col(OP) == "insert").select(*written)
            self._create(inserts, stamp, spec)
            return self._result(stamp)
        known = counts or {}
        touching = counts is None or known.get("update", 0) + known.get("delete", 0) > 0
        inserting = counts is None or known.get("insert", 0) > 0
        columns = target_columns(changes)
        suffix = uuid.uuid4().hex[:12]
        view, touched_view = f"_ll_changes_{suffix}", f"_ll_touched_{suffix}"
        # Iceberg's MERGE rewrite gives its join a hint of its own (never broadcast the target) and so
        # drops any hint on the source: only the source's statistics can get it broadcast. A cached and
        # materialized relation reports its real size, so the updated/deleted rows get their own cache
        # instead of being a filter over the whole change set's (which would count the inserts too).
        touched = changes.where(F.col(OP).isin("update", "delete")).persist() if touching else None

        def release() -> None:
            """Nothing reads the change set after the statements; see commit_on_branch."""
            if touched is not None:
                touched.unpersist()
            changes.unpersist()

        def statements(table_sql: str) -> list[str | None]:
            return [
                change_set_update_sql(
                    table_sql, touched_view, columns=columns, match=match, bounds=bounds, ranged=ranged
                )
                if touching
                else None,
                change_set_insert_sql(table_sql, view, columns=columns) if inserting else None,
            ]

        try:
            changes.createOrReplaceTempView(view)
            if touched is not None:
                touched.count()
                touched.createOrReplaceTempView(touched_view)
            published = commit_on_branch(self, stamp, statements, before_publish=release)
        finally:
            self.spark.catalog.dropTempView(view)
            if touched is not None:
                self.spark.catalog.dropTempView(touched_view)
                touched.unpersist()
        return self._result(stamp, published)

    # --- schema and lifecycle ------------------------------------------------------------------

    def evolve(self, plan: EvolutionPlan, new_schema: StructType) -> None:
        for f in plan.added:
            self.spark.sql(
                f"ALTER TABLE {self.sql_name} ADD COLUMNS ({quote_ident(f.name)} {f.dataType.simpleString()})"
            )
        for name, _, wide in plan.widened:
            self.spark.sql(
                f"ALTER TABLE {self.sql_name} ALTER COLUMN {quote_ident(name)} TYPE {wide.simpleString()}"
            )
        if plan.added or plan.widened:
            self.spark.sql(f"REFRESH TABLE {self.sql_name}")

    def empty(self, stamp: CommitStamp) -> bool:
        """DELETE every row in one snapshot (schema, properties and history stay)."""
        if not self.exists():
            return False
        self.commit_sql(f"DELETE FROM {self.sql_name}", stamp)
        return True

    def drop(self) -> bool:
        existed = self.exists()
        if existed:
            self.spark.sql(f"DROP TABLE IF EXISTS {self.sql_name} PURGE")
        return existed

    def create_ddl(self, schema: StructType, spec: WriteSpec) -> str:
        cols = ",\n  ".join(
            f"{quote_ident(f.name)} {f.dataType.simpleString().upper()}" for f in schema.fields
        )
        ddl = f"CREATE TABLE IF NOT EXISTS {self.sql_name} (\n  {cols}\n) USING iceberg"
        if spec.partition_by:
            ddl += "\nPARTITIONED BY (" + ", ".join(quote_ident(c) for c in spec.partition_by) + ")"
        props = self._properties(spec)
        if props:
            ddl += (
                "\nTBLPROPERTIES ("
                + ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items())
                + ")"
            )
        return ddl


def replaced_rows(commits: Commits, inserted: int) -> int:
    """Target rows that ``commits`` (a replace of ``inserted`` batch rows) removed.

    Copy-on-write removes each data file holding a replaced row and writes its other rows again (a MERGE
    with ``NOT MATCHED BY SOURCE`` rewrites every file it scans): the rewritten rows are in both
    ``added-records`` and ``deleted-records``, and the added records beyond the inserted ones are exactly
    those. Merge-on-read removes rows by position deletes instead (net of the delete files a file-scoped
    delete replaces, as :func:`spark_iceberg_merge.rows_deleted` counts them)."""

    def total(key: str) -> int:
        return sum(int(summary.get(key, 0) or 0) for _, summary in commits)

    rewritten = total("added-records") - inserted
    by_position = total("added-position-deletes") - total("removed-position-deletes")
    return max(total("deleted-records") - rewritten + by_position, 0)
