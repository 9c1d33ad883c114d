"""``lakelogic dag``: print or write the contract DAG (DRIVER §17)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from lakelogic.driver import dag_render
from lakelogic.driver.load import ConfigurationError, load_pipeline
from lakelogic.driver.orchestrators import TARGETS, TemplateOptions, render
from lakelogic.errors import LakeLogicError
from lakelogic.runlog import open_store

FORMATS = ("text", "mermaid", "dot", "html", "json", *TARGETS)


def _split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def register(app: typer.Typer) -> None:
    """Add ``dag`` to the ``lakelogic`` app."""

    @app.command("dag")
    def dag(
        registry: list[Path] = typer.Option(
            [], "--registry", help="_registry.yaml, _system.yaml or directory."
        ),
        reference_registry: list[Path] = typer.Option([], "--reference-registry"),
        gold_registry: list[Path] = typer.Option([], "--gold-registry"),
        layers: list[str] = typer.Option([], "--layers"),
        fmt: str = typer.Option(
            "text",
            "--format",
            help="text | mermaid | dot | html | json, or an orchestrator template: airflow | dagster | "
            "prefect | databricks (DRIVER §18)",
        ),
        per: str = typer.Option("node", "--per", help="Templates: one task per node or per layer."),
        name: str = typer.Option("lakelogic", "--name", help="Templates: the DAG, flow or job name."),
        output: Path | None = typer.Option(None, "--output", help="Write to this file instead of stdout."),
        pipeline_run_id: str | None = typer.Option(None, "--pipeline-run-id", help="Colour nodes by status."),
        no_dims_first: bool = typer.Option(False, "--no-dims-first"),
        env: str | None = typer.Option(None, "--env"),
        run_log_database: Path | None = typer.Option(None, "--run-log-database"),
        run_log_table: str | None = typer.Option(None, "--run-log-table", help="As the driver's."),
        run_log_backend: str | None = typer.Option(None, "--run-log-backend", help="As the driver's."),
    ) -> None:
        """Execution order by layer and generation; with a pipeline run id, nodes carry run-log statuses."""
        if fmt not in FORMATS or per not in ("node", "layer"):
            allowed = f"--format {fmt!r}; allowed: {', '.join(FORMATS)}; --per node or layer"
            Console(stderr=True).print(f"[red]error[/red]: {allowed}")
            raise typer.Exit(2)
        registry_args = tuple(
            arg
            for flag, paths in (
                ("--registry", registry),
                ("--reference-registry", reference_registry),
                ("--gold-registry", gold_registry),
            )
            for path in paths
            for arg in (flag, str(path))
        )
        try:
            pipeline = load_pipeline(
                registry,
                reference=reference_registry,
                gold=gold_registry,
                env=env,
                dims_first=not no_dims_first,
                layers=_split(layers),
            )
        except ConfigurationError as exc:
            Console(stderr=True).print(f"[red]invalid[/red]: {exc}")
            raise typer.Exit(2) from None
        statuses: dict[str, str] = {}
        if pipeline_run_id:
            try:
                from lakelogic.cli.driver_support import load_backend

                load_backend(run_log_backend)
                store = open_store(run_log_database, table=run_log_table, backend=run_log_backend)
                statuses = _statuses(pipeline, store, pipeline_run_id)
            except LakeLogicError as exc:
                Console(stderr=True).print(f"[red]error[/red]: {exc}")
                raise typer.Exit(2) from None
        among = pipeline.selected
        text = {
            "text": lambda: dag_render.to_text(pipeline.dag, among, statuses),
            "mermaid": lambda: dag_render.to_mermaid(pipeline.dag, among, statuses),
            "dot": lambda: dag_render.to_dot(pipeline.dag, among, statuses),
            "html": lambda: dag_render.to_html(pipeline.dag, among, statuses),
            "json": lambda: dag_render.to_json(pipeline.dag, statuses, among),
        }.get(fmt, lambda: _template(fmt, pipeline, among, registry_args, env, per, name))()
        if output:
            try:
                output.parent.mkdir(parents=True, exist_ok=True)
                output.write_text(text, encoding="utf-8")
            except OSError as exc:
                Console(stderr=True).print(f"[red]error[/red]: cannot write {output}: {exc}", highlight=False)
                raise typer.Exit(2) from None
            Console().print(f"wrote {output}")
        else:
            typer.echo(text, nl=False)


def _statuses(pipeline: Any, store: Any, pipeline_run_id: str) -> dict[str, str]:
    """Each node's status in the pipeline run, read from the run log its contract records to (§15.1)."""
    from lakelogic.driver.run_logs import NodeStores

    stores = NodeStores(store)
    by_store: dict[int, tuple[Any, dict[tuple[str, str], str]]] = {}
    for node in pipeline.dag.nodes.values():
        node_store = stores.of(node)
        by_store.setdefault(id(node_store), (node_store, {}))[1][(node.name, node.layer)] = node.id
    statuses: dict[str, str] = {}
    for node_store, by_name in by_store.values():
        if not node_store.exists():
            continue
        for row in node_store.query(pipeline_run_id=pipeline_run_id):
            node_id = by_name.get((row["contract"], row["layer"]))
            if node_id:
                statuses[node_id] = "gated" if row.get("gated") else str(row["status"])
    return statuses


def _template(
    fmt: str,
    pipeline: Any,
    among: set[str],
    registry_args: tuple[str, ...],
    env: str | None,
    per: str,
    name: str,
) -> str:
    """An orchestrator template (DRIVER §18) for the selected nodes."""
    dag_json = json.loads(dag_render.to_json(pipeline.dag, None, among))
    return render(fmt, dag_json, TemplateOptions(registry_args, env=env, per=per, name=name))
