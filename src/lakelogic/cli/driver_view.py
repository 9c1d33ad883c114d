"""Rich rendering for the driver: live node board, dry-run plan, final summary."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from lakelogic.driver.dag import ContractDag
from lakelogic.driver.gates import Block, Outcome
from lakelogic.driver.runner import PipelineResult
from lakelogic.driver.windows import Window
from lakelogic.runlog.summary import PipelineSummary

STYLES = {
    "pending": "dim",
    "running": "cyan",
    "succeeded": "green",
    "no_new_data": "green",
    "partial": "yellow",
    "skipped": "magenta",
    "failed": "red",
    "awaiting_approval": "blue",
    "rejected": "magenta",
}


def _reason(outcome: Outcome | None) -> str:
    if outcome is None:
        return ""
    if outcome.skip_reason:
        text = outcome.skip_reason
        if outcome.root_cause:
            text += f", root_cause {outcome.root_cause}"
        if outcome.skip_detail:
            text += f" ({outcome.skip_detail})"
        return text
    if outcome.gated:
        return f"gated: {outcome.gate_reason}"
    return outcome.error or ""


class LiveBoard:
    """A live table of node states, updated from the driver's event callback (scheduler thread)."""

    def __init__(
        self, dag: ContractDag, node_ids: list[str], *, console: Console, enabled: bool = True
    ) -> None:
        self.dag = dag
        self.order = sorted(node_ids, key=lambda n: (dag.nodes[n].layer_index, n))
        self.states: dict[str, tuple[str, Outcome | None]] = {n: ("waiting", None) for n in self.order}
        self.console = console
        self.live = Live(self._table(), console=console, refresh_per_second=4) if enabled else None

    def _table(self) -> Table:
        table = Table(title="lakelogic-driver", expand=False)
        for column in ("node", "state", "seconds", "detail"):
            table.add_column(column)
        for node_id in self.order:
            state, outcome = self.states[node_id]
            seconds = f"{outcome.duration_seconds:.1f}" if outcome and outcome.finished_at else ""
            style = STYLES.get(state, "")
            table.add_row(
                node_id, f"[{style}]{state}[/{style}]" if style else state, seconds, _reason(outcome)
            )
        return table

    def update(self, node_id: str, state: str, outcome: Outcome | None) -> None:
        self.states[node_id] = (state, outcome)
        if self.live is not None:
            self.live.update(self._table())

    def __enter__(self) -> LiveBoard:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.live.__exit__(exc_type, exc, tb)


def render_plan(
    console: Console, dag: ContractDag, plan: list[tuple[str, int, str, Window, Block | None]]
) -> None:
    table = Table(title="dry run: what would run")
    for column in ("layer", "gen", "node", "source", "window", "decision"):
        table.add_column(column, overflow="fold")
    for layer, gen, node_id, window, block in plan:
        decision = "[green]run[/green]" if block is None else f"[magenta]skip[/magenta]: {block.describe()}"
        source = dag.nodes[node_id].data.get("source") or {}
        location = str(source.get("path") or source.get("table") or source.get("type") or "")
        table.add_row(layer, str(gen), node_id, location, window.describe(), decision)
    console.print(table)


def render_summary(
    console: Console, dag: ContractDag, result: PipelineResult, summary: PipelineSummary
) -> None:
    table = Table(title=f"pipeline run {result.pipeline_run_id}: {result.status} (exit {result.exit_code})")
    for column in ("node", "status", "seconds", "good", "quarantined", "detail"):
        table.add_column(column)
    for row in summary.contracts:
        style = STYLES.get(row["status"], "")
        outcome = result.outcomes.get(row["node_id"])
        table.add_row(
            row["node_id"],
            f"[{style}]{row['status']}[/{style}]" if style else row["status"],
            f"{row['duration_seconds']:.1f}",
            str(row["rows_good"]),
            str(row["rows_quarantined"]),
            _reason(outcome),
        )
    console.print(table)
    layers = Table(title="layers: wall time vs. sum of contract durations")
    for column in ("layer", "wall seconds", "sum of contract seconds", "contracts"):
        layers.add_column(column)
    for layer, wall in result.layer_seconds.items():
        rows: list[dict[str, Any]] = [r for r in summary.contracts if r["layer"] == layer]
        total = sum(r["duration_seconds"] for r in rows)
        layers.add_row(layer, f"{wall:.1f}", f"{total:.1f}", str(len(rows)))
    console.print(layers)
