"""``lakelogic validate PATH...`` and ``lakelogic schema``: check contracts, export the JSON Schema."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from lakelogic.contract.loader import load_contract, load_yaml
from lakelogic.contract.models import Contract
from lakelogic.contract.overrides import attribute_overrides, parse_set_option
from lakelogic.contract.problems import position_of
from lakelogic.contract.schema import contract_json_schema
from lakelogic.errors import ContractError, LakeLogicError, PlanError, PlanErrors, Problem

_CONTRACT_SUFFIXES = (".yaml", ".yml")


def contract_files(paths: Iterable[Path]) -> list[Path]:
    """Files given directly, plus every ``*.yaml``/``*.yml`` under given directories whose name does
    not start with ``_`` (``_domain.yaml``/``_system.yaml`` are hierarchy files, not contracts)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix in _CONTRACT_SUFFIXES and not p.name.startswith("_")
            )
        else:
            found.append(path)
    return found


def _problem_line(problem: Problem) -> Text:
    line = Text("  ")
    where = problem.file + (f":{problem.line}:{problem.column}" if problem.line else "")
    line.append(where, style="bold")
    line.append(": ")
    line.append(problem.path or "<root>", style="cyan")
    line.append(": ")
    line.append(problem.message, style="red")
    if problem.value is not None:
        line.append(f" (got {problem.value})")
    if problem.suggestion:
        line.append("; did you mean ")
        line.append(f"'{problem.suggestion}'", style="green")
        line.append("?")
    if problem.allowed:
        line.append(f"; allowed: {problem.allowed}", style="dim")
    return line


def validate(
    paths: Annotated[list[Path], typer.Argument(help="Contract files or directories.", exists=True)],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a key before validation: dotted.path[0].key=value."),
    ] = None,
    standalone: Annotated[
        bool,
        typer.Option(
            "--standalone/--hierarchy",
            help="Validate each file alone, or (default) merged with its _domain.yaml/_system.yaml.",
        ),
    ] = False,
    env: Annotated[
        str | None, typer.Option("--env", help="Environment to bind hierarchy placeholders for.")
    ] = None,
) -> None:
    """Validate OLC contracts; print every problem, exit 1 if any contract is invalid."""
    console = Console(highlight=False, soft_wrap=True)
    try:
        overrides = dict(parse_set_option(option) for option in (set_ or []))
    except ContractError as exc:
        for problem in exc.problems:
            console.print(_problem_line(problem))
        raise typer.Exit(1) from None
    files = contract_files(paths)
    if not files:
        console.print("no contract files found", style="yellow")
        raise typer.Exit(1)
    invalid = 0
    for file in files:
        try:
            contract = _load(file, overrides, standalone=standalone, env=env)
            _compile(contract, file, overrides)
        except ContractError as exc:
            invalid += 1
            problems = sorted(exc.problems + _item_problems(exc, file, overrides), key=_in_file_order)
            console.print(Text.assemble(("✗ ", "red"), (str(file), "bold"), f"  {len(problems)} problem(s)"))
            for problem in problems:
                console.print(_problem_line(problem))
            continue
        except LakeLogicError as exc:  # e.g. an unreadable hierarchy file: report it, check the rest
            invalid += 1
            console.print(Text.assemble(("✗ ", "red"), (str(file), "bold"), f"  {exc.error_type}: "))
            console.print(Text(f"  {exc}", style="red"))
            continue
        console.print(Text.assemble(("✓ ", "green"), (str(file), "bold"), f"  {contract.contract_name}"))
    valid = len(files) - invalid
    style = "green" if invalid == 0 else "red"
    console.print(Text(f"{valid} valid, {invalid} invalid ({len(files)} file(s))", style=style))
    raise typer.Exit(0 if invalid == 0 else 1)


def _compile(contract: Contract, file: Path, overrides: dict[str, str]) -> None:
    """Compile the contract (no engine, no data): SQL that does not parse, unknown op parameters and the
    like are contract errors too (SEMANTICS §0), each named with its YAML path and line."""
    from lakelogic.notify import contract_problems
    from lakelogic.plan.compiler import compile_contract

    problems: list[Problem] = []
    try:
        compile_contract(contract)
    except PlanError as exc:
        errors = exc.errors if isinstance(exc, PlanErrors) else [exc]
        problems.extend(_plan_problems(errors, file, overrides))
    # §16: unusable channels of a strict contract and template syntax errors are load errors too
    problems.extend(_positioned(contract_problems(contract, file=str(file)), file))
    if problems:
        raise ContractError(problems) from None


def _item_problems(exc: ContractError, file: Path, overrides: dict[str, str]) -> list[Problem]:
    """The SQL (and other single-item) problems of a document that failed validation, so they come in
    the same pass as its schema problems. An item whose path already has a problem is not repeated."""
    if exc.document is None:
        return []
    from lakelogic.plan.item_checks import item_problems

    taken = [p.path for p in exc.problems]
    found = _plan_problems(item_problems(exc.document), file, overrides)
    return [p for p in found if not any(_related(p.path, t) for t in taken)]


def _in_file_order(problem: Problem) -> tuple[int, int, str]:
    return (problem.line or 10**9, problem.column, problem.path)  # problems without a line go last


def _related(path: str, other: str) -> bool:
    """One path is the other or lies inside it."""
    inner, outer = (path, other) if len(path) >= len(other) else (other, path)
    return inner == outer or inner.startswith((outer + ".", outer + "["))


def _positions(file: Path) -> Any:
    """The YAML positions of ``file`` (empty when it cannot be read again)."""
    try:
        return load_yaml(file, duplicates=[])[1]  # a duplicate key was reported already
    except LakeLogicError:
        return {}


def _positioned(problems: list[Problem], file: Path) -> list[Problem]:
    positions = _positions(file)
    out = []
    for problem in problems:
        line, column = position_of(problem.path, positions)
        out.append(replace(problem, line=line, column=column))
    return out


def _plan_problems(errors: list[PlanError], file: Path, overrides: dict[str, str]) -> list[Problem]:
    """Plan errors as problems at their line; SQL given by ``--set`` is the option's problem."""
    positions = _positions(file)
    problems = []
    for error in errors:
        line, column = position_of(error.yaml_path or "", positions)
        message = error.reason + (f" ({error.hint})" if error.hint else "")
        problems.append(
            Problem(file=str(file), path=error.yaml_path or "", message=message, line=line, column=column)
        )
    return attribute_overrides(problems, overrides)


def _load(file: Path, overrides: dict[str, str], *, standalone: bool, env: str | None) -> Contract:
    if standalone:
        return load_contract(file, overrides=overrides or None)
    # The effective contract is what runs: domain -> system -> file -> --set (DRIVER §2.4).
    from lakelogic.contract.hierarchy.resolve import resolve_effective

    return resolve_effective(file, overrides=overrides or None, env=env).contract


def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the JSON Schema to this file.")
    ] = None,
) -> None:
    """Print (or write) the JSON Schema of LakeLogic contracts, for editor autocompletion."""
    text = json.dumps(contract_json_schema(), indent=2, ensure_ascii=False)
    if output is None:
        typer.echo(text)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        err = Console(stderr=True, highlight=False)
        err.print(f"[red]error:[/red] cannot write {output}: {exc.strerror}")
        raise typer.Exit(1) from None
    Console(highlight=False).print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add ``validate`` and ``schema`` to the ``lakelogic`` app."""
    app.command("validate")(validate)
    app.command("schema")(schema)
