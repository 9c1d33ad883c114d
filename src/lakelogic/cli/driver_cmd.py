"""``lakelogic-driver``: run many contracts as a layered DAG (DRIVER §16).

A thin shell: parse flags, load the pipeline (exit 2 on any configuration problem), run it with the
Spark runner (or only print the plan with ``--dry-run``), render a live table and a summary, record
summary/metrics, exit with the §13 code.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from lakelogic.cli.driver_support import (
    check_flags,
    check_node_stores,
    confirm_and_reset,
    console,
    ddl_only,
    err_console,
    load_backend,
    metric_tags,
    metrics_exporter,
    no_runner,
    parse_date,
    parse_sets,
    reset_selection,
    spark_runner,
    split_values,
    window_spec,
)
from lakelogic.cli.driver_view import LiveBoard, render_plan, render_summary
from lakelogic.contract.hierarchy.environment import environment_name
from lakelogic.driver.gates import Outcome
from lakelogic.driver.load import ConfigurationError, PackOptions, Pipeline, load_pipeline
from lakelogic.driver.runner import ContractRunner, DriverOptions, PipelineResult, PipelineRun
from lakelogic.driver.state import DriverState, load_state
from lakelogic.driver.summary import build_summary, contract_row
from lakelogic.driver.window_plan import plan_windows, resume_plan, resumes_by_itself
from lakelogic.driver.windows import WindowSpec
from lakelogic.errors import LakeLogicError
from lakelogic.plan.approval import load_approval_file
from lakelogic.runlog import BACKENDS, find_project_root, open_store, set_default_store
from lakelogic.runlog.summary import (
    atomic_write_json,
    atomic_write_text,
    metrics_payload,
    prometheus_text,
    write_summary,
)

if TYPE_CHECKING:
    from lakelogic.runlog.prometheus import MetricsExporter

app = typer.Typer(
    name="lakelogic-driver",
    help="Run every contract of one or more registries as a layered, parallel DAG.",
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def main(
    registry: list[Path] = typer.Option([], "--registry", help="_registry.yaml, _system.yaml or directory."),
    reference_registry: list[Path] = typer.Option(
        [], "--reference-registry", help="Entries default to reference."
    ),
    gold_registry: list[Path] = typer.Option([], "--gold-registry", help="Entries default to gold."),
    layers: list[str] = typer.Option([], "--layers", help="Comma-separated layers (default: all)."),
    entities: list[str] = typer.Option([], "--entities", help="Entities or contract names."),
    contracts: list[str] = typer.Option([], "--contracts", help="Contract paths or names."),
    set_: list[str] = typer.Option([], "--set", help="dotted.path=value for every selected contract."),
    engine: str = typer.Option("spark", "--engine"),
    env: str | None = typer.Option(None, "--env", help="Environment (else LAKELOGIC_ENV, else dev)."),
    max_workers: int = typer.Option(4, "--max-workers", min=0, help="Concurrent contracts per layer."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Validate and print what would run; touch no data."
    ),
    continue_on_error: bool = typer.Option(True, "--continue-on-error/--no-continue-on-error"),
    fail_fast: bool = typer.Option(False, "--fail-fast"),
    max_quarantine_ratio: float | None = typer.Option(None, "--max-quarantine-ratio"),
    no_dims_first: bool = typer.Option(False, "--no-dims-first"),
    strict_layer_order: bool = typer.Option(False, "--strict-layer-order"),
    window: str = typer.Option("last_success", "--window", help="last_success | none | range | yesterday"),
    window_start_date: str | None = typer.Option(None, "--window-start-date"),
    window_end_date: str | None = typer.Option(None, "--window-end-date"),
    reprocess_date: str | None = typer.Option(None, "--reprocess-date"),
    reprocess_start_date: str | None = typer.Option(None, "--reprocess-start-date"),
    reprocess_end_date: str | None = typer.Option(None, "--reprocess-end-date"),
    backfill_start_date: str | None = typer.Option(None, "--backfill-start-date"),
    backfill_end_date: str | None = typer.Option(None, "--backfill-end-date"),
    backfill_granularity: str = typer.Option("day", "--backfill-granularity"),
    retries: int = typer.Option(0, "--retries", min=0),
    cache_references: bool = typer.Option(
        False,
        "--cache-references",
        help="Load each reference link once per pipeline run and reuse it across contracts (DRIVER §12).",
    ),
    approval_required: bool = typer.Option(
        False,
        "--approval-required",
        help="Stage a contract's batch for approval when its gate triggers (DRIVER §11).",
    ),
    approval_file: Path | None = typer.Option(
        None, "--approval-file", help="Approval file: approves the contracts it covers (DRIVER §11)."
    ),
    retry_backoff: float = typer.Option(1.0, "--retry-backoff"),
    retry_max_delay: float = typer.Option(60.0, "--retry-max-delay"),
    entity_timeout_minutes: float | None = typer.Option(None, "--entity-timeout-minutes"),
    max_consecutive_failures: int = typer.Option(0, "--max-consecutive-failures", min=0),
    pipeline_run_id: str | None = typer.Option(None, "--pipeline-run-id"),
    run_log_database: Path | None = typer.Option(None, "--run-log-database"),
    run_log_table: str | None = typer.Option(None, "--run-log-table"),
    run_log_backend: str | None = typer.Option(
        None,
        "--run-log-backend",
        help="duckdb (default), sqlite, delta (via delta-rs) or iceberg (via Spark).",
    ),
    summary_table: str | None = typer.Option(None, "--summary-table"),
    summary_backend: str = typer.Option(
        "duckdb", "--summary-backend", help="duckdb, sqlite, delta or iceberg."
    ),
    summary_database: Path | None = typer.Option(None, "--summary-database"),
    summary_path: Path | None = typer.Option(None, "--summary-path"),
    metrics_path: Path | None = typer.Option(
        None, "--metrics-path", help="JSON; a .prom file gets text format."
    ),
    metrics_tags: str | None = typer.Option(None, "--metrics-tags", help="k=v,k2=v2"),
    state_path: Path | None = typer.Option(
        None, "--state-path", help="State file rewritten after each contract."
    ),
    resume: bool = typer.Option(False, "--resume", help="Resume the pipeline run saved in the state file."),
    policy_pack: str | None = typer.Option(
        None, "--policy-pack", help="Pack for contracts without their own."
    ),
    policy_pack_dir: Path = typer.Option(Path("policy_packs"), "--policy-pack-dir"),
    reset_entities: list[str] = typer.Option(
        [], "--reset-entities", help="Empty these targets; full load next."
    ),
    reset_layers: list[str] = typer.Option([], "--reset-layers"),
    reload_entities: list[str] = typer.Option(
        [], "--reload-entities", help="Reset, then run them (window none)."
    ),
    reload_layers: list[str] = typer.Option([], "--reload-layers"),
    yes: bool = typer.Option(False, "--yes", help="Do not ask before emptying tables."),
    ddl_only_flag: bool = typer.Option(
        False,
        "--ddl-only",
        help="Create every selected target and quarantine table (empty) without running; "
        "with --dry-run print the statements (DRIVER §17).",
    ),
    metrics_backend: str | None = typer.Option(
        None, "--metrics-backend", help="prometheus (serve /metrics live) or statsd (push over UDP)."
    ),
    metrics_host: str | None = typer.Option(
        None, "--metrics-host", help="prometheus: listen address (0.0.0.0); statsd: server (127.0.0.1)."
    ),
    metrics_port: int | None = typer.Option(None, "--metrics-port", help="prometheus: 9100; statsd: 8125."),
    metrics_prefix: str = typer.Option("lakelogic", "--metrics-prefix"),
    metrics_linger_seconds: float = typer.Option(0.0, "--metrics-linger-seconds"),
    live: bool = typer.Option(True, "--live/--no-live", help="Live table of node states."),
) -> None:
    """Run the selected contracts layer by layer; exit 0 ok, 1 failure, 2 configuration error."""
    try:
        spec = window_spec(
            window,
            window_start_date,
            window_end_date,
            reprocess_date,
            reprocess_start_date,
            reprocess_end_date,
        )
        backfill_range: tuple[date, date, str] | None = None
        if backfill_start_date or backfill_end_date:
            start, end = (
                parse_date(backfill_start_date, "--backfill-start-date"),
                parse_date(backfill_end_date, "--backfill-end-date"),
            )
            if start is None or end is None:
                raise LakeLogicError("--backfill-start-date and --backfill-end-date go together")
            backfill_range = (start, end, backfill_granularity)
            if spec.mode != "last_success":
                raise LakeLogicError(
                    "--backfill-* runs its own windows: leave out --window and --reprocess-*"
                )
        plan = plan_windows(backfill_range, pipeline_run_id, str(uuid.uuid4()))
        overrides = parse_sets(set_)
        pipeline = load_pipeline(
            registry,
            reference=reference_registry,
            gold=gold_registry,
            env=env,
            overrides=overrides,
            dims_first=not no_dims_first,
            layers=split_values(layers),
            entities=split_values(entities),
            contracts=split_values(contracts),
            strict_layer_order=strict_layer_order,
            packs=PackOptions(policy_pack, policy_pack_dir),
        )
        load_backend(run_log_backend)
        load_backend(summary_backend)
        if summary_backend not in BACKENDS:  # refused before anything runs, as the run log's is
            raise LakeLogicError(f"--summary-backend {summary_backend!r}; allowed: {', '.join(BACKENDS)}")
        tags = metric_tags(metrics_tags)
        store = open_store(run_log_database, table=run_log_table, backend=run_log_backend)
        set_default_store(store)  # runs recorded by the engine itself land in the same store
        check_node_stores(pipeline, store)
        approval = load_approval_file(approval_file) if approval_file is not None else None
        if state_path is None and resume:
            state_path = find_project_root() / ".lakelogic" / "driver_state.json"
        # §5: every flag is checked before anything runs, a reset or a dry run included
        check_flags(engine, metrics_backend, summary_table, state_path if resume else None)
    except ConfigurationError as exc:
        err_console.print(f"[red]configuration error[/red]: {exc}")
        raise typer.Exit(2) from None
    except LakeLogicError as exc:
        err_console.print(f"[red]configuration error[/red]: {exc}")
        raise typer.Exit(2) from None

    options = DriverOptions(
        max_workers=max_workers,
        fail_fast=fail_fast or not continue_on_error,
        max_quarantine_ratio=max_quarantine_ratio,
        retries=retries,
        retry_backoff=retry_backoff,
        retry_max_delay=retry_max_delay,
        timeout_minutes=entity_timeout_minutes,
        max_consecutive_failures=max_consecutive_failures,
        window=spec,
        environment=environment_name(env),
        engine=engine,
        overrides=tuple(set_),
    )
    if ddl_only_flag:
        raise typer.Exit(ddl_only(pipeline, apply=not dry_run))
    resets = reset_selection(pipeline, reset_entities, reset_layers, reload_entities, reload_layers)
    reload = bool(split_values(reload_entities) or split_values(reload_layers))
    # a taken metrics port ends the invocation before a reset empties anything (§5)
    runs = not dry_run and (not resets or reload)
    exporter = (
        metrics_exporter(metrics_backend, metrics_host, metrics_port, metrics_prefix, tags) if runs else None
    )
    if resets:
        if dry_run:
            console.print(
                f"dry run: would reset {', '.join(sorted(resets))}" + (" and reload them" if reload else "")
            )
            if not reload:
                raise typer.Exit(0)  # a reset runs nothing
        else:
            confirm_and_reset(pipeline, resets, store, pipeline_run_id, yes=yes)
            if not reload:
                raise typer.Exit(0)
        pipeline.selected = set(resets)
        options.window = WindowSpec("none")  # a reload reads everything again (§17)
    if dry_run:
        if plan.backfill:  # the plan of the first window; every later one is the same DAG in its own window
            first = plan.windows[0][1]
            options.window_override = first
            console.print(
                f"dry run: backfill of {plan.total} window(s); the first, {first.label if first else ''}:"
            )
        run = PipelineRun(pipeline.dag, no_runner, selected=pipeline.selected, options=options, store=store,
                          pipeline_run_id=pipeline_run_id)  # fmt: skip
        render_plan(console, pipeline.dag, run.plan())
        raise typer.Exit(0)

    try:
        runner, cancel = spark_runner(
            engine,
            cache_references=cache_references,
            approval_required=approval_required,
            approval_file=approval,
        )
    except LakeLogicError as exc:
        err_console.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(2) from None

    saved = _saved_state(state_path) if pipeline_run_id and state_path is not None else None
    try:
        resuming_itself = not resume and resumes_by_itself(saved, plan, pipeline.selected)
    except (LakeLogicError, KeyError, ValueError, TypeError) as exc:  # a state file edited by hand
        err_console.print(f"[red]configuration error[/red]: {exc}")
        raise typer.Exit(2) from None
    if resuming_itself:
        assert saved is not None
        # §18: an orchestrator retries a task with its own run id and a shared state file; the retry
        # resumes that invocation instead of computing new windows and running every contract again
        err_console.print(
            f"resuming {pipeline_run_id} (pipeline run {saved.pipeline_run_id}) from {state_path}"
        )
        resume = True
    resumed: DriverState | None = None
    if resume:
        assert state_path is not None
        try:
            resumed = load_state(state_path)
        except LakeLogicError as exc:
            err_console.print(f"[red]error[/red]: {exc}")
            raise typer.Exit(2) from None
        if resumed.args.get("window") not in (None, spec.mode):
            err_console.print(
                f"[yellow]warning[/yellow]: --resume keeps the saved windows ({resumed.args['window']})"
            )
        try:
            plan = resume_plan(resumed)
        except (KeyError, ValueError, TypeError) as exc:
            err_console.print(f"[red]error[/red]: the state file's backfill cannot be read: {exc}")
            raise typer.Exit(2) from None
        if pipeline_run_id and plan.requested_run_id not in (None, pipeline_run_id):
            err_console.print(
                f"[yellow]warning[/yellow]: --resume continues {plan.requested_run_id}; "
                f"--pipeline-run-id {pipeline_run_id} is not used"
            )
    codes: list[int] = []
    for step, (index, fixed) in enumerate(plan.windows):
        options.window_override = fixed
        options.backfill_id = plan.backfill_id
        resuming = resumed if step == 0 else None
        run_id = plan.run_id(index)
        as_of = datetime.now(UTC)
        if resuming is not None:
            # saved nodes keep their own windows (the runner reads them from the state first)
            run_id, as_of = resuming.pipeline_run_id, resuming.as_of
        run_id = run_id or str(uuid.uuid4())
        state = resuming
        if state is None and state_path is not None:
            args: dict[str, Any] = {
                "layers": sorted({pipeline.dag.nodes[n].layer for n in pipeline.selected}),
                "window": spec.mode,
            } | plan.state_args(index)
            state = DriverState(state_path, run_id, as_of, plan.backfill_id, args)
            state.save()
        if exporter is not None:
            exporter.start(run_id, engine, options.environment)
        try:
            result = _execute(
                pipeline, runner, cancel, options, store, run_id, as_of, live, state, resuming, exporter
            )
        finally:
            close = getattr(runner, "close", None)
            if callable(close):
                close()  # the reference cache lives for one pipeline run
        label = fixed.label if fixed else result.window_label(spec.mode)
        summary = build_summary(
            result,
            pipeline.dag,
            engine=engine,
            environment=options.environment,
            window_label=label,
            backfill_id=plan.backfill_id,
        )
        render_summary(console, pipeline.dag, result, summary)
        if summary_table:
            # the run log's file or folder only when the summary goes to the same kind of store
            same_store = summary_backend == getattr(store, "backend", "duckdb")
            try:
                write_summary(
                    summary,
                    table=summary_table,
                    database=summary_database or (store.path if same_store else None),
                    backend=summary_backend,
                )
            except (LakeLogicError, OSError) as exc:
                err_console.print(f"[yellow]warning[/yellow]: the pipeline summary was not written: {exc}")
        try:  # reports of the run: a full disk must not turn a clean pipeline into a failed one
            if summary_path:
                atomic_write_json(summary_path, summary.to_dict())
            if metrics_path and metrics_path.suffix == ".prom":
                atomic_write_text(metrics_path, prometheus_text(summary, prefix=metrics_prefix, tags=tags))
            elif metrics_path:
                atomic_write_json(metrics_path, metrics_payload(summary, tags))
        except OSError as exc:
            err_console.print(f"[yellow]warning[/yellow]: a summary or metrics file was not written: {exc}")
        if exporter is not None:
            exporter.finish(summary.counters())  # §15.3 pipeline gauges, once per pipeline run
        codes.append(result.exit_code)
        if plan.backfill and result.exit_code == 1:
            err_console.print(f"[red]backfill stopped[/red] at window {index + 1}/{plan.total} ({label})")
            break
    if exporter is not None:
        time.sleep(max(0.0, metrics_linger_seconds))  # let a scraper read the final values
        exporter.shutdown()
    raise typer.Exit(1 if 1 in codes else 3 if 3 in codes else 0)


def _execute(
    pipeline: Pipeline,
    runner: ContractRunner,
    cancel: Any,
    options: DriverOptions,
    store: Any,
    pipeline_run_id: str,
    as_of: datetime,
    live: bool,
    state: DriverState | None,
    resumed: DriverState | None,
    exporter: MetricsExporter | None,
) -> PipelineResult:
    board = LiveBoard(pipeline.dag, sorted(pipeline.selected), console=console, enabled=live)

    def on_event(node_id: str, status: str, outcome: Outcome | None) -> None:
        board.update(node_id, status, outcome)
        if exporter is not None and outcome is not None:
            exporter.observe(contract_row(pipeline.dag.nodes[node_id], outcome, run.windows.get(node_id)))

    run = PipelineRun(
        pipeline.dag,
        runner,
        selected=pipeline.selected,
        options=options,
        store=store,
        pipeline_run_id=pipeline_run_id,
        as_of=as_of,
        on_event=on_event,
        cancel=cancel,
        state=state,
        resume=resumed,
    )
    with board:
        return run.execute()


def _saved_state(state_path: Path) -> DriverState | None:
    """The state a state file holds; None when there is no readable state file."""
    try:
        return load_state(state_path)
    except LakeLogicError:
        return None
