"""The ``lakelogic`` command: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import typer

from lakelogic.cli import (
    approval_cmd,
    bootstrap_cmd,
    dag_cmd,
    decrypt_cmd,
    forget_cmd,
    plan_cmd,
    registry_cmd,
    reset_cmd,
    run_cmd,
    runs_cmd,
    table_cmd,
    validate_cmd,
)

app = typer.Typer(
    name="lakelogic",
    help="Contract-driven lakehouse pipelines (Open Lakehouse Contract v1).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

for module in (
    validate_cmd,
    plan_cmd,
    run_cmd,
    table_cmd,
    runs_cmd,
    registry_cmd,
    dag_cmd,
    reset_cmd,
    decrypt_cmd,
    forget_cmd,
    approval_cmd,
    bootstrap_cmd,
):
    module.register(app)


def main() -> None:  # pragma: no cover - console entry point
    app()
