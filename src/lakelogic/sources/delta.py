"""Delta tables as sources and links: Spark's own Delta reader when the session has it, else the table's
Parquet files read by Spark after delta-rs resolved which files make up the snapshot.

The delta-rs path reads only the transaction log on the driver; the rows are read by Spark's executors
(no data passes through the driver, so large bronze tables are read as fast as plain Parquet). A table
whose files Spark cannot read as plain Parquet (deletion vectors, column mapping, non-Hive partition
directories) is read through delta-rs and Arrow on the driver instead, with a warning: correct, but
only fit for small tables.

``read_delta_since`` serves the ``delta_version`` watermark strategy (SEMANTICS §3.4): the rows of the
files a commit after the stored version added.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
from loguru import logger

from lakelogic.errors import MissingDependencyError, SourceError, UnsupportedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Reader features whose tables still read correctly as their plain Parquet files.
_PLAIN_PARQUET_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
DELTA_VERSION_STRATEGY = "delta_version"
# report.watermark.field of a delta_version run: its cursor is a table version, not a column.
DELTA_VERSION_FIELD = "_delta_version"


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
class DeltaSnapshot:
    """One version of a Delta table as its live data files (relative path -> absolute URI)."""

    path: str
    version: int
    schema: StructType
    partition_columns: tuple[str, ...]
    files: dict[str, str]
    # why Spark cannot read the files as plain Parquet; None when it can
    not_plain_parquet: str | None


def snapshot(path: str, version: int | None = None) -> DeltaSnapshot:
    """The table at ``path`` at ``version`` (default: the latest), from its log only."""
    from pyspark.sql.types import StructType

    deltalake = _deltalake()
    try:
        table = deltalake.DeltaTable(path, version=version)
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    except Exception as exc:  # delta-rs raises its own types; the source error names the table and version
        at = f" at version {version}" if version is not None else ""
        raise SourceError(f"cannot read the Delta table at {path}{at}: {exc}") from exc
    partition_columns = tuple(table.metadata().partition_columns)
    root = str(table.table_uri).rstrip("/")
    # a log path is a URI (percent-encoded); the file on storage has the decoded name
    files = {str(a["path"]): f"{root}/{unquote(str(a['path']))}" for a in actions}
    schema = StructType.fromJson(json.loads(table.schema().to_json()))
    return DeltaSnapshot(
        root,
        int(table.version()),
        schema,
        partition_columns,
        files,
        _not_plain_parquet(table, actions, partition_columns),
    )


def _not_plain_parquet(
    table: Any, actions: list[dict[str, Any]], partition_columns: tuple[str, ...]
) -> str | None:
    protocol = table.protocol()
    features = set(protocol.reader_features or ())
    unknown = sorted(features - _PLAIN_PARQUET_FEATURES)
    if unknown:
        return f"reader features {', '.join(unknown)}"
    mapping = (table.metadata().configuration or {}).get("delta.columnMapping.mode")
    if protocol.min_reader_version == 2 or (mapping and mapping != "none"):
        return "column mapping"
    if any(v is not None for a in actions for k, v in a.items() if k.startswith("deletionVector")):
        return "deletion vectors"
    for action in actions:
        directories = unquote(str(action["path"])).split("/")[:-1]
        names = [d.split("=", 1)[0] for d in directories]
        if names != list(partition_columns):
            return f"partition directories that are not Hive-style ({action['path']})"
    return None


def read_snapshot(spark: SparkSession, snap: DeltaSnapshot, relatives: list[str] | None = None) -> DataFrame:
    """The rows of ``relatives`` (default: every live file) of ``snap``, read by Spark."""
    chosen = list(snap.files) if relatives is None else relatives
    if not chosen:
        return spark.createDataFrame([], snap.schema)
    if snap.not_plain_parquet is not None:
        if relatives is not None:
            raise UnsupportedError(
                f"the Delta table {snap.path} has {snap.not_plain_parquet}: its files cannot be read one by "
                "one, so the delta_version strategy cannot read only the new ones",
                hint="use watermark_strategy max_target or pipeline_log on a watermark_field instead",
            )
        return _read_through_arrow(spark, snap)
    # basePath: the partition columns come from the Hive-style directories, typed by the Delta schema
    frame = (
        spark.read.schema(snap.schema).option("basePath", snap.path).parquet(*[snap.files[r] for r in chosen])
    )
    return frame.select(*[f"`{name.replace('`', '``')}`" for name in snap.schema.fieldNames()])


def _read_through_arrow(spark: SparkSession, snap: DeltaSnapshot) -> DataFrame:
    logger.warning(
        "Delta table {} has {}: Spark cannot read its files as Parquet, so delta-rs reads it on the driver "
        "(fine for small tables; use a Delta-enabled Spark session for large ones)",
        snap.path,
        snap.not_plain_parquet,
    )
    table = _deltalake().DeltaTable(snap.path, version=snap.version).to_pyarrow_table()
    # rows as Python values keep the declared types (pandas would turn an int column with NULLs into
    # doubles holding NaN, and decimals into decimal(38,18))
    return spark.createDataFrame(table.to_pylist(), snap.schema)


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    """The latest version of the Delta table at ``path``."""
    if _session_has_delta(spark):
        return spark.read.format("delta").load(path)
    return read_snapshot(spark, snapshot(path))


def stored_version(field: str | None, value: str | None) -> int | None:
    """The Delta version a run-log cursor holds; None when the cursor is another strategy's (or none)."""
    if field != DELTA_VERSION_FIELD or value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError as exc:
        raise SourceError(
            f"the stored delta_version cursor {value!r} is not a table version",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        ) from exc


@dataclass(frozen=True)
class DeltaChanges:
    """What a ``delta_version`` run reads: the files added after ``previous`` up to ``current``."""

    frame: DataFrame
    previous: int | None
    current: int
    added_files: int
    # files live at ``previous`` that ``current`` no longer has: their rows were updated or deleted, and
    # the rewritten rows come again with the added files
    removed_files: int


def read_delta_since(spark: SparkSession, path: str, previous: int | None) -> DeltaChanges:
    """The rows committed after version ``previous`` (None: every row), up to the latest version.

    New rows are those of the data files live now that were not live at ``previous``. A commit that
    updated or deleted rows rewrote their files, so the rewritten files' rows are read again (what Delta
    streaming's ``ignoreChanges`` does); merge and SCD2 targets absorb them, and the count of removed
    files is reported so an append target's owner can tell."""
    current = snapshot(path)
    if previous is None:
        return DeltaChanges(read_snapshot(spark, current), None, current.version, len(current.files), 0)
    if previous > current.version:
        raise SourceError(
            f"the Delta source {path} is at version {current.version}, before this contract's stored "
            f"cursor {previous}: the table was re-created",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        )
    if previous == current.version:
        return DeltaChanges(read_snapshot(spark, current, []), previous, current.version, 0, 0)
    try:
        before = snapshot(path, previous)
    except SourceError as exc:
        raise SourceError(
            f"the Delta source {path} no longer holds version {previous}, this contract's stored cursor "
            f"(its log was cleaned up): the commits after it cannot be told apart",
            hint="reset the contract (lakelogic reset) so its next run reads the table in full",
        ) from exc
    added = [r for r in current.files if r not in before.files]
    removed = sum(1 for r in before.files if r not in current.files)
    frame = read_snapshot(spark, current, added)
    return DeltaChanges(frame, previous, current.version, len(added), removed)
