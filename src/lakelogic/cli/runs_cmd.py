"""``lakelogic runs``: list run-log rows, newest first (DRIVER §15.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from lakelogic.runlog import open_store

DEFAULT_LAST = 20

COLUMNS = (
    "started_at",
    "contract",
    "layer",
    "status",
    "duration_seconds",
    "counts_good",
    "counts_quarantined",
    "window_label",
    "detail",
)

HEADERS = {
    "started_at": "started (UTC)",
    "duration_seconds": "sec",
    "counts_good": "good",
    "counts_quarantined": "quar.",
    "window_label": "window",
}


def _detail(row: dict[str, Any]) -> str:
    if row.get("skip_reason"):
        text = str(row["skip_reason"])
        if row.get("root_cause"):
            text += f", root_cause {row['root_cause']}"
        if row.get("gate_reason"):
            text += f" ({row['gate_reason']})"
        return text
    if row.get("gated"):
        return f"gated: {row.get('gate_reason')}"
    if row.get("error_type"):
        return f"{row['error_type']}: {row.get('error_message') or ''}"[:120]
    return ""


def _contract_store(file: Path, env: str | None, default: Any, name: str | None) -> tuple[str, Any]:
    """The contract's name (unless ``--contract`` names one) and the store it records to (DRIVER §15.1:
    its ``metadata.run_log_*`` or its system's ``storage.run_log``, else ``default``)."""
    from lakelogic.cli.driver_support import load_backend
    from lakelogic.contract.hierarchy import resolve_effective
    from lakelogic.errors import LakeLogicError
    from lakelogic.runlog import store_for_metadata, store_settings

    try:
        effective = resolve_effective(file, env=env).contract
        load_backend(store_settings(effective.metadata, file)[0])
        store = store_for_metadata(effective.metadata, file, default=default)
    except LakeLogicError as exc:
        Console(stderr=True).print(f"[red]error[/red]: {exc}")
        raise typer.Exit(2) from None
    return name or effective.contract_name, store


def register(app: typer.Typer) -> None:
    """Add ``runs`` to the ``lakelogic`` app."""

    @app.command("runs")
    def runs(
        contract: str | None = typer.Option(None, "--contract", help="Contract name."),
        contract_file: Path | None = typer.Option(
            None,
            "--contract-file",
            exists=True,
            dir_okay=False,
            help="This contract's runs, from the run log it records to (its own, else the flags').",
        ),
        env: str | None = typer.Option(None, "--env", help="Environment for --contract-file."),
        layer: str | None = typer.Option(None, "--layer"),
        status: str | None = typer.Option(None, "--status"),
        pipeline_run_id: str | None = typer.Option(None, "--pipeline-run-id"),
        last: int | None = typer.Option(
            None, "--last", min=1, help="At most this many rows (default 20; all of one --pipeline-run-id)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Rows as JSON (report_json parsed)."),
        database: Path | None = typer.Option(None, "--run-log-database", help="Run-log DuckDB file."),
        table: str | None = typer.Option(None, "--run-log-table"),
        backend: str | None = typer.Option(
            None, "--run-log-backend", help="duckdb (default), sqlite, delta or iceberg"
        ),
    ) -> None:
        """List contract runs from the run log, newest first."""
        from lakelogic.cli.driver_support import load_backend
        from lakelogic.errors import LakeLogicError

        # one pipeline run's rows are listed whole: a silent cut at 20 would hide contracts of a larger mesh
        limit = last if last is not None else (None if pipeline_run_id else DEFAULT_LAST)
        try:
            load_backend(backend)
            store = open_store(database, table=table, backend=backend)
            if contract_file is not None:
                contract, store = _contract_store(contract_file, env, store, contract)
            rows = store.query(
                contract=contract,
                layer=layer,
                status=status,
                pipeline_run_id=pipeline_run_id,
                last=None if limit is None else limit + 1,
            )
        except LakeLogicError as exc:  # a bad backend, table name or run-log file: configuration
            Console(stderr=True).print(f"[red]error[/red]: {exc}", highlight=False)
            raise typer.Exit(2) from None
        cut = limit is not None and len(rows) > limit
        rows = rows[:limit] if limit is not None else rows
        # Piped output has no terminal width; do not squeeze the table into 80 columns.
        console = Console() if sys.stdout.isatty() else Console(width=160)
        if as_json:
            for row in rows:
                row["report"] = json.loads(row.pop("report_json") or "null")
            typer.echo(json.dumps(rows, default=str, indent=2))
            if cut:
                Console(stderr=True).print(f"the newest {limit} rows; more match (--last N for more)")
            return
        if not rows:
            console.print(f"no runs in {store.path}")
            return
        view = Table(title=f"runs ({store.path})")
        for column in COLUMNS:
            view.add_column(HEADERS.get(column, column), no_wrap=column != "detail")
        for row in rows:
            values = {**row, "detail": _detail(row)}
            if row.get("duration_seconds") is not None:
                values["duration_seconds"] = f"{row['duration_seconds']:.1f}"
            if row.get("started_at") is not None:
                values["started_at"] = row["started_at"].strftime("%m-%d %H:%M:%S")
            view.add_row(*(str(values.get(c) if values.get(c) is not None else "") for c in COLUMNS))
        console.print(view)
        if cut:
            console.print(f"the newest {limit} rows; more match (--last N for more)")
