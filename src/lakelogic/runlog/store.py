"""The embedded run-log store: a DuckDB file with one ``run_log`` table (DRIVER §15.1).

Writes are serialised by one process-wide lock per database file and use a fresh connection each, so
driver worker threads can record concurrently. Another process holding the file is retried for 60 s.
DuckDB is imported lazily: ``import lakelogic`` stays light.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from tenacity import retry, retry_if_exception, stop_after_delay, wait_random_exponential

from lakelogic.errors import LakeLogicError, MissingDependencyError
from lakelogic.runlog.record import (
    BOOLEAN_COLUMNS,
    RUN_LOG_COLUMNS,
    TIMESTAMP_COLUMNS,
    normalise_row,
    to_utc_naive,
)

T = TypeVar("T")

DEFAULT_TABLE = "run_log"
DEFAULT_FILE = "lakelogic.duckdb"
SUCCESS_STATUSES = ("succeeded", "partial", "no_new_data")
# A run about to commit its target writes this row first; its final row replaces it (upsert by run id). A
# row still ``committing`` later means the process stopped after the intent: whether the target holds the
# commit decides what it was (``lakelogic.engines.spark.commit_recovery``).
COMMITTING = "committing"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")

_locks_guard = threading.Lock()
_locks: dict[str, threading.RLock] = {}


class RunLogError(LakeLogicError):
    error_type = "run_log"


def _lock_for(path: Path) -> threading.RLock:
    key = str(path.resolve())
    with _locks_guard:
        return _locks.setdefault(key, threading.RLock())


def find_project_root(start: Path | None = None) -> Path:
    """First ancestor (inclusive) with ``.git``, ``pyproject.toml`` or ``lakelogic.yaml``, else ``start``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if any((candidate / marker).exists() for marker in (".git", "pyproject.toml", "lakelogic.yaml")):
            return candidate
    return here


def lakelogic_home(start: Path | None = None) -> Path:
    """``$LAKELOGIC_HOME``, else the project's ``.lakelogic`` folder (project root found from ``start``)."""
    home = os.environ.get("LAKELOGIC_HOME")
    return Path(home).expanduser() if home else find_project_root(start) / ".lakelogic"


def default_database_path(start: Path | None = None) -> Path:
    """``$LAKELOGIC_RUNLOG`` (a file), else ``$LAKELOGIC_HOME/lakelogic.duckdb``, else ``.lakelogic/``."""
    explicit = os.environ.get("LAKELOGIC_RUNLOG")
    if explicit:
        return Path(explicit).expanduser()
    return lakelogic_home(start) / DEFAULT_FILE


def is_table_name(name: str) -> bool:
    """``name`` or ``schema.name``, as the run-log and summary tables are named."""
    return bool(_IDENT.match(name))


def _is_lock_conflict(exc: BaseException) -> bool:
    # DuckDB reports another process holding the file as an IOException mentioning the lock.
    return type(exc).__name__ == "IOException" and "lock" in str(exc).lower()


def _import_duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is a core dependency
        raise MissingDependencyError("the run log needs duckdb", hint="pip install duckdb") from exc
    return duckdb


def _aware(row: dict[str, Any]) -> dict[str, Any]:
    for name in TIMESTAMP_COLUMNS:
        value = row.get(name)
        if isinstance(value, datetime) and value.tzinfo is None:
            row[name] = value.replace(tzinfo=UTC)
    return row


