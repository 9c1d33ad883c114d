"""``lakelogic bootstrap``: draft contracts and a registry from a landing zone (DRIVER §17)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from lakelogic.errors import LakeLogicError


def register(app: typer.Typer) -> None:
    """Add ``bootstrap`` to the ``lakelogic`` app."""

    @app.command("bootstrap")
    def bootstrap(
        landing: Path = typer.Option(..., "--landing", help="Landing root: one entity per sub-folder."),
        output_dir: Path = typer.Option(..., "--output-dir", help="Where the contracts are written."),
        registry: Path = typer.Option(..., "--registry", help="The _registry.yaml to write or update."),
        fmt: str = typer.Option("csv", "--format", help="csv, parquet or json."),
        pattern: str | None = typer.Option(None, "--pattern", help="File glob (default *.csv for csv)."),
        layer: str = typer.Option("bronze", "--layer"),
        sample_rows: int = typer.Option(1000, "--sample-rows", help="Rows sampled per entity."),
        sync: bool = typer.Option(False, "--sync", help="Add new entities, disable vanished ones."),
        sync_update_schema: bool = typer.Option(
            False, "--sync-update-schema", help="Add new columns to existing contracts."
        ),
        sync_overwrite: bool = typer.Option(False, "--sync-overwrite", help="Rewrite existing contracts."),
        suggest_rules: bool = typer.Option(
            False, "--suggest-rules", help="not_null, accepted_values and range rules (severity warning)."
        ),
        detect_pii: bool = typer.Option(False, "--detect-pii", help="Mark likely personal columns pii."),
    ) -> None:
        """Draft a strictly valid contract per landing entity, and its registry entry."""
        from lakelogic.driver.bootstrap import bootstrap as draft

        console = Console()
        try:
            result = draft(
                landing, output_dir, registry, fmt=fmt, pattern=pattern, layer=layer,
                sample_rows=sample_rows, sync=sync, sync_update_schema=sync_update_schema,
                sync_overwrite=sync_overwrite, suggest_rules=suggest_rules, detect_pii=detect_pii,
            )  # fmt: skip
        except LakeLogicError as exc:
            Console(stderr=True).print(f"[red]error[/red]: {escape(str(exc))}")
            raise typer.Exit(2) from None
        for label, paths in (("wrote", result.written), ("updated", result.updated), ("kept", result.kept)):
            for path in paths:
                console.print(f"{label:<8} {path}", highlight=False)
        for name in result.disabled:
            console.print(f"disabled {name} (its landing files are gone)", highlight=False)
        console.print(f"registry {result.registry}", highlight=False)
