"""``lakelogic reset CONTRACT``: empty one contract's target and quarantine table (DRIVER §17)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from lakelogic.errors import LakeLogicError


def register(app: typer.Typer) -> None:
    """Add ``reset`` to the ``lakelogic`` app."""

    @app.command("reset")
    def reset(
        contract: Path = typer.Argument(..., exists=True, dir_okay=False, help="Contract file."),
        env: str | None = typer.Option(None, "--env"),
        yes: bool = typer.Option(False, "--yes", help="Do not ask before emptying tables."),
        run_log_database: Path | None = typer.Option(None, "--run-log-database"),
        run_log_table: str | None = typer.Option(None, "--run-log-table", help="As the driver's."),
        run_log_backend: str | None = typer.Option(
            None, "--run-log-backend", help="duckdb (default), sqlite, delta or iceberg, as the driver's."
        ),
    ) -> None:
        """Empty the target and quarantine table and write a reset row: the next last_success run is full."""
        from lakelogic.cli.driver_support import load_backend, spark_for
        from lakelogic.contract.hierarchy import resolve_effective
        from lakelogic.driver.nodes import build_node
        from lakelogic.driver.registry import RegistryEntry
        from lakelogic.driver.reset import reset_nodes, reset_targets
        from lakelogic.runlog import open_store

        console = Console()
        try:
            effective = resolve_effective(contract, env=env)
            entry = RegistryEntry(contract_path=contract.resolve(), registry_file=contract.resolve(), index=0)
            node = build_node(entry, effective.data, effective=effective)
            tables = [name for name, _ in reset_targets(node)]
            if not yes and not typer.confirm(f"Empty {', '.join(tables) or 'nothing'} of {node.id}?"):
                Console(stderr=True).print(f"not reset: {node.id} is unchanged")
                raise typer.Exit(1)
            # the contract's own run log when it names one, as the driver reads it (§15.1)
            load_backend(run_log_backend)
            store = open_store(run_log_database, table=run_log_table, backend=run_log_backend)
            [result] = reset_nodes(spark_for("spark"), [node], store=store)
        except LakeLogicError as exc:
            Console(stderr=True).print(f"[red]error[/red]: {exc}")
            raise typer.Exit(2) from None
        console.print(f"reset {result.node_id}: emptied {', '.join(result.emptied) or 'nothing'}")
