"""Renderings of a contract DAG (DRIVER §17): text, Mermaid, Graphviz DOT, JSON and self-contained HTML.

Pure functions returning strings; ``statuses`` (node id → run-log status) colours nodes when given.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping

from lakelogic.driver.dag import ContractDag

COLOURS = {
    "succeeded": "#2e7d32",
    "no_new_data": "#66bb6a",
    "partial": "#f9a825",
    "gated": "#ef6c00",
    "skipped": "#8e24aa",
    "failed": "#c62828",
    "awaiting_approval": "#1565c0",
    "rejected": "#6a1b9a",
    None: "#607d8b",
}


def _ids(dag: ContractDag, among: set[str] | None) -> list[str]:
    return [n for layer in dag.layers() for n in dag.layer_nodes(layer) if among is None or n in among]


def to_text(
    dag: ContractDag, among: set[str] | None = None, statuses: Mapping[str, str] | None = None
) -> str:
    lines: list[str] = []
    for layer in dag.layers():
        ids = [n for n in dag.layer_nodes(layer) if among is None or n in among]
        if not ids:
            continue
        lines.append(f"{layer}:")
        for i, gen in enumerate(dag.generations(layer, ids)):
            lines.append(f"  generation {i}:")
            for node_id in gen:
                ups = dag.upstreams(node_id)
                status = f" [{statuses[node_id]}]" if statuses and node_id in statuses else ""
                disabled = " (disabled)" if not dag.nodes[node_id].enabled else ""
                after = f"  <- {', '.join(ups)}" if ups else ""
                lines.append(f"    {node_id}{status}{disabled}{after}")
    return "\n".join(lines) + "\n"


def _safe(node_id: str) -> str:
    return node_id.replace(".", "__").replace("-", "_")


def to_mermaid(
    dag: ContractDag, among: set[str] | None = None, statuses: Mapping[str, str] | None = None
) -> str:
    ids = _ids(dag, among)
    lines = ["flowchart LR"]
    for layer in dag.layers():
        members = [n for n in ids if dag.nodes[n].layer == layer]
        if members:
            lines.append(f"  subgraph {layer}")
            lines.extend(f'    {_safe(n)}["{n}"]' for n in members)
            lines.append("  end")
    chosen = set(ids)
    for u, v in sorted(dag.graph.edges()):
        if u in chosen and v in chosen:
            arrow = "-.->" if dag.edge(u, v).implicit else "-->"
            lines.append(f"  {_safe(u)} {arrow} {_safe(v)}")
    for n in ids:
        if statuses and n in statuses:
            lines.append(f"  style {_safe(n)} fill:{COLOURS.get(statuses[n], COLOURS[None])},color:#fff")
    return "\n".join(lines) + "\n"


def to_dot(dag: ContractDag, among: set[str] | None = None, statuses: Mapping[str, str] | None = None) -> str:
    ids = _ids(dag, among)
    lines = ["digraph lakelogic {", "  rankdir=LR;", "  node [shape=box, style=filled, fontcolor=white];"]
    for layer in dag.layers():
        members = [n for n in ids if dag.nodes[n].layer == layer]
        if members:
            lines.append(f'  subgraph "cluster_{layer}" {{ label="{layer}";')
            for n in members:
                colour = COLOURS.get(statuses.get(n) if statuses else None, COLOURS[None])
                lines.append(f'    "{n}" [fillcolor="{colour}"];')
            lines.append("  }")
    chosen = set(ids)
    for u, v in sorted(dag.graph.edges()):
        if u in chosen and v in chosen:
            style = " [style=dashed]" if dag.edge(u, v).implicit else ""
            lines.append(f'  "{u}" -> "{v}"{style};')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_json(
    dag: ContractDag, statuses: Mapping[str, str] | None = None, among: set[str] | None = None
) -> str:
    """``dag.to_json()`` restricted to ``among`` (the selected nodes: their layers, generations and the
    edges between them), nodes with their run status when ``statuses`` is given."""
    data = dag.to_json()
    nodes: list[dict[str, object]] = data["nodes"]  # type: ignore[assignment]
    if among is not None:
        nodes = data["nodes"] = [n for n in nodes if n["id"] in among]
        edges: list[dict[str, object]] = data["edges"]  # type: ignore[assignment]
        data["edges"] = [e for e in edges if e["from"] in among and e["to"] in among]
        data["layers"] = [
            {"layer": layer, "generations": dag.generations(layer, among)}
            for layer in dag.layers()
            if any(dag.nodes[n].layer == layer for n in among)
        ]
    if statuses:
        for node in nodes:
            node["status"] = statuses.get(str(node["id"]))
    return json.dumps(data, indent=2) + "\n"


def to_html(
    dag: ContractDag,
    among: set[str] | None = None,
    statuses: Mapping[str, str] | None = None,
    title: str = "LakeLogic DAG",
) -> str:
    """One HTML file with an inline SVG: a column per layer and generation, nodes coloured by status."""
    ids = _ids(dag, among)
    box_w, box_h, gap_x, gap_y, pad = 230, 34, 60, 16, 30
    positions: dict[str, tuple[int, int]] = {}
    column = 0
    headers: list[tuple[int, str]] = []
    for layer in dag.layers():
        members = [n for n in ids if dag.nodes[n].layer == layer]
        if not members:
            continue
        headers.append((column, layer))
        for gen in dag.generations(layer, members):
            for row, node_id in enumerate(gen):
                positions[node_id] = (pad + column * (box_w + gap_x), pad + 30 + row * (box_h + gap_y))
            column += 1
    width = pad * 2 + max(column, 1) * (box_w + gap_x)
    height = pad * 2 + 30 + max((y for _, y in positions.values()), default=0) + box_h
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
             '<defs><marker id="arrow" markerWidth="10" markerHeight="7" refX="10" refY="3.5" orient="auto">'
             '<polygon points="0 0, 10 3.5, 0 7" fill="#555"/></marker></defs>']  # fmt: skip
    for col, layer in headers:
        x = pad + col * (box_w + gap_x)
        parts.append(f'<text x="{x}" y="{pad}" font-weight="bold">{html.escape(layer)}</text>')
    for u, v in sorted(dag.graph.edges()):
        if u in positions and v in positions:
            (x1, y1), (x2, y2) = positions[u], positions[v]
            dash = ' stroke-dasharray="4"' if dag.edge(u, v).implicit else ""
            parts.append(
                f'<line x1="{x1 + box_w}" y1="{y1 + box_h // 2}" x2="{x2}" y2="{y2 + box_h // 2}" '
                f'stroke="#555"{dash} marker-end="url(#arrow)"/>'
            )
    for node_id, (x, y) in positions.items():
        status = statuses.get(node_id) if statuses else None
        colour = COLOURS.get(status, COLOURS[None])
        label = html.escape(node_id + (f" [{status}]" if status else ""))
        parts.append(
            f'<g><title>{html.escape(node_id)}</title><rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" '
            f'rx="6" fill="{colour}"/>'
            f'<text x="{x + 8}" y="{y + 22}" fill="#fff" font-size="12">{label}</text></g>'
        )
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="background:{c};color:#fff;padding:2px 6px;margin:2px">'
        f"{html.escape(str(s or 'not run'))}</span>"
        for s, c in COLOURS.items()
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body style='font-family:sans-serif'><h1>{html.escape(title)}</h1><p>{legend}</p>"
        + "".join(parts)
        + "</body></html>\n"
    )
