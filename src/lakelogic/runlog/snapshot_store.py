"""What the lakehouse-table run logs (Delta, Iceberg) share: queries over a snapshot, keyed upserts retried.

A subclass says how to read its table's current rows as Arrow (:meth:`SnapshotRunLogStore._snapshot`) and
how to upsert one row. Reads register the snapshot in an in-memory DuckDB connection under the store's table
name and run the embedded store's queries unchanged, so windows, resets and freshness are defined once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_delay, wait_random_exponential

from lakelogic.runlog.store import _IDENT, DuckDBRunLogStore, RunLogError, _import_duckdb


def primary_key(table: str, columns: Mapping[str, str]) -> str:
    """The one ``PRIMARY KEY`` column of a run-log table (the upsert key), after checking the name."""
    if not _IDENT.match(table):
        raise RunLogError(f"invalid table name {table!r}", hint="use name or schema.name")
    keys = [name for name, kind in columns.items() if "PRIMARY KEY" in kind.upper()]
    if len(keys) != 1:
        raise RunLogError("internal: a run-log table needs exactly one primary-key column")
    return keys[0]


def retry_commit(action: Callable[[], None], is_conflict: Callable[[BaseException], bool]) -> None:
    """Run a commit, again while a concurrent writer wins (optimistic concurrency), for up to 60 s."""
    retrying = retry(
        retry=retry_if_exception(is_conflict),
        stop=stop_after_delay(60),
        wait=wait_random_exponential(multiplier=0.05, max=2),
        reraise=True,
    )
    retrying(action)()


class SnapshotRunLogStore(DuckDBRunLogStore):
    """A run log whose rows live in a lakehouse table; see the module docstring."""

    def _snapshot(self) -> Any:
        """The table's current rows as an Arrow table with naive-UTC instants, or None without a table."""
        raise NotImplementedError

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        duckdb = _import_duckdb()
        con = duckdb.connect()
        try:
            con.execute("SET TimeZone = 'UTC'")
            snapshot = self._snapshot()
            if snapshot is not None:
                con.register("_lakelogic_snapshot", snapshot)
                if "." in self.table:
                    con.execute(f"CREATE SCHEMA IF NOT EXISTS {self.table.split('.')[0]}")
                con.execute(f"CREATE VIEW {self.table} AS SELECT * FROM _lakelogic_snapshot")
            yield con
        finally:
            con.close()

    def _table_exists(self, con: Any) -> bool:
        return self.exists()
