"""The run log as a Delta table (``--run-log-backend delta``, DRIVER §15.1), written with delta-rs.

No Spark: a run-log row is one small MERGE by ``run_id`` through the ``deltalake`` package, so the store works
wherever the driver runs and the table is readable by Spark, Databricks and every Delta reader. Reads load the
table into an in-memory DuckDB connection and run the same queries as the embedded store, so window,
freshness and reset semantics are shared, not re-implemented.

Location: ``--run-log-database`` is the folder holding the tables (default ``<LAKELOGIC_HOME or
.lakelogic>/delta``); table ``run_log`` lives in ``<folder>/run_log``, ``schema.table`` in
``<folder>/schema/table``. Concurrent writers are serialised by Delta's optimistic commits (a conflicting
commit is retried).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakelogic.runlog.snapshot_store import SnapshotRunLogStore, primary_key, retry_commit
from lakelogic.runlog.store import _IDENT, DEFAULT_TABLE, RunLogError, _lock_for, default_database_path


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    base = kind.split()[0].upper()
    types = {
        "VARCHAR": pa.string(),
        "BIGINT": pa.int64(),
        "INTEGER": pa.int32(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        # Delta's `timestamp` (an instant, UTC): readable without the timestampNtz table feature
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    }
    if base not in types:
        raise RunLogError(f"internal: no Delta type for run-log column type {kind!r}")
    return types[base]


def _value(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # rows carry naive UTC instants
    return value


def _naive_utc(table: Any) -> Any:
    """Instants as naive UTC (what the embedded store holds and its queries compare)."""
    import pyarrow as pa

    fields = [
        pa.field(f.name, pa.timestamp(f.type.unit)) if pa.types.is_timestamp(f.type) and f.type.tz else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def _is_conflict(exc: BaseException) -> bool:
    from deltalake.exceptions import CommitFailedError

    return isinstance(exc, CommitFailedError) or "version already exists" in str(exc).lower()


class DeltaRunLogStore(SnapshotRunLogStore):
    """Run-log rows in Delta tables under one folder (see the module docstring)."""

    backend = "delta"

    def __init__(self, database: str | Path | None = None, table: str = DEFAULT_TABLE) -> None:
        if not _IDENT.match(table):
            raise RunLogError(f"invalid run-log table name {table!r}", hint="use name or schema.name")
        self.path = Path(database).expanduser() if database else default_database_path().parent / "delta"
        self.table = table
        self._lock = _lock_for(self.path)

    def __repr__(self) -> str:
        return f"DeltaRunLogStore({str(self.path)!r}, table={self.table!r})"

    def location(self, table: str | None = None) -> str:
        return str(self.path.joinpath(*(table or self.table).split(".")))

    def exists(self) -> bool:
        from deltalake import DeltaTable

        return bool(DeltaTable.is_deltatable(self.location()))

    def _snapshot(self) -> Any:
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.location()):
            return None
        return _naive_utc(DeltaTable(self.location()).to_pyarrow_table())

    def upsert(self, table: str, columns: Mapping[str, str], row: Mapping[str, Any]) -> None:
        """Insert or replace ``row`` by the primary-key column, creating the Delta table when missing."""
        import pyarrow as pa
        from deltalake import DeltaTable, write_deltalake

        key = primary_key(table, columns)
        schema = pa.schema([pa.field(name, _arrow_type(kind)) for name, kind in columns.items()])
        batch = pa.Table.from_pylist([{n: _value(row.get(n)) for n in columns}], schema=schema)
        location = self.location(table)

        def action() -> None:
            with self._lock:
                if not DeltaTable.is_deltatable(location):
                    Path(location).mkdir(parents=True, exist_ok=True)
                    write_deltalake(location, batch, mode="append")
                    return
                (
                    DeltaTable(location)
                    .merge(
                        batch,
                        predicate=f"t.{key} = s.{key}",
                        source_alias="s",
                        target_alias="t",
                        merge_schema=True,  # a run-log column added by a later release is added
                    )
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute()
                )

        retry_commit(action, _is_conflict)
