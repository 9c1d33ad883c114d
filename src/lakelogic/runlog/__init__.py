"""Run log: one row per contract run (DRIVER §15.1), pipeline summaries and metrics.

``record_run`` is the one entry point every runner uses (``lakelogic run``, the API with
``materialize=True``, the driver). The default store is an embedded DuckDB file under the project's
``.lakelogic/`` folder; see :func:`lakelogic.runlog.store.default_database_path`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lakelogic.report import RunReport
from lakelogic.runlog.record import RUN_LOG_COLUMNS, row_from_report
from lakelogic.runlog.store import (
    COMMITTING,
    DEFAULT_TABLE,
    SUCCESS_STATUSES,
    DuckDBRunLogStore,
    RunLogError,
    SQLiteRunLogStore,
    default_database_path,
    find_project_root,
)

RunLogStore = DuckDBRunLogStore

# A process-wide store chosen by the caller that owns the process (the driver's --run-log-database), so
# record_run calls made deeper down (the API with materialize=True) land in the same store.
_process_store: RunLogStore | None = None


BACKENDS = ("duckdb", "sqlite", "delta", "iceberg")
# Backends that live with an engine (iceberg: lakelogic.engines.spark.runlog_iceberg) register a factory
# ``(database, table) -> store`` when imported; the run log itself imports no engine.
_FACTORIES: dict[str, Callable[[Any, str], RunLogStore]] = {}


def register_backend(name: str, factory: Callable[[Any, str], RunLogStore]) -> None:
    _FACTORIES[name] = factory


def _engine_store(backend: str, database: Any, table: str) -> RunLogStore:
    if backend not in _FACTORIES:
        raise RunLogError(
            f"the {backend} run-log backend comes with the Spark engine, which is not loaded",
            hint="import lakelogic.engines.spark.runlog_iceberg (the CLI and the Spark runtime do)",
        )
    return _FACTORIES[backend](database, table)


def set_default_store(store: RunLogStore | None) -> None:
    """Make ``store`` what ``open_store(None)`` returns in this process (None restores the default)."""
    global _process_store
    _process_store = store


__all__ = [
    "BACKENDS",
    "COMMITTING",
    "DEFAULT_TABLE",
    "RUN_LOG_COLUMNS",
    "RUN_LOG_KEYS",
    "SUCCESS_STATUSES",
    "DuckDBRunLogStore",
    "RunLogError",
    "RunLogStore",
    "SQLiteRunLogStore",
    "default_database_path",
    "find_project_root",
    "names_store",
    "open_store",
    "record_commit_intent",
    "record_run",
    "register_backend",
    "row_from_report",
    "set_default_store",
    "store_for_contract",
    "store_for_metadata",
    "store_location",
    "store_settings",
]


def open_store(
    store: RunLogStore | str | Path | None = None,
    *,
    table: str | None = None,
    backend: str | None = None,
) -> RunLogStore:
    """A store from an instance, a database path, or the default location."""
    if backend not in (None, *BACKENDS):
        raise RunLogError(
            f"run-log backend {backend!r} is not available",
            hint=f"allowed: {', '.join(BACKENDS)} (duckdb is the default embedded store)",
        )
    if isinstance(store, DuckDBRunLogStore):
        return store
    if store is None and table is None and backend is None and _process_store is not None:
        return _process_store
    if backend == "sqlite":
        return SQLiteRunLogStore(store, table or DEFAULT_TABLE)
    if backend == "delta":
        from lakelogic.runlog.delta_store import DeltaRunLogStore

        return DeltaRunLogStore(store, table or DEFAULT_TABLE)
    if backend == "iceberg":
        return _engine_store(backend, store, table or DEFAULT_TABLE)
    return DuckDBRunLogStore(store, table or DEFAULT_TABLE)


RUN_LOG_KEYS = ("run_log_backend", "run_log_database", "run_log_table")


def names_store(metadata: Mapping[str, Any] | None) -> bool:
    """True when ``metadata`` chooses a run-log store of its own (any ``run_log_*`` key)."""
    return any((metadata or {}).get(k) is not None for k in RUN_LOG_KEYS)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # s3://…, dbfs:/…, abfss://… (not a one-letter drive)


def store_settings(
    metadata: Mapping[str, Any] | None, contract_file: str | Path | None = None
) -> tuple[str | None, str | None, str | None]:
    """``(backend, database, table)`` a contract's ``metadata.run_log_*`` names (blank values count as
    unset). A relative file path (the embedded, SQLite and Delta stores) is taken from the project root of
    ``contract_file``, where the default store lives too, so the same contract finds the same log from any
    working directory."""
    meta = metadata or {}
    texts = [str(meta[k]).strip() if meta.get(k) is not None else "" for k in RUN_LOG_KEYS]
    backend, database, table = (text or None for text in texts)
    if database is not None and backend != "iceberg":  # an Iceberg log is named catalog.namespace
        path = Path(database).expanduser()
        if not path.is_absolute() and not _SCHEME.match(database) and contract_file is not None:
            database = str(find_project_root(Path(contract_file).resolve().parent) / path)
    return backend, database, table


def store_location(store: RunLogStore) -> str:
    """Where ``store`` keeps its tables: a file or folder, or an Iceberg ``catalog.namespace``."""
    return str(getattr(store, "namespace", None) or store.path)


def store_for_metadata(
    metadata: Mapping[str, Any] | None,
    contract_file: str | Path | None = None,
    *,
    default: RunLogStore | None = None,
) -> RunLogStore:
    """The store a contract asks for (``metadata.run_log_backend|database|table``), else ``default`` (the
    process store when not given). A contract naming only its table keeps the default's location and
    backend: the table is all it chose."""
    backend, database, table = store_settings(metadata, contract_file)
    base = default or _process_store
    if backend is None and database is None and base is not None:
        if table is None or table == getattr(base, "table", None):
            return base
        return open_store(store_location(base), table=table, backend=getattr(base, "backend", None))
    return open_store(database, table=table, backend=backend)


def store_for_contract(contract: Any, contract_file: str | Path | None = None) -> RunLogStore:
    """The store ``contract`` records to: its ``metadata.run_log_*``, relative paths from its file's
    project root (``contract_file`` when the contract object was not loaded from a file)."""
    metadata = getattr(contract, "metadata", None)
    file = contract_file or getattr(contract, "source_file", None)
    return store_for_metadata(metadata if isinstance(metadata, Mapping) else None, file)


def record_run(
    report: RunReport,
    *,
    entity: str | None = None,
    skip_reason: str | None = None,
    upstream_cause: str | None = None,
    root_cause: str | None = None,
    store: RunLogStore | str | Path | None = None,
    **extra: Any,
) -> None:
    """Write (upsert by ``run_id``) the run-log row of ``report``.

    ``extra`` sets further driver columns: ``contract_file``, ``backfill_id``, ``run_mode``, ``gated``,
    ``gate_reason``, ``upstream_warnings``, ``attempts``, ``policy_packs``, ``overrides``, ``approved_by``,
    ``window_reason``. Unknown names are an error rather than silently lost.
    """
    row = row_from_report(
        report,
        entity=entity,
        skip_reason=skip_reason,
        upstream_cause=upstream_cause,
        root_cause=root_cause,
        **extra,
    )
    target = open_store(store)
    if report.materialization is not None and report.materialization.already_committed:
        # a resumed run whose commit had landed writes nothing; what that commit wrote stays on record
        prior = target.get(report.run_id)
        if prior is not None and prior.get("committed") and prior.get("status") in SUCCESS_STATUSES:
            for column in ("snapshot", "rows_inserted", "rows_updated", "rows_deleted"):
                row[column] = prior.get(column)
    target.write(row)


def record_commit_intent(
    report: RunReport, *, store: RunLogStore | str | Path | None = None, **extra: Any
) -> None:
    """Write the ``committing`` row of a run about to commit its target: the row its final
    :func:`record_run` replaces. If the process stops between the commit and that final row, the next run
    of the contract finds this row, sees the commit in the target, and records the run as it ended
    (``lakelogic.engines.spark.commit_recovery``) before it computes a window from the run log."""
    row = row_from_report(report, **extra)
    row.update(status=COMMITTING, finished_at=None, duration_seconds=None, committed=False)
    open_store(store).write(row)
