"""Delta tables as sources and links: Spark's own Delta reader when the session has it, else the table's
Parquet files read by Spark after delta-rs resolved which files make up the snapshot.

The delta-rs path reads only the transaction log on the driver; the rows are read by Spark's executors
(no data passes through the driver, so large bronze tables are read as fast as plain Parquet). Partition
values come from the Hive-style directories: by Spark's partition discovery when it decodes every value
as the log means it, else (a value with escaped non-ASCII bytes, an empty string) as literals per
partition. Tables whose files are not plain Parquet are refused (column mapping, deletion vectors: delta-rs
cannot read them correctly either) or read through delta-rs on the driver with a warning (partitioned
files outside ``col=value/`` directories, unknown reader features).

``read_delta_since`` serves the ``delta_version`` watermark strategy (SEMANTICS §3.4): the rows of the
files that the commits after the stored version added as data changes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
from loguru import logger

from lakelogic.errors import MissingDependencyError, SourceError, UnsupportedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Reader features of tables whose files still read correctly as plain Parquet. A table that merely allows
# deletion vectors is fine until a file has one (checked per file); a variant column fails the schema.
_PLAIN_PARQUET_FEATURES = {
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "deletionVectors",
    "variantType",
}
# Writer features whose rules a commit of whole added and removed files keeps (appendOnly is enforced by
# delta-rs at commit; the column-level ones only matter when a column uses them, checked separately).
_FILE_COMMIT_WRITER_FEATURES = _PLAIN_PARQUET_FEATURES | {
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "identityColumns",
    "domainMetadata",
}
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Spark's partition discovery decodes each %XX escape as one character; delta-rs escapes non-ASCII text
# as UTF-8 bytes, which Spark would turn into mojibake.
_BYTE_ESCAPE = re.compile(r"%[89a-fA-F][0-9a-fA-F]")


def _session_has_delta(spark: SparkSession) -> bool:
    conf = spark.conf
    ext = conf.get("spark.sql.extensions", "") or ""
    catalog = conf.get("spark.sql.catalog.spark_catalog", "") or ""
    return "io.delta" in ext or "DeltaCatalog" in catalog


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:
        raise MissingDependencyError(
            "reading Delta without a Delta-enabled Spark session needs the deltalake package",
            hint="pip install deltalake",
        ) from exc
    return deltalake


@dataclass(frozen=True)
class DeltaFile:
    """A data file: its path under the table root as on storage (the log's URI path decoded), and its
    partition values as text in partition-column order (None: NULL), or None outside Hive-style folders."""

    relative: str
    partition: tuple[str | None, ...] | None


def delta_file(log_path: str, partition_columns: tuple[str, ...]) -> DeltaFile:
    relative = unquote(log_path)
    directories = relative.split("/")[:-1]
    if len(directories) != len(partition_columns):
        return DeltaFile(relative, None if partition_columns else ())
    values: list[str | None] = []
    for directory, column in zip(directories, partition_columns, strict=True):
        name, sep, raw = directory.partition("=")
        if not sep or unquote(name) != column:
            return DeltaFile(relative, None)
        # Delta writes a NULL as the Hive default and reads an empty value as NULL too
        values.append(None if raw in ("", _HIVE_NULL) else unquote(raw))
    return DeltaFile(relative, tuple(values))


@dataclass(frozen=True)
class DeltaSnapshot:
    """One version of a Delta table: its live data files by storage path, from the log only."""

    root: str  # the table's location as Spark takes it (not percent-encoded)
    version: int
    schema: StructType
    partition_columns: tuple[str, ...]
    files: dict[str, DeltaFile]
    # why Spark cannot read the files as plain Parquet; None when it can
    not_plain_parquet: str | None


def snapshot(path: str, version: int | None = None) -> DeltaSnapshot:
    """The table at ``path`` at ``version`` (default: the latest)."""
    from pyspark.sql.types import StructType

    deltalake = _deltalake()
    try:
        table = deltalake.DeltaTable(path, version=version)
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        schema = StructType.fromJson(json.loads(table.schema().to_json()))
    except Exception as exc:  # delta-rs raises its own types; the source error names the table and version
        at = f" at version {version}" if version is not None else ""
        raise SourceError(f"cannot read the Delta table at {path}{at}: {exc}") from exc
    columns = tuple(table.metadata().partition_columns)
    files = [delta_file(str(a["path"]), columns) for a in actions]
    return DeltaSnapshot(
        unquote(str(table.table_uri)).rstrip("/"),
        int(table.version()),
        schema,
        columns,
        {f.relative: f for f in files},
        protocol_blocker(table) or files_blocker(actions, files),
    )


def protocol_blocker_of(snap: DeltaSnapshot) -> str | None:
    """The protocol part of ``snap.not_plain_parquet`` (reader features, column mapping)."""
    reason = snap.not_plain_parquet
    return reason if reason is not None and reason.startswith(("reader features", "column mapping")) else None


def protocol_blocker(table: Any) -> str | None:
    """Why the files of the delta-rs ``table`` do not read as plain Parquet, by its protocol and metadata;
    None when they do."""
    protocol = table.protocol()
    unknown = sorted(set(protocol.reader_features or ()) - _PLAIN_PARQUET_FEATURES)
    if unknown:
        return f"reader features {', '.join(unknown)}"
    mapping = (table.metadata().configuration or {}).get("delta.columnMapping.mode")
    if protocol.min_reader_version == 2 or (mapping and mapping != "none"):
        return "column mapping"
    return None


def files_blocker(actions: list[dict[str, Any]], files: list[DeltaFile]) -> str | None:
    """Why these add actions' files do not read as plain Parquet (a deletion vector; partition values
    outside Hive-style folders); None when they do."""
    if any(v is not None for a in actions for k, v in a.items() if k.startswith("deletionVector")):
        return "deletion vectors"
    outside = next((f.relative for f in files if f.partition is None), None)
    if outside is not None:
        return f"partition directories that are not Hive-style ({outside})"
    return None


def file_commit_blocker(table: Any) -> str | None:
    """Why committing Spark-written Parquet files to ``table`` as plain add/remove actions would break one
    of its rules (writer features, CHECK constraints, generated or identity columns), or read it wrongly;
    None when it would not."""
    reading = protocol_blocker(table)
    if reading is not None:
        return reading
    unknown = sorted(set(table.protocol().writer_features or ()) - _FILE_COMMIT_WRITER_FEATURES)
    if unknown:
        return f"writer features {', '.join(unknown)}"
    if any(k.startswith("delta.constraints.") for k in (table.metadata().configuration or {})):
        return "CHECK constraints"
    for column in json.loads(table.schema().to_json()).get("fields", []):
        metadata = column.get("metadata") or {}
        if "delta.generationExpression" in metadata:
            return f"a generated column ({column['name']})"
        if any(str(k).startswith("delta.identity.") for k in metadata):
            return f"an identity column ({column['name']})"
        if "delta.invariants" in metadata:
            return f"a column invariant ({column['name']})"
    return None


def read_files(spark: SparkSession, snap: DeltaSnapshot, files: list[DeltaFile]) -> DataFrame:
    """The rows of ``files`` (of ``snap``'s table, live or not), read by Spark with ``snap``'s schema."""
    if not files:
        return spark.createDataFrame([], snap.schema)
    names = [f"`{name.replace('`', '``')}`" for name in snap.schema.fieldNames()]
    uris = [f"{snap.root}/{f.relative}" for f in files]
    if not snap.partition_columns:  # explicit files and no basePath: no partition discovery at all
        return spark.read.schema(snap.schema).parquet(*uris).select(*names)
    if all(spark_decodes(f.relative) for f in files):
        # the partition columns come from the Hive-style folders, typed by the Delta schema
        frame = spark.read.schema(snap.schema).option("basePath", snap.root).parquet(*uris)
        return frame.select(*names)
    return _read_by_partition(spark, snap, files).select(*names)


def spark_decodes(relative: str) -> bool:
    """Whether Spark's partition discovery reads every partition value of this path as Delta means it."""
    for directory in relative.split("/")[:-1]:
        raw = directory.partition("=")[2]
        if raw == "" or _BYTE_ESCAPE.search(raw):
            return False
    return True


def _read_by_partition(spark: SparkSession, snap: DeltaSnapshot, files: list[DeltaFile]) -> DataFrame:
    """Each partition's files with its values as literals (one scan per partition: only for tables with
    values Spark's partition discovery would misread)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    data = StructType([f for f in snap.schema.fields if f.name not in snap.partition_columns])
    groups: dict[tuple[str | None, ...], list[str]] = {}
    for f in files:
        assert f.partition is not None  # checked by files_blocker
        groups.setdefault(f.partition, []).append(f"{snap.root}/{f.relative}")
    parts = [
        spark.read.schema(data)
        .parquet(*uris)
        .select(
            "*",
            *[
                F.lit(value).cast(snap.schema[column].dataType).alias(column)
                for column, value in zip(snap.partition_columns, values, strict=True)
            ],
        )
        for values, uris in groups.items()
    ]
    return reduce(lambda a, b: a.unionByName(b), parts)


def read_snapshot(spark: SparkSession, snap: DeltaSnapshot) -> DataFrame:
    """Every row of ``snap``."""
    if snap.not_plain_parquet is not None:
        return _read_through_arrow(spark, snap)
    return read_files(spark, snap, list(snap.files.values()))


def _read_through_arrow(spark: SparkSession, snap: DeltaSnapshot) -> DataFrame:
    reason = snap.not_plain_parquet
    if reason in ("column mapping", "deletion vectors"):
        # delta-rs returns NULL for every column of a column-mapped table and cannot apply deletion
        # vectors: refused, never rows that look like data
        raise UnsupportedError(
            f"the Delta table {snap.root} has {reason}, which only Spark's own Delta reader reads correctly",
            hint="read it from a Spark session with Delta (delta-spark or Databricks)",
        )
    logger.warning(
        "Delta table {} has {}: Spark cannot read its files as Parquet, so delta-rs reads it on the driver "
        "(fine for small tables; use a Delta-enabled Spark session for large ones)",
        snap.root,
        reason,
    )
    try:
        table = _deltalake().DeltaTable(snap.root, version=snap.version).to_pyarrow_table()
    except Exception as exc:  # delta-rs's own error types: a source error naming the table
        raise SourceError(f"cannot read the Delta table at {snap.root} ({reason}): {exc}") from exc
    # rows as Python values keep the declared types (pandas would turn an int column with NULLs into
    # doubles holding NaN, and decimals into decimal(38,18))
    return spark.createDataFrame(table.to_pylist(), snap.schema)


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    """The latest version of the Delta table at ``path``."""
    if _session_has_delta(spark):
        return spark.read.format("delta").load(path)
    return read_snapshot(spark, snapshot(path))


@dataclass(frozen=True)
class DeltaChanges:
    """What a ``delta_version`` run reads: the data added after ``previous`` up to ``current``."""

    frame: DataFrame
    previous: int | None
    current: int
    added_files: int
    # files holding rows the commits updated or deleted (removed as data changes): the rows they kept
    # come again in the files that replaced them
    rewritten_files: int


def read_delta_since(spark: SparkSession, path: str, previous: int | None) -> DeltaChanges:
    """The rows committed after version ``previous`` (None: every row), up to the latest version.

    The commits' own actions decide, as Delta streaming reads them: a file added as a data change holds
    new rows, unless a later commit in the range removed it as a data change (its rows were updated or
    deleted; the rows it kept come in the file that replaced it); a file added without a data change
    (compaction, ``OPTIMIZE``) holds rows already counted, so it is skipped, and a compacted new file is
    read from storage although no longer live. Rewritten files' kept rows are read again (merge and SCD2
    targets absorb them; the count is reported for append targets)."""
    current = snapshot(path)
    if previous is None:
        return DeltaChanges(read_snapshot(spark, current), None, current.version, len(current.files), 0)
    if previous > current.version:
        raise SourceError(
            f"the Delta source {path} is at version {current.version}, before this contract's stored "
            f"cursor {previous}: the table was re-created",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        )
    blocker = protocol_blocker_of(current)
    if blocker is not None:
        raise UnsupportedError(
            f"delta_version over {path}: the table has {blocker}, so its new files cannot be read one by one",
            hint="use a Delta-enabled Spark session, or max_target on a watermark_field",
        )
    state = _RangeState()
    for version in range(previous + 1, current.version + 1):
        _apply_commit(_commit_actions(spark, current.root, version, path), state, current, path)
    if any(f.partition is None for f in state.added.values()):
        raise UnsupportedError(
            f"delta_version over {path}: the table has files outside Hive-style partition folders, so its "
            "new files cannot be read one by one",
            hint="use a Delta-enabled Spark session, or max_target on a watermark_field",
        )
    frame = read_files(spark, current, list(state.added.values()))
    return DeltaChanges(frame, previous, current.version, len(state.added), state.rewritten)


@dataclass
class _Compaction:
    """A compaction (no data change) that moved new rows of the range into its output files."""

    inputs: list[str]  # the new files it compacted (still read: their rows are exactly the new ones)
    outputs: dict[str, DeltaFile]
    older: int  # files from before the range it merged in


@dataclass
class _RangeState:
    """The commits of a ``delta_version`` range folded so far."""

    added: dict[str, DeltaFile] = field(default_factory=dict)  # the files whose rows are read
    compactions: dict[str, _Compaction] = field(default_factory=dict)  # by output file
    rewritten: int = 0  # older files whose kept rows come again


def _apply_commit(
    actions: list[dict[str, Any]], state: _RangeState, current: DeltaSnapshot, path: str
) -> None:
    """Fold one commit into ``state``.

    * a file added as a data change holds new rows;
    * a file removed as a data change had rows updated or deleted: the rows it kept are in the files the
      same commit adds, so a new file is dropped, and an older one's kept rows come again;
    * a compaction (no data change) of new files is remembered, and those files are still read (their
      rows exactly); a compaction of older files only is skipped. When a later commit touches one of its
      outputs, the new rows are no longer where they were: its outputs are read whole instead (with the
      older rows it merged in, which come again), and the commit acts on them as on any read file."""
    adds = [a["add"] for a in actions if "add" in a]
    removes = [
        (unquote(str(a["remove"]["path"])), a["remove"].get("dataChange", True))
        for a in actions
        if "remove" in a
    ]
    for add in adds:
        if add.get("deletionVector"):
            raise UnsupportedError(
                f"delta_version over {path}: a commit marks deleted rows with deletion vectors, which a "
                "read of its files cannot apply",
                hint="use a Delta-enabled Spark session, or max_target on a watermark_field",
            )
    for relative, _ in removes:
        touched = state.compactions.get(relative)
        if touched is not None:
            _read_outputs_whole(state, touched)
    columns = current.partition_columns
    new = [delta_file(str(a["path"]), columns) for a in adds if a.get("dataChange", True)]
    moved = [delta_file(str(a["path"]), columns) for a in adds if not a.get("dataChange", True)]
    carried: list[str] = []
    older = 0
    for relative, data_change in removes:
        was_read = relative in state.added
        if data_change:
            state.added.pop(relative, None)
            # a file removed whole, with nothing added, had all its rows deleted: nothing comes again
            state.rewritten += 0 if was_read or not new else 1
        elif was_read:
            carried.append(relative)
        else:
            older += 1
    if carried:
        compaction = _Compaction(carried, {f.relative: f for f in moved}, older)
        for output in compaction.outputs:
            state.compactions[output] = compaction
    for file in new:
        state.added[file.relative] = file


def _read_outputs_whole(state: _RangeState, compaction: _Compaction) -> None:
    for relative in compaction.inputs:
        state.added.pop(relative, None)
    for relative, file in compaction.outputs.items():
        state.compactions.pop(relative, None)
        state.added[relative] = file
    state.rewritten += compaction.older


def _commit_actions(spark: SparkSession, root: str, version: int, path: str) -> list[dict[str, Any]]:
    """The actions of one commit, from its log file (``_delta_log/<version>.json``, one per line)."""
    from lakelogic.tables.spark_fs import HadoopFS

    log = f"{root}/_delta_log/{version:020d}.json"
    fs = HadoopFS(spark, root)
    if not fs.exists(log):
        raise SourceError(
            f"the Delta source {path} no longer holds the log of version {version} (log retention), so the "
            "commits after this contract's stored cursor cannot be told apart",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        )
    return [json.loads(line) for line in fs.read_text(log).splitlines() if line.strip()]
