"""``lakelogic ddl CONTRACT``: print (or create) the target and quarantine tables of a contract.

``lakelogic reset`` lives in ``reset_cmd`` (it also records the reset in the run log).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from lakelogic.errors import ContractError, LakeLogicError


def register(app: typer.Typer) -> None:
    """Add ``ddl`` to the ``lakelogic`` app."""
    app.command("ddl")(ddl)


def ddl(
    contract: Annotated[Path, typer.Argument(help="Contract YAML file.")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Create the tables (empty) instead of printing.")
    ] = False,
    target: Annotated[
        str | None, typer.Option("--target", help="Target table or path (overrides the contract).")
    ] = None,
    env: Annotated[str | None, typer.Option("--env", help="Environment whose path/format applies.")] = None,
) -> None:
    """Print CREATE TABLE statements for CONTRACT's target and quarantine sink, without running it."""
    from lakelogic.api import load_run_contract
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.tables.ddl import apply_ddl, contract_ddl
    from lakelogic.tables.target import resolve_target

    err = Console(stderr=True)
    if not contract.is_file():  # configuration errors exit 2 (docs/cli.md), as in run and validate
        err.print(f"[red]error:[/red] contract file not found: {contract}")
        raise typer.Exit(2)
    try:
        loaded = load_run_contract(contract, env=env)  # inside a hierarchy: the effective contract
        tables = contract_ddl(
            loaded, compile_contract(loaded), resolve_target(loaded, target=target, env=env)
        )
    except ContractError as exc:
        err.print(f"[red]invalid contract[/red] {contract}:", highlight=False)
        for problem in exc.problems:
            err.print(f"  {problem.render()}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except LakeLogicError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, markup=False)
        raise typer.Exit(2) from None
    if not apply:
        typer.echo("\n\n".join(t.statement for t in tables))
        return
    from lakelogic.engines.spark.pinned import pinned_semantics
    from lakelogic.engines.spark.session import spark_session

    spark = spark_session()
    for table in tables:
        try:
            with pinned_semantics(spark):  # TIMESTAMP is an instant, as in a run
                done = apply_ddl(spark, table)
        except LakeLogicError as exc:
            err.print(f"[red]error:[/red] {escape(f'{table.target.name}: {exc}')}", highlight=False)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - a catalog's error: one clean line, not a JVM stack
            from lakelogic.engines.spark.errors_text import clean_error_message

            message = clean_error_message(exc)
            err.print(f"[red]error:[/red] {escape(f'{table.target.name}: {message}')}", highlight=False)
            raise typer.Exit(1) from None
        typer.echo(f"{done:<9} {table.target.format} {table.target.name}")
