"""``lakelogic registry explain|validate`` (DRIVER §2.6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from lakelogic.contract.hierarchy import resolve_effective
from lakelogic.contract.hierarchy.merge import get_path
from lakelogic.driver.dag import ContractDag
from lakelogic.driver.load import ConfigurationError, load_pipeline
from lakelogic.errors import ContractError, LakeLogicError

registry_app = typer.Typer(
    help="Inspect and validate registries and the contract hierarchy.", no_args_is_help=True
)


def _flatten(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        out: list[tuple[str, Any]] = []
        for key, child in value.items():
            out.extend(_flatten(child, f"{path}.{key}" if path else str(key)))
        return out
    return [(path, value)]


@registry_app.command("explain")
def explain(
    contract: Path = typer.Argument(..., exists=True, dir_okay=False, help="Contract file."),
    key: str | None = typer.Option(None, "--key", help="Only this dotted path."),
    env: str | None = typer.Option(None, "--env"),
    set_: list[str] = typer.Option([], "--set", help="dotted.path=value"),
    as_json: bool = typer.Option(False, "--json"),
    policy_pack: str | None = typer.Option(None, "--policy-pack", help="Pack when the contract names none."),
    policy_pack_dir: Path = typer.Option(Path("policy_packs"), "--policy-pack-dir"),
) -> None:
    """Print the effective contract; every leaf with its origin and how it got there."""
    from lakelogic.contract.overrides import parse_set_option

    try:
        eff = resolve_effective(
            contract,
            env=env,
            overrides=dict(parse_set_option(s) for s in set_),
            default_policy_pack=(policy_pack, Path.cwd()) if policy_pack else None,
            policy_pack_dir=policy_pack_dir,
        )
    except LakeLogicError as exc:
        Console(stderr=True).print(f"[red]error[/red]: {exc}")
        raise typer.Exit(2) from None
    leaves = _flatten(eff.data)
    if key:
        leaves = [(p, v) for p, v in leaves if p == key or p.startswith(key + ".")]
        if not leaves:
            leaves = [(key, get_path(eff.data, key))]
    rows = []
    for path, value in leaves:
        origin = eff.origin(path)
        rows.append(
            {
                "path": path,
                "value": value,
                "origin": origin.source if origin else "default",
                "how": origin.how if origin else "default",
            }
        )
    if as_json:
        payload = {
            "contract": eff.name,
            "environment": eff.environment,
            "policy_packs": eff.policy_packs,
            "domain_file": str(eff.domain_file) if eff.domain_file else None,
            "system_file": str(eff.system_file) if eff.system_file else None,
            "leaves": rows,
        }
        typer.echo(json.dumps(payload, default=str, indent=2))
        return
    table = Table(title=f"{eff.name} (env {eff.environment})")
    for column in ("path", "value", "origin", "how"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["path"], json.dumps(row["value"], default=str), row["origin"], row["how"])
    Console().print(table)


@registry_app.command("validate")
def validate(
    path: Path = typer.Argument(..., exists=True, help="Registry file, _system.yaml or directory."),
    env: str | None = typer.Option(None, "--env"),
    strict: bool = typer.Option(False, "--strict", help="Fail on warnings too."),
) -> None:
    """Check every hierarchy file, registry and contract under PATH (paths, upstreams, cycles)."""
    console = Console()
    try:
        pipeline = load_pipeline([path], env=env)
    except (ConfigurationError, ContractError) as exc:
        Console(stderr=True).print(f"[red]invalid[/red]: {exc}")
        raise typer.Exit(2) from None
    dag = pipeline.dag
    warnings = validation_warnings(pipeline.dag)
    for warning in warnings:
        console.print(f"[yellow]warning[/yellow]: {warning}")
    if strict and warnings:
        raise typer.Exit(1)
    console.print(f"[green]valid[/green]: {len(dag.nodes)} contracts, {dag.graph.number_of_edges()} edges, "
                  f"layers {', '.join(dag.layers())}")  # fmt: skip


def validation_warnings(dag: ContractDag) -> list[str]:
    """Things that load but deserve a look: disabled entries others depend on, deprecated contracts."""
    out = []
    for node in sorted(dag.nodes.values(), key=lambda n: n.id):
        if not node.enabled and dag.downstreams(node.id):
            out.append(f"{node.id} is disabled but {', '.join(dag.downstreams(node.id))} depend on it")
        status = (node.data.get("info") or {}).get("status")
        if status == "deprecated":
            out.append(f"{node.id} ({node.contract_file}) is deprecated")
    return out


def register(app: typer.Typer) -> None:
    """Add the ``registry`` group to the ``lakelogic`` app."""
    app.add_typer(registry_app, name="registry")