class DuckDBRunLogStore:
    """Run log in a DuckDB file. ``table`` may be ``schema.table`` (the schema is created)."""

    backend = "duckdb"

    def __init__(self, database: str | Path | None = None, table: str = DEFAULT_TABLE) -> None:
        if not _IDENT.match(table):
            raise RunLogError(f"invalid run-log table name {table!r}", hint="use name or schema.name")
        self.path = Path(database).expanduser() if database else default_database_path()
        self.table = table
        self._lock = _lock_for(self.path)

    def __repr__(self) -> str:
        return f"DuckDBRunLogStore({str(self.path)!r}, table={self.table!r})"

    # --- connections ------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        duckdb = _import_duckdb()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            if _is_lock_conflict(exc):  # another process writes: retried by the caller
                raise
            raise RunLogError(
                f"the run log {self.path} cannot be opened as a DuckDB database: {exc}"
            ) from None
        try:
            yield con
        finally:
            con.close()

    def _with_retry(self, action: Callable[[], T]) -> T:
        retrying = retry(
            retry=retry_if_exception(_is_lock_conflict),
            stop=stop_after_delay(60),
            wait=wait_random_exponential(multiplier=0.05, max=2),
            reraise=True,
        )
        return retrying(action)()

    def _create(self, con: Any, table: str, columns: Mapping[str, str]) -> None:
        if "." in table:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {table.split('.')[0]}")
        cols = ", ".join(f"{name} {kind}" for name, kind in columns.items())
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols})")

    def _table_exists(self, con: Any) -> bool:
        schema, _, name = self.table.rpartition(".")
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ? AND table_schema = ?",
            [name, schema or "main"],
        ).fetchone()
        return bool(found and found[0])

    def _encode(self, value: Any) -> Any:
        """A Python value as the database stores it (DuckDB takes datetimes and booleans as they are)."""
        return value

    def _decode(self, row: dict[str, Any]) -> dict[str, Any]:
        return _aware(row)

    def upsert(self, table: str, columns: Mapping[str, str], row: Mapping[str, Any]) -> None:
        """Insert or replace ``row`` (by the table's primary key), creating ``table`` when missing."""
        if not _IDENT.match(table):
            raise RunLogError(f"invalid table name {table!r}", hint="use name or schema.name")
        names = list(columns)
        placeholders = ", ".join("?" for _ in names)
        sql = f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({placeholders})"

        def action() -> None:
            with self._lock, self._connect() as con:
                self._create(con, table, columns)
                con.execute(sql, [self._encode(row.get(n)) for n in names])
                if hasattr(con, "commit"):
                    con.commit()

        self._with_retry(action)

    def exists(self) -> bool:
        """Whether the store file exists (a dry run reads only existing stores and never creates one)."""
        return self.path.exists()

    # --- writes -----------------------------------------------------------------------------

    def write(self, row: Mapping[str, Any]) -> None:
        """Upsert one row by ``run_id``."""
        self.upsert(self.table, RUN_LOG_COLUMNS, normalise_row(row))

    # --- reads ------------------------------------------------------------------------------

    def _select(
        self, where: Sequence[str], params: Sequence[Any], order: str, limit: int | None
    ) -> list[dict]:
        if not self.exists():
            return []
        sql = f"SELECT * FROM {self.table} AS t"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"

        def action() -> list[dict]:
            with self._lock, self._connect() as con:
                if not self._table_exists(con):
                    return []  # reads never create anything (a dry run writes nothing)
                cursor = con.execute(sql, list(params))
                names = [d[0] for d in cursor.description]
                return [self._decode(dict(zip(names, rec, strict=True))) for rec in cursor.fetchall()]

        return self._with_retry(action)

    def query(
        self,
        *,
        contract: str | None = None,
        layer: str | None = None,
        status: str | None = None,
        pipeline_run_id: str | None = None,
        last: int | None = None,
    ) -> list[dict[str, Any]]:
        """Rows newest first, filtered by any of the given columns."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("contract", contract),
            ("layer", layer),
            ("status", status),
            ("pipeline_run_id", pipeline_run_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        return self._select(where, params, "started_at DESC NULLS LAST, run_id DESC", last)

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self._select(["run_id = ?"], [run_id], "run_id", 1)
        return rows[0] if rows else None

    def _after_reset(self, contract: str) -> tuple[list[str], list[Any]]:
        # Rows before the latest reset row are invisible to window and freshness decisions (DRIVER §15.1).
        where = [
            "contract = ?",
            f"NOT EXISTS (SELECT 1 FROM {self.table} AS r WHERE r.contract = ? AND r.status = 'reset' "
            "AND r.started_at > t.started_at)",
        ]
        return where, [contract, contract]

    def last_success(self, contract: str) -> dict[str, Any] | None:
        """Latest successful run after the latest reset that is no reprocess and skipped no write (the
        ``last_success`` window start)."""
        return self._last_success(contract, [])

    def last_cursor(self, contract: str, field: str) -> dict[str, Any] | None:
        """The latest successful run (as for :meth:`last_success`) that stored a cursor of ``field`` (a
        ``delta_version`` run's table version): runs in between that store none (a range or backfill
        window) do not make the next incremental run start from scratch."""
        return self._last_success(contract, ["watermark_field = ?"], [field])

    def _last_success(
        self, contract: str, conditions: list[str], values: list[Any] | None = None
    ) -> dict[str, Any] | None:
        where, params = self._after_reset(contract)
        statuses = ", ".join(f"'{s}'" for s in SUCCESS_STATUSES)
        # a reprocess rewrote old windows; a no_write run committed nothing (lakelogic run --no-write).
        # A run that failed after its target commit (e.g. its quarantine write) has its rows in the
        # target: the next window starts after them, or an append target would get them twice.
        where += [
            f"(status IN ({statuses}) OR (status = 'failed' AND committed))",
            "COALESCE(run_mode, '') NOT IN ('reprocess', 'no_write')",
            *conditions,
        ]
        rows = self._select(
            where, [*params, *(values or [])], "window_end DESC NULLS LAST, finished_at DESC NULLS LAST", 1
        )
        return rows[0] if rows else None

    def pending_commits(self, contract: str) -> list[dict[str, Any]]:
        """Rows of ``contract`` still ``committing`` (after the latest reset) that end later than its last
        success: the only ones that could move its next window or cursor. Newest first."""
        where, params = self._after_reset(contract)
        where.append(f"status = '{COMMITTING}'")
        pending = self._select(where, params, "started_at DESC NULLS LAST", 10)
        if not pending:  # the usual case: one query
            return []
        last = self.last_success(contract)
        end = to_utc_naive(last.get("window_end")) if last else None
        began = to_utc_naive(last.get("started_at")) if last else None
        if last is None:
            return pending
        return [row for row in pending if _ends_after(row, end, began)]

    def latest_run(self, contract: str) -> dict[str, Any] | None:
        """Latest non-skipped run after the latest reset (upstream freshness, DRIVER §7). A run still
        ``committing`` (or stopped there) has not finished: it tells nothing about freshness."""
        where, params = self._after_reset(contract)
        where.append(f"status NOT IN ('skipped', 'reset', '{COMMITTING}')")
        rows = self._select(where, params, "started_at DESC NULLS LAST", 1)
        return rows[0] if rows else None


def _ends_after(row: Mapping[str, Any], end: datetime | None, began: datetime | None) -> bool:
    """Whether ``row`` ends after a last success that ended at ``end`` and started at ``began``: by window
    end, else (no window) by start."""
    row_end = to_utc_naive(row.get("window_end"))
    row_start = to_utc_naive(row.get("started_at"))
    if end is not None and row_end is not None:
        return row_end > end
    reference = began or end
    return reference is None or (row_start is not None and row_start > reference)


def _sqlite_text(value: Any) -> Any:
    if isinstance(value, datetime):
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return naive.isoformat(sep=" ", timespec="microseconds")  # sorts like the instant it names
    if isinstance(value, bool):
        return int(value)
    return value


class SQLiteRunLogStore(DuckDBRunLogStore):
    """The same run log in a SQLite file (``--run-log-backend sqlite``); instants stored as ISO text."""

    backend = "sqlite"

    def __init__(self, database: str | Path | None = None, table: str = DEFAULT_TABLE) -> None:
        if "." in table:
            raise RunLogError(f"SQLite run-log table {table!r} cannot have a schema", hint="use a plain name")
        path = Path(database) if database else default_database_path().with_suffix(".sqlite")
        super().__init__(path, table)

    def __repr__(self) -> str:
        return f"SQLiteRunLogStore({str(self.path)!r}, table={self.table!r})"

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        import sqlite3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(str(self.path), timeout=60)  # waits for another process's write lock
        try:
            yield con
        finally:
            con.close()

    def _create(self, con: Any, table: str, columns: Mapping[str, str]) -> None:
        if "." in table:
            raise RunLogError(f"SQLite table {table!r} cannot have a schema", hint="use a plain name")
        cols = ", ".join(f"{name} {kind}" for name, kind in columns.items())
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols})")

    def _table_exists(self, con: Any) -> bool:
        found = con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [self.table]
        )
        row = found.fetchone()
        return bool(row and row[0])

    def _encode(self, value: Any) -> Any:
        return _sqlite_text(value)

    def _decode(self, row: dict[str, Any]) -> dict[str, Any]:
        for name in TIMESTAMP_COLUMNS:
            if isinstance(row.get(name), str):
                row[name] = datetime.fromisoformat(row[name]).replace(tzinfo=UTC)
        for name in BOOLEAN_COLUMNS:
            if row.get(name) is not None:
                row[name] = bool(row[name])
        return row
