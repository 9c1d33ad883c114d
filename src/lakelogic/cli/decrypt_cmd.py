"""``lakelogic decrypt``: reverse the ``encrypt`` masking for key holders (SEMANTICS §5.4)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from lakelogic.errors import LakeLogicError


def decrypt(
    values: Annotated[
        list[str] | None,
        typer.Argument(help="enc: values; none or '-' reads one value per line from stdin."),
    ] = None,
    pii_vault: Annotated[
        str | None,
        typer.Option("--pii-vault", help="Key reference (env://NAME); default LAKELOGIC_PII_KEY."),
    ] = None,
) -> None:
    """Print the plain text of each encrypted value, one per line; exit 1 if any value does not decrypt."""
    from lakelogic.engines.pii import decrypt_value, pii_key

    err = Console(stderr=True, highlight=False)
    try:
        key = pii_key(pii_vault)
    except LakeLogicError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(2) from None
    items = values or ["-"]
    lines = [line.rstrip("\n") for line in sys.stdin] if items == ["-"] else items
    failed = 0
    for value in lines:
        if not value:
            typer.echo("")
            continue
        try:
            typer.echo(decrypt_value(value.strip(), key))
        except LakeLogicError as exc:
            failed += 1
            err.print(f"error: {exc}", markup=False)
    raise typer.Exit(1 if failed else 0)


def register(app: typer.Typer) -> None:
    app.command("decrypt")(decrypt)
