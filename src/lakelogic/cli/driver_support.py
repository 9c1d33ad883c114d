"""Flag parsing and side tasks of ``lakelogic-driver`` (windows, reset, metrics exporter, Spark runner)."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from lakelogic.driver.load import Pipeline, select
from lakelogic.driver.runner import ContractRunner
from lakelogic.driver.windows import WindowSpec
from lakelogic.errors import LakeLogicError

if TYPE_CHECKING:
    from lakelogic.plan.approval import ApprovalFile
    from lakelogic.runlog.prometheus import MetricsExporter

# Piped output (CI logs, the demo) has no terminal width; do not squeeze tables into 80 columns.
console = Console() if sys.stdout.isatty() else Console(width=160)
err_console = Console(stderr=True)


def split_values(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def parse_sets(values: list[str] | None) -> dict[str, str]:
    from lakelogic.contract.overrides import parse_set_option

    return dict(parse_set_option(v) for v in values or [])


def parse_date(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise LakeLogicError(f"{flag}: expected a date YYYY-MM-DD, got {value!r}") from None


def window_spec(
    window: str,
    start: str | None,
    end: str | None,
    reprocess: str | None,
    rstart: str | None,
    rend: str | None,
) -> WindowSpec:
    # DRIVER §5: every flag is checked before anything runs; a date no mode reads is an error, not ignored
    if reprocess or rstart or rend:
        if window != "last_success" or start or end:
            raise LakeLogicError(
                "--reprocess-* chooses the window itself: leave out --window and --window-*-date"
            )
        if reprocess and (rstart or rend):
            raise LakeLogicError(
                "give --reprocess-date or --reprocess-start-date/--reprocess-end-date, not both"
            )
        day = parse_date(reprocess, "--reprocess-date")
        return WindowSpec(
            "reprocess",
            day or parse_date(rstart, "--reprocess-start-date"),
            day or parse_date(rend, "--reprocess-end-date"),
        )
    if (start or end) and window != "range":
        raise LakeLogicError(
            f"--window-start-date/--window-end-date need --window range (got --window {window})"
        )
    return WindowSpec(window, parse_date(start, "--window-start-date"), parse_date(end, "--window-end-date"))


def ddl_only(pipeline: Pipeline, *, apply: bool) -> int:
    """DRIVER §17 ``--ddl-only``: the target and quarantine tables of every selected contract with a
    ``materialization`` block, in DAG order, from the effective contracts; created (empty) when ``apply``,
    else only printed. Returns the exit code (1 when a table could not be planned or created)."""
    from lakelogic.engines.spark.pinned import pinned_semantics
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.tables.ddl import apply_ddl, contract_ddl
    from lakelogic.tables.target import resolve_target

    spark = spark_for("spark") if apply else None
    failed = 0
    for layer in pipeline.dag.layers():
        for node_id in pipeline.dag.layer_nodes(layer):
            node = pipeline.dag.nodes[node_id]
            if node_id not in pipeline.selected or node.effective is None or not node.enabled:
                continue
            contract = node.effective.contract
            if contract.materialization is None:
                console.print(f"-- {node_id}: no materialization block, no table")
                continue
            try:
                tables = contract_ddl(contract, compile_contract(contract), resolve_target(contract))
                for table in tables:
                    if spark is None:
                        console.print(f"-- {node_id}\n{table.statement}\n", markup=False, highlight=False)
                    else:
                        with pinned_semantics(spark):  # TIMESTAMP is an instant, as in a run
                            done = apply_ddl(spark, table)
                        console.print(f"{done:<9} {table.target.format} {table.target.name}  ({node_id})")
            except Exception as exc:  # noqa: BLE001 - reported per node; the other tables are still created
                failed += 1
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                err_console.print(f"[red]error[/red] {node_id}: {first}", highlight=False, markup=False)
    return 1 if failed else 0


def load_backend(backend: str | None) -> None:
    """A run-log backend that lives with the Spark engine registers itself when imported."""
    if backend == "iceberg":
        import lakelogic.engines.spark.runlog_iceberg  # noqa: F401 - registers the backend


def check_node_stores(pipeline: Pipeline, store: Any) -> None:
    """Open the run log of every selected contract that names its own (DRIVER §15.1) before anything runs,
    so an unknown backend or a bad table name is a configuration error, not a failure mid-pipeline."""
    from lakelogic.driver.run_logs import NodeStores
    from lakelogic.runlog import store_settings

    stores = NodeStores(store)
    for node_id in sorted(pipeline.selected):
        node = pipeline.dag.nodes[node_id]
        load_backend(store_settings(node.metadata, node.contract_file)[0])
        stores.of(node)


ENGINES = ("spark",)
METRICS_BACKENDS = ("prometheus", "statsd")


def require_engine(engine: str) -> None:
    if engine not in ENGINES:
        allowed = ", ".join(ENGINES)
        raise LakeLogicError(f"--engine {engine!r} is not available in this build; allowed: {allowed}")


def check_flags(
    engine: str, metrics_backend: str | None, summary_table: str | None, resume_state: Path | None
) -> None:
    """The flags a run would only trip over later (after a reset, or never in a dry run)."""
    from lakelogic.runlog.store import is_table_name

    require_engine(engine)
    if metrics_backend not in (None, "none", *METRICS_BACKENDS):
        raise LakeLogicError(f"--metrics-backend {metrics_backend!r}; allowed: {', '.join(METRICS_BACKENDS)}")
    if summary_table is not None and not is_table_name(summary_table):
        raise LakeLogicError(f"--summary-table {summary_table!r}; allowed: name or schema.name")
    if resume_state is not None and not resume_state.is_file():
        raise LakeLogicError(f"--resume: no state file at {resume_state}", hint="pass --state-path")


def spark_runner(
    engine: str,
    *,
    cache_references: bool = False,
    approval_required: bool = False,
    approval_file: ApprovalFile | None = None,
) -> tuple[ContractRunner, Any]:
    require_engine(engine)
    from lakelogic.driver.spark_runner import spark_contract_runner

    return spark_contract_runner(
        spark_for(engine),
        engine=engine,
        cache_references=cache_references,
        approval_required=approval_required,
        approval_file=approval_file,
    )


def spark_for(engine: str) -> Any:
    require_engine(engine)
    from lakelogic.engines.spark.session import spark_session

    return spark_session()


def reset_selection(
    pipeline: Pipeline,
    entities: list[str],
    layers: list[str],
    reload_entities: list[str],
    reload_layers: list[str],
) -> set[str]:
    ents = split_values(entities) + split_values(reload_entities)
    lays = split_values(layers) + split_values(reload_layers)
    if not ents and not lays:
        return set()
    try:
        chosen = select(pipeline.dag, layers=lays or None, entities=ents or None)
    except LakeLogicError as exc:
        err_console.print(f"[red]configuration error[/red]: {exc}")
        raise typer.Exit(2) from None
    # within the selection flags (--layers, --entities, --contracts, §9): `--reset-entities customers
    # --layers silver` empties the silver customers only, never the bronze table it reloads from
    picked = {n for n in chosen if pipeline.dag.nodes[n].enabled and n in pipeline.selected}
    if not picked:
        err_console.print("[red]configuration error[/red]: the reset selects no node of the selected ones")
        raise typer.Exit(2)
    return picked


def confirm_and_reset(
    pipeline: Pipeline, resets: set[str], store: Any, pipeline_run_id: str | None, *, yes: bool
) -> None:
    from lakelogic.driver.reset import reset_nodes

    names = ", ".join(sorted(resets))
    if not yes and not typer.confirm(f"Empty the targets and quarantine tables of {names}?"):
        raise typer.Exit(1)
    nodes = [pipeline.dag.nodes[n] for n in sorted(resets)]
    try:
        results = reset_nodes(spark_for("spark"), nodes, store=store, pipeline_run_id=pipeline_run_id)
    except LakeLogicError as exc:
        err_console.print(f"[red]reset failed[/red]: {exc}")
        raise typer.Exit(1) from None
    for result in results:
        console.print(f"reset {result.node_id}: emptied {', '.join(result.emptied) or 'nothing'}")


def metric_tags(text: str | None) -> dict[str, str]:
    """``--metrics-tags k=v,…`` (§15.3 constant labels); an item without ``=`` is a configuration error."""
    tags: dict[str, str] = {}
    for item in split_values([text] if text else []):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LakeLogicError(f"--metrics-tags {item!r}: expected key=value")
        tags[key.strip()] = value.strip()
    return tags


def metrics_exporter(
    backend: str | None, host: str | None, port: int | None, prefix: str, tags: dict[str, str]
) -> MetricsExporter | None:
    """``prometheus`` (serves /metrics; default 0.0.0.0:9100) or ``statsd`` (pushes over UDP; default
    127.0.0.1:8125), DRIVER §15.3."""
    if backend in (None, "none"):
        return None
    if backend == "prometheus":
        from lakelogic.runlog.prometheus import PrometheusExporter

        exporter = PrometheusExporter(prefix=prefix, tags=tags)
        try:
            exporter.serve(port if port is not None else 9100, host or "0.0.0.0")
        except OSError as exc:  # e.g. the port is taken
            err_console.print(f"[red]configuration error[/red]: --metrics-port {port}: {exc}")
            raise typer.Exit(2) from None
        return exporter
    if backend == "statsd":
        from lakelogic.runlog.statsd_exporter import StatsdExporter

        try:
            return StatsdExporter(
                host=host or "127.0.0.1", port=port if port is not None else 8125, prefix=prefix, tags=tags
            )
        except OSError as exc:  # e.g. a host name that does not resolve
            err_console.print(f"[red]configuration error[/red]: --metrics-host {host!r}: {exc}")
            raise typer.Exit(2) from None
    err_console.print(
        f"[red]configuration error[/red]: --metrics-backend {backend!r}; allowed: prometheus, statsd"
    )
    raise typer.Exit(2)


def no_runner(request: Any) -> Any:  # pragma: no cover - a dry run never runs a contract
    raise LakeLogicError("dry run: no contract may run")
