"""Placeholder for the `lakelogic-driver` app."""

from __future__ import annotations

import typer

app = typer.Typer(name="lakelogic-driver", add_completion=False, pretty_exceptions_enable=False)
