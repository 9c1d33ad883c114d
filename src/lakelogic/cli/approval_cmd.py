"""``lakelogic approvals | approve | reject``: the batches the approval gate staged (DRIVER §11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lakelogic.errors import LakeLogicError

_RUN_IDS = typer.Option([], "--run-id", help="A staged run id (repeatable).")
_PIPELINE = typer.Option(None, "--pipeline-run-id", help="Every staged batch of this pipeline run.")
_CONTRACTS = typer.Option([], "--contracts", help="Only these contracts (comma-separated, repeatable).")
_RUN_LOG = typer.Option(None, "--run-log-database", help="The run log to update (default: the embedded one).")
_RUN_LOG_TABLE = typer.Option(None, "--run-log-table", help="Its table (as the driver's --run-log-table).")
_RUN_LOG_BACKEND = typer.Option(None, "--run-log-backend", help="duckdb (default), sqlite, delta or iceberg.")
_FORCE = typer.Option(
    False, "--force", help="Publish although a later run of the contract committed an overlapping window."
)


def _names(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _use_run_log(path: Path | None, table: str | None, backend: str | None) -> None:
    """Record in the run log the driver used (its --run-log-* options), unless a contract names its own."""
    if path is not None or table is not None or backend is not None:
        from lakelogic.cli.driver_support import load_backend
        from lakelogic.runlog import open_store, set_default_store

        load_backend(backend)
        set_default_store(open_store(path, table=table, backend=backend))


def _fail(exc: LakeLogicError) -> typer.Exit:
    """Exit 2 for a selection or configuration problem (nothing was written), 1 for a failed write."""
    from lakelogic.errors import ApprovalError
    from lakelogic.runlog import RunLogError

    Console(stderr=True).print(f"[red]error[/red]: {escape(str(exc))}")
    return typer.Exit(2 if isinstance(exc, ApprovalError | RunLogError) else 1)


def _results_table(title: str, reports: list[Any]) -> Table:
    table = Table(title=title)
    for column in ("run id", "contract", "status", "target", "inserted", "updated", "quarantined"):
        table.add_column(column, overflow="fold")
    for report in reports:
        mat = report.materialization
        table.add_row(
            report.run_id,
            report.contract,
            str(report.status),
            mat.target if mat else "-",
            str(mat.rows_inserted) if mat else "-",
            str(mat.rows_updated) if mat else "-",
            str(mat.quarantine_rows_written) if mat else "-",
        )
    return table


def register(app: typer.Typer) -> None:
    """Add ``approvals``, ``approve`` and ``reject`` to the ``lakelogic`` app."""

    @app.command("approvals")
    def approvals(
        pipeline_run_id: str | None = _PIPELINE,
        as_json: bool = typer.Option(False, "--json", help="Print the staged batches as JSON."),
    ) -> None:
        """List the batches that await approval."""
        from lakelogic.api import awaiting_approval

        try:
            staged = awaiting_approval(pipeline_run_id=pipeline_run_id)
        except LakeLogicError as exc:
            Console(stderr=True).print(f"[red]error[/red]: {escape(str(exc))}")
            raise typer.Exit(2) from None
        rows = [
            {
                "run_id": b.run_id,
                "pipeline_run_id": b.pipeline_run_id,
                "contract": b.manifest.get("contract"),
                "target": (b.manifest.get("target") or {}).get("name"),
                "reasons": b.manifest.get("reasons") or [],
                "staged_at": b.manifest.get("staged_at"),
                "path": b.path,
            }
            for b in staged
        ]
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = Table(title=f"{len(rows)} batch(es) awaiting approval")
        for column in ("run id", "pipeline run", "contract", "target", "why", "staged at"):
            table.add_column(column, overflow="fold")  # ids are typed back into `approve`: never cut them
        for row in rows:
            table.add_row(
                row["run_id"],
                row["pipeline_run_id"] or "-",
                str(row["contract"]),
                str(row["target"]),
                "; ".join(row["reasons"]),
                str(row["staged_at"]),
            )
        Console().print(table)

    @app.command("approve")
    def approve(
        run_ids: list[str] = _RUN_IDS,
        pipeline_run_id: str | None = _PIPELINE,
        contracts: list[str] = _CONTRACTS,
        approved_by: str | None = typer.Option(None, "--approved-by", help="Recorded approver."),
        force: bool = _FORCE,
        run_log_database: Path | None = _RUN_LOG,
        run_log_table: str | None = _RUN_LOG_TABLE,
        run_log_backend: str | None = _RUN_LOG_BACKEND,
    ) -> None:
        """Publish staged batches with their original run id and window, without recomputing them."""
        from lakelogic.api import approve as publish

        try:
            _use_run_log(run_log_database, run_log_table, run_log_backend)
            reports = publish(
                run_ids=_names(run_ids),
                pipeline_run_id=pipeline_run_id,
                contracts=_names(contracts),
                approved_by=approved_by,
                force=force,
            )
        except LakeLogicError as exc:
            raise _fail(exc) from None
        Console().print(_results_table(f"published {len(reports)} staged batch(es)", reports))

    @app.command("reject")
    def reject(
        run_ids: list[str] = _RUN_IDS,
        pipeline_run_id: str | None = _PIPELINE,
        contracts: list[str] = _CONTRACTS,
        rejected_by: str | None = typer.Option(None, "--rejected-by", help="Recorded in the warning."),
        yes: bool = typer.Option(False, "--yes", help="Do not ask before dropping the batches."),
        run_log_database: Path | None = _RUN_LOG,
        run_log_table: str | None = _RUN_LOG_TABLE,
        run_log_backend: str | None = _RUN_LOG_BACKEND,
    ) -> None:
        """Drop staged batches; their runs are recorded ``rejected`` and no table is touched."""
        from lakelogic.api import reject as drop

        if not yes and not typer.confirm("Drop the selected staged batches for good?"):
            raise typer.Exit(1)
        try:
            _use_run_log(run_log_database, run_log_table, run_log_backend)
            reports = drop(
                run_ids=_names(run_ids),
                pipeline_run_id=pipeline_run_id,
                contracts=_names(contracts),
                rejected_by=rejected_by,
            )
        except LakeLogicError as exc:
            raise _fail(exc) from None
        Console().print(_results_table(f"rejected {len(reports)} staged batch(es)", reports))
