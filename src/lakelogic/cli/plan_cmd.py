"""``lakelogic plan CONTRACT``: show what a run of the contract will do, step by step, with its SQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lakelogic.errors import ContractError, PlanError


def register(app: typer.Typer) -> None:
    """Add ``plan`` to the ``lakelogic`` app."""
    app.command("plan")(plan)


def plan(
    contract: Annotated[Path, typer.Argument(help="Contract YAML file.", exists=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    engine: Annotated[str, typer.Option("--engine", help="Engine the plan is compiled for.")] = "spark",
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a contract key: --set quality.enforce_required=false (repeatable)."
        ),
    ] = None,
) -> None:
    """Compile CONTRACT and print its plan: numbered steps with the SQL each one runs."""
    from lakelogic.api import load_run_contract
    from lakelogic.contract.overrides import parse_set_option
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.explain import plan_to_dict, render_plan

    err = Console(stderr=True)
    if not contract.is_file():  # configuration errors exit 2 (docs/cli.md), as in run and validate
        err.print(f"[red]error:[/red] contract file not found: {contract}")
        raise typer.Exit(2)
    try:
        overrides = dict(parse_set_option(option) for option in set_ or [])
        compiled = compile_contract(load_run_contract(contract, overrides or None), engine=engine)
    except ContractError as exc:
        err.print(f"[red]invalid contract[/red] {contract}:", highlight=False)
        for problem in exc.problems:
            err.print(f"  {problem.render()}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(2) from None  # a configuration error, as `lakelogic run` reports it
    except (PlanError, ValueError) as exc:
        err.print(f"[red]cannot plan[/red] {contract}:", highlight=False)
        err.print(f"  {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(plan_to_dict(compiled), indent=2, default=str))
    else:
        typer.echo(render_plan(compiled))
