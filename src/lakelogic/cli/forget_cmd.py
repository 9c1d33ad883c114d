"""``lakelogic forget`` (erase data subjects) and ``lakelogic retention apply`` (SEMANTICS §18)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lakelogic.errors import LakeLogicError


def _read_ids(path: Path) -> list[str]:
    """One id per line (``-`` reads standard input), exactly as written: `` bob`` and ``bob`` are two
    subjects of a text column (the API's rule; trimming erased the wrong person's row). Lines that are
    blank or whose first non-blank character is ``#`` are skipped."""
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _processor(contract: Path) -> Any:
    from lakelogic.api import DataProcessor

    # maintenance of stored data must not depend on the contract's notification secrets
    return DataProcessor(contract, check_channels=False)


def register(app: typer.Typer) -> None:
    """Add ``forget`` and the ``retention`` group to the ``lakelogic`` app."""

    @app.command("forget")
    def forget(
        contract: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Contract file.")],
        subject_column: Annotated[
            str, typer.Option("--subject-column", help="Column identifying a subject.")
        ],
        ids: Annotated[Path, typer.Option("--ids", help="File with one subject id per line ('-': stdin).")],
        strategy: Annotated[
            str, typer.Option("--strategy", help="nullify, hash, redact (rewrite columns) or delete (rows).")
        ] = "nullify",
        columns: Annotated[
            str | None, typer.Option("--columns", help="Comma-separated columns (default: pii/phi fields).")
        ] = None,
        reason: Annotated[str | None, typer.Option("--reason", help="Why (kept in the evidence).")] = None,
        requested_by: Annotated[str | None, typer.Option("--requested-by")] = None,
        target: Annotated[str | None, typer.Option("--target", help="Target table or path override.")] = None,
        env: Annotated[str | None, typer.Option("--env")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Erase data subjects from CONTRACT's target (all SCD2 versions) and quarantine table; one commit
        per table and one evidence row per table in _lakelogic_erasure_evidence. Exit 1 if a table failed."""
        err = Console(stderr=True)
        try:
            subject_ids = _read_ids(ids)
            processor = _processor(contract)
            result = processor.forget(
                subject_column,
                subject_ids,
                strategy,
                columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
                reason=reason,
                requested_by=requested_by,
                target=target,
                env=env,
            )
        except (LakeLogicError, OSError, UnicodeDecodeError) as exc:
            err.print(f"[red]error[/red]: {exc}")
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps(result.to_dict(), default=str, indent=2))
        else:
            console = Console(highlight=False)
            table = Table(
                title=f"erasure {result.erasure_id} ({result.strategy}, {result.subject_count} subject(s))"
            )
            for name in ("table", "role", "status", "rows", "columns", "note"):
                table.add_column(name)
            for t in result.tables:
                table.add_row(
                    t.table, t.role, t.status, str(t.rows_affected), ", ".join(t.columns), t.error or ""
                )
            console.print(table)
            console.print(
                f"evidence: {result.evidence_table or 'NOT WRITTEN: ' + str(result.evidence_error)}"
            )
            for warning in result.warnings:
                console.print(f"[yellow]warning:[/yellow] {warning}")
        raise typer.Exit(0 if result.status == "succeeded" else 1)

    retention = typer.Typer(help="Retention of target rows (compliance.retention).", no_args_is_help=True)
    app.add_typer(retention, name="retention")

    @retention.command("apply")
    def retention_apply(
        contract: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Contract file.")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Count the expired rows only.")] = False,
        target: Annotated[str | None, typer.Option("--target", help="Target table or path override.")] = None,
        env: Annotated[str | None, typer.Option("--env")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Delete the target rows older than compliance.retention.period by its column, in one commit."""
        try:
            result = _processor(contract).apply_retention(dry_run=dry_run, target=target, env=env)
        except LakeLogicError as exc:
            Console(stderr=True).print(f"[red]error[/red]: {exc}")
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps(result.to_dict(), default=str, indent=2))
        else:
            verb = "would delete" if dry_run else "deleted"
            Console(highlight=False).print(
                f"{result.table}: {verb} {result.rows_deleted} row(s) with {result.column} before "
                f"{result.cutoff.isoformat()} (retention {result.period}); {result.status}"
                + (f" ({result.error})" if result.error else "")
            )
        raise typer.Exit(0 if result.status != "failed" else 1)
