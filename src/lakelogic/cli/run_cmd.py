"""``lakelogic run CONTRACT``: run one contract on Spark and summarise (or print as JSON) its report.

Exit codes: 0 succeeded/partial/no_new_data, 1 failed run, 2 invalid contract. User errors are shown as
one clean message (never a JVM stack trace); ``--json`` prints only the report on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lakelogic.errors import ContractError, LakeLogicError, PlanError

if TYPE_CHECKING:
    from lakelogic.report import MaterializationInfo, RunReport

_CONTRACT_ERRORS = {"contract", "plan", "unsupported"}  # exit 2: fix the contract or the setup
TOP_RULES = 10


def register(app: typer.Typer) -> None:
    """Add ``run`` to the ``lakelogic`` app."""
    app.command("run")(run)


def run(
    contract: Annotated[Path, typer.Argument(help="Contract YAML file.")],
    source: Annotated[
        str | None, typer.Option("--source", help="Read this path instead of source.path.")
    ] = None,
    output_good: Annotated[
        str | None, typer.Option("--output-good", help="Also write good rows as Parquet here.")
    ] = None,
    output_bad: Annotated[
        str | None, typer.Option("--output-bad", help="Also write quarantined rows as Parquet here.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a contract key: --set a.b=value (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run report as JSON on stdout.")] = False,
    no_write: Annotated[bool, typer.Option("--no-write", help="Do not materialize the target.")] = False,
    target: Annotated[str | None, typer.Option("--target", help="Materialize to this table or path.")] = None,
    env: Annotated[
        str | None, typer.Option("--env", help="Active environment (else LAKELOGIC_ENV): environments.<env>.")
    ] = None,
    approval_required: Annotated[
        bool,
        typer.Option("--approval-required", help="Stage the batch for approval when the gate triggers."),
    ] = False,
    approval_file: Annotated[
        Path | None, typer.Option("--approval-file", help="An approval file that may approve the batch.")
    ] = None,
) -> None:
    """Run CONTRACT once: read, transform, validate, quarantine, and materialize when it has a target."""
    err = Console(stderr=True)
    processor = _load(contract, set_, err, as_json=as_json)
    # `--target` without a `materialization` block appends there, as `run(materialize=True, target=…)`
    materialize = (processor.contract_has_materialization or target is not None) and not no_write
    from lakelogic.engines.spark.errors_text import clean_error_message

    _quiet_spark_logs()
    try:
        with err.status(f"running {processor.contract.contract_name} on Spark…", spinner="dots"):
            result = processor.run(
                source,
                materialize=materialize,
                target=target,
                output_good=output_good,
                output_bad=output_bad,
                env=env,
                approval_required=approval_required,
                approval_file=approval_file,
                record=False,  # recorded below, with a warning when the store cannot be written
                before_commit=_intent_recorder(processor.contract, err),
            )
    except LakeLogicError as exc:  # e.g. an unreadable approval file: before anything ran
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        _json_error(as_json, "configuration", str(exc))
        raise typer.Exit(2) from None
    except Exception as exc:  # noqa: BLE001 - programming/JVM errors: one clean line, exit 1
        err.print(f"[red]run crashed:[/red] {clean_error_message(exc)}", highlight=False, markup=True)
        from lakelogic.report import RunReport as Report

        crashed = exc.__dict__.get("lakelogic_report")
        if isinstance(crashed, Report):  # the engine's failed report: logged and printed all the same
            _record(crashed, processor.contract, err, no_write=False)
            if as_json:
                typer.echo(json.dumps(crashed.to_json_dict(), indent=2, default=str))
        else:  # `--json` always prints JSON on stdout
            _json_error(as_json, "internal", clean_error_message(exc))
        raise typer.Exit(1) from None
    report = result.report
    _record(report, processor.contract, err, no_write=processor.contract_has_materialization and no_write)
    if as_json:
        typer.echo(json.dumps(report.to_json_dict(), indent=2, default=str))
    else:
        render_summary(report, Console())
    if report.status == "failed":
        error_type = report.error.type if report.error else ""
        if not as_json:
            err.print(
                f"[red]run failed[/red] ({error_type}): {report.error.message if report.error else ''}",
                highlight=False,
            )
        raise typer.Exit(2 if error_type in _CONTRACT_ERRORS else 1)
    if report.status == "awaiting_approval":
        raise typer.Exit(3)  # DRIVER §13: nothing failed, the batch awaits approval


def _quiet_spark_logs() -> None:
    """Spark logs a failing task's JVM stack trace at ERROR on stderr; the CLI reports the failure itself
    (report.error, with the full traceback in --json), so only fatal Spark messages are shown."""
    from lakelogic import spark_session

    spark_session().sparkContext.setLogLevel("FATAL")


class _Processor:
    """A loaded contract and its DataProcessor (kept separate so loading errors exit with 2)."""

    def __init__(self, processor: Any) -> None:
        self._processor = processor
        self.contract = processor.contract

    @property
    def contract_has_materialization(self) -> bool:
        return getattr(self.contract, "materialization", None) is not None

    def run(self, source: str | None, **kwargs: Any) -> Any:
        return self._processor.run(source, **kwargs)


def _load(contract: Path, set_: list[str] | None, err: Console, *, as_json: bool = False) -> _Processor:
    from lakelogic.api import DataProcessor
    from lakelogic.contract.overrides import parse_set_option

    if not contract.is_file():
        err.print(f"[red]error:[/red] contract file not found: {contract}")
        _json_error(as_json, "contract", f"contract file not found: {contract}")
        raise typer.Exit(2)
    try:
        overrides = dict(parse_set_option(option) for option in set_ or [])
        processor = DataProcessor(contract, overrides=overrides or None)
        processor.plan  # compile now: plan errors are contract errors (exit 2)  # noqa: B018
    except ContractError as exc:
        err.print(f"[red]invalid contract[/red] {contract}:", highlight=False)
        for problem in exc.problems:
            err.print(f"  {problem.render()}", highlight=False, markup=False, soft_wrap=True)
        _json_error(as_json, "contract", f"invalid contract {contract}", [p.render() for p in exc.problems])
        raise typer.Exit(2) from None
    except PlanError as exc:
        err.print(f"[red]cannot plan[/red] {escape(f'{contract}: {exc}')}", highlight=False, soft_wrap=True)
        _json_error(as_json, "plan", f"{contract}: {exc}")
        raise typer.Exit(2) from None
    return _Processor(processor)


def _json_error(as_json: bool, kind: str, message: str, problems: list[str] | None = None) -> None:
    """``--json``: stdout carries JSON also when the run never started (a report-shaped error object)."""
    if as_json:
        error = {"type": kind, "message": message, "problems": problems or []}
        typer.echo(json.dumps({"status": "failed", "error": error}, indent=2))


def _intent_recorder(contract: Any, err: Console) -> Any:
    """The run's ``committing`` row, written just before its target commit into the store ``_record``
    writes the final row to (a crash in between is then recovered by the next run)."""

    def record(report: RunReport) -> None:
        try:
            from lakelogic.runlog import record_commit_intent, store_for_contract

            record_commit_intent(report, store=store_for_contract(contract))
        except Exception as exc:  # noqa: BLE001 - the commit goes ahead; only its crash recovery is lost
            err.print(
                f"[yellow]warning:[/yellow] the run's commit intent was not recorded in the run log: {exc}",
                highlight=False,
            )

    return record


def _record(report: RunReport, contract: Any, err: Console, *, no_write: bool) -> None:
    """``no_write``: the run skipped the contract's target (``--no-write``): recorded as ``run_mode:
    no_write``, which moves no ``last_success`` window or cursor (nothing was committed)."""
    try:
        from lakelogic.runlog import record_run, store_for_contract
    except ImportError:
        return  # the run log is optional
    try:
        # the contract's own store (metadata.run_log_*, or its system's storage.run_log), §15.1
        extra = {"run_mode": "no_write"} if no_write else {}
        record_run(report, store=store_for_contract(contract), **extra)
    except Exception as exc:  # noqa: BLE001 - reported as a warning; the run result still shows
        err.print(
            f"[yellow]warning:[/yellow] the run was not recorded in the run log: {exc}", highlight=False
        )


def render_summary(report: RunReport, console: Console) -> None:
    """Counts, top failing rules, dataset rules and materialization as Rich tables."""
    c = report.counts
    colour = {"succeeded": "green", "partial": "yellow", "no_new_data": "cyan"}.get(str(report.status), "red")
    console.print(
        f"[bold]{report.contract}[/bold]  status [{colour}]{report.status}[/{colour}]  "
        f"run {report.run_id}  {report.duration_seconds or 0:.1f}s",
        highlight=False,
    )
    counts = Table(title="rows", show_header=True)
    for name in ("source", "good", "quarantined", "filtered", "expanded", "quarantine ratio"):
        counts.add_column(name, justify="right")
    counts.add_row(
        str(c.source),
        str(c.good),
        str(c.quarantined),
        str(c.filtered),
        str(c.expanded),
        f"{c.quarantine_ratio:.2%}",
    )
    console.print(counts)
    failing = sorted((r for r in report.rules if r.failed), key=lambda r: -r.failed)[:TOP_RULES]
    if failing:
        rules = Table(title="top failing rules")
        for name in ("rule", "severity", "category", "failed"):
            rules.add_column(name, justify="right" if name == "failed" else "left")
        for r in failing:
            rules.add_row(r.name, r.severity, r.category, str(r.failed))
        console.print(rules)
    if report.dataset_rules:
        ds = Table(title="dataset rules")
        for name in ("rule", "severity", "passed", "observed", "expected"):
            ds.add_column(name)
        for d in report.dataset_rules:
            passed = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "n/a"}[d.passed]
            ds.add_row(d.name, d.severity, passed, str(d.observed), str(d.expected))
        console.print(ds)
    if report.service_levels:
        slos = Table(title="service levels")
        for name in ("objective", "passed", "observed", "threshold"):
            slos.add_column(name)
        for o in report.service_levels:
            passed = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "not measured"}[o.passed]
            slos.add_row(o.objective, passed, str(o.observed), str(o.threshold))
        console.print(slos)
    if report.materialization is not None:
        console.print(materialization_line(report.materialization), highlight=False)
    for note in report.notifications:
        state = "[green]sent[/green]" if note.delivered else f"[red]not sent[/red] ({note.error})"
        console.print(f"notification {note.event} → {note.channel}: {state}", highlight=False)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)


def materialization_line(m: MaterializationInfo) -> str:
    """One line on what the write did: target, strategy, row counts, and the commit it made (or why none)."""
    counts = f"inserted {m.rows_inserted}, updated {m.rows_updated}, deleted {m.rows_deleted}"
    if m.strategy == "scd2" or m.versions_closed:
        counts += f", versions closed {m.versions_closed}"
    if m.already_committed:
        commit = "already committed (by this run before, or this backfill window earlier): nothing written"
    elif m.committed:
        commit = f"committed {'snapshot ' + m.snapshot if m.snapshot else 'without a snapshot id'}"
    else:
        commit = "nothing to commit"
    quarantine = ""
    if m.quarantine_target:
        quarantine = f"; quarantine {m.quarantine_target} ({m.quarantine_rows_written} rows)"
    return f"materialized {m.target} ({m.format}, {m.strategy}): {counts}; {commit}{quarantine}"
