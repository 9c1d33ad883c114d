"""The run log as an Iceberg table (``--run-log-backend iceberg``, DRIVER §15.1), written through Spark.

``--run-log-database`` names the namespace (``catalog.namespace``; default ``<default catalog>.lakelogic``)
and ``--run-log-table`` the table (``run_log``). Each row is one ``MERGE INTO`` by ``run_id`` (one Iceberg
commit; conflicting commits of concurrent drivers are retried). Reads collect the table (run-log rows, not
data) into an in-memory DuckDB connection and run the same queries as the embedded store, so windows,
resets and freshness mean the same in every backend. Instants are ``timestamp_ntz`` holding UTC, as the
embedded store keeps them, so no session time zone shifts them.

Importing this module registers the backend with :mod:`lakelogic.runlog` (the run log itself imports no
engine).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lakelogic.runlog import register_backend
from lakelogic.runlog.snapshot_store import SnapshotRunLogStore, primary_key, retry_commit
from lakelogic.runlog.store import _IDENT, DEFAULT_TABLE, RunLogError, _lock_for

_SPARK_TYPES = {
    "VARCHAR": "STRING",
    "BIGINT": "BIGINT",
    "INTEGER": "INT",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP_NTZ",
}


def _spark_type(kind: str) -> str:
    base = kind.split()[0].upper()
    if base not in _SPARK_TYPES:
        raise RunLogError(f"internal: no Iceberg type for run-log column type {kind!r}")
    return _SPARK_TYPES[base]


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    return {
        "STRING": pa.string(),
        "BIGINT": pa.int64(),
        "INT": pa.int32(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP_NTZ": pa.timestamp("us"),
    }[_spark_type(kind)]


def _is_conflict(exc: BaseException) -> bool:
    """A concurrent commit won (the same refusals the table writes retry, e.g. a failed isolation check)."""
    from lakelogic.tables.conflicts import as_conflict

    return as_conflict(exc, "the run log") is not None


class IcebergRunLogStore(SnapshotRunLogStore):
    """Run-log rows in an Iceberg table of a Spark catalog (see the module docstring)."""

    backend = "iceberg"

    def __init__(
        self, database: str | Path | None = None, table: str = DEFAULT_TABLE, *, spark: Any = None
    ) -> None:
        from lakelogic.engines.spark.session import default_catalog

        if not _IDENT.match(table):
            raise RunLogError(f"invalid run-log table name {table!r}", hint="use name or schema.name")
        namespace = str(database) if database else f"{default_catalog()}.lakelogic"
        if not all(_IDENT.match(part) for part in namespace.split(".")):
            raise RunLogError(
                f"invalid Iceberg run-log namespace {namespace!r}", hint="use catalog.namespace"
            )
        self.namespace = namespace
        self.table = table
        self.path = Path(namespace)  # what the other stores call their location
        self._spark = spark
        self._lock = _lock_for(Path(f"iceberg:{namespace}.{table}"))

    def __repr__(self) -> str:
        return f"IcebergRunLogStore({self.namespace!r}, table={self.table!r})"

    @property
    def spark(self) -> Any:
        if self._spark is None:
            from lakelogic.engines.spark.session import spark_session

            self._spark = spark_session()
        return self._spark

    def qualified(self, table: str | None = None) -> str:
        return f"{self.namespace}.{table or self.table}"

    def exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.qualified()))

    def _snapshot(self) -> Any:
        import pyarrow as pa

        if not self.exists():
            return None
        frame = self.spark.table(self.qualified())
        rows = [r.asDict() for r in frame.collect()]  # run-log rows, never pipeline data
        schema = pa.schema([pa.field(f.name, _arrow_type(_kind_of(f.dataType))) for f in frame.schema.fields])
        return pa.Table.from_pylist(rows, schema=schema)

    def upsert(self, table: str, columns: Mapping[str, str], row: Mapping[str, Any]) -> None:
        """Insert or replace ``row`` by the primary-key column (one MERGE commit); creates the table."""
        key = primary_key(table, columns)
        name = self.qualified(table)
        ddl = ", ".join(f"`{c}` {_spark_type(kind)}" for c, kind in columns.items())
        view = f"_ll_runlog_{uuid.uuid4().hex[:12]}"

        def action() -> None:
            spark = self.spark
            with self._lock:
                spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
                spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({ddl}) USING iceberg")
                values = [tuple(row.get(c) for c in columns)]
                spark.createDataFrame(values, schema=ddl).createOrReplaceTempView(view)
                try:
                    spark.sql(
                        f"MERGE INTO {name} t USING {view} s ON t.`{key}` = s.`{key}` "
                        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                    )
                finally:
                    spark.catalog.dropTempView(view)

        retry_commit(action, _is_conflict)


def _kind_of(data_type: Any) -> str:
    """The run-log column type (DuckDB names) of a Spark type read back from the table."""
    names = {
        "string": "VARCHAR",
        "bigint": "BIGINT",
        "int": "INTEGER",
        "double": "DOUBLE",
        "boolean": "BOOLEAN",
        "timestamp_ntz": "TIMESTAMP",
    }
    simple = data_type.simpleString()
    if simple not in names:
        raise RunLogError(f"run-log column of unexpected type {simple}")
    return names[simple]


register_backend("iceberg", IcebergRunLogStore)
