"""The contract DAG (DRIVER §4): name resolution, edges, cycle detection, layer order, generations.

Edges point upstream → downstream. Every problem found while building is collected and raised together
as one :class:`DagError`, so a registry with three bad upstreams reports all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx

from lakelogic.driver.nodes import Node
from lakelogic.errors import DagError
from lakelogic.types import LAYERS


@dataclass(frozen=True)
class Edge:
    upstream: str
    downstream: str
    critical: bool = True
    implicit: bool = False  # the gold dims-before-facts rule (§4.3)


@dataclass
class ContractDag:
    nodes: dict[str, Node]
    graph: nx.DiGraph
    external: dict[str, set[str]] = field(default_factory=dict)  # node id -> satisfied external names

    def upstreams(self, node_id: str) -> list[str]:
        return sorted(self.graph.predecessors(node_id))

    def downstreams(self, node_id: str) -> list[str]:
        return sorted(self.graph.successors(node_id))

    def edge(self, upstream: str, downstream: str) -> Edge:
        edge: Edge = self.graph.edges[upstream, downstream]["edge"]
        return edge

    def layers(self) -> list[str]:
        present = {n.layer for n in self.nodes.values()}
        return [layer for layer in LAYERS if layer in present]

    def layer_nodes(self, layer: str) -> list[str]:
        return sorted(n for n, node in self.nodes.items() if node.layer == layer)

    def generations(self, layer: str, among: Iterable[str] | None = None) -> list[list[str]]:
        """Same-layer topological generations (waves) of ``among`` (default all nodes of the layer)."""
        chosen = set(among) if among is not None else set(self.layer_nodes(layer))
        ids = [n for n in self.layer_nodes(layer) if n in chosen]
        sub = self.graph.subgraph(ids)
        return [sorted(gen) for gen in nx.topological_generations(sub)]

    def generation_index(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for layer in self.layers():
            for i, gen in enumerate(self.generations(layer)):
                for node_id in gen:
                    out[node_id] = i
        return out

    def ancestors(self, node_id: str) -> set[str]:
        return set(nx.ancestors(self.graph, node_id))

    def to_json(self) -> dict[str, object]:
        """Orchestrator input (DRIVER §17, §18): layers, generations, nodes and edges."""
        return {
            "layers": [{"layer": layer, "generations": self.generations(layer)} for layer in self.layers()],
            "nodes": [
                {
                    "id": n.id,
                    "contract": n.name,
                    "layer": n.layer,
                    "entity": n.entity,
                    "kind": n.kind,
                    "enabled": n.enabled,
                    "contract_file": str(n.contract_file),
                    "upstream": self.upstreams(n.id),
                }
                for n in sorted(self.nodes.values(), key=lambda n: (n.layer_index, n.id))
            ],
            "edges": [
                {"from": u, "to": v, "critical": d["edge"].critical, "implicit": d["edge"].implicit}
                for u, v, d in sorted(self.graph.edges(data=True))
            ],
        }


class _Resolver:
    """Upstream name → node id, in the order of DRIVER §4.2."""

    def __init__(self, nodes: Sequence[Node], external: set[str]) -> None:
        self.by_id = {n.id: n for n in nodes}
        self.external = external
        self.indexes: list[dict[str, set[str]]] = [{}, {}, {}, {}]
        for n in nodes:
            self.indexes[0].setdefault(n.name, set()).add(n.id)
            self.indexes[1].setdefault(n.table_name, set()).add(n.id)
            if n.domain and n.system:
                self.indexes[2].setdefault(f"{n.domain}.{n.system}.{n.name}", set()).add(n.id)
            self.indexes[3].setdefault(n.entity, set()).add(n.id)

    def resolve(self, name: str) -> tuple[str | None, list[str]]:
        """(node id or None, candidates when ambiguous). ``None, []`` with ``name`` external = satisfied."""
        if name in self.by_id:
            return name, []
        for level, index in enumerate(self.indexes):
            found = sorted(index.get(name, ()))
            if len(found) == 1:
                return found[0], []
            if len(found) > 1 and level < 3:
                return None, found
            # an entity shared by several layers is not unique: fall through to external sources
        return None, []


def _cycle_text(cycle: list[tuple[str, str]]) -> str:
    names = [u for u, _ in cycle] + [cycle[0][0]]
    return " -> ".join(names)


def build_dag(
    nodes: Iterable[Node],
    *,
    dims_first: bool = True,
    external_sources: Iterable[str] = (),
) -> ContractDag:
    """Resolve every upstream name and build the DAG; raise one DagError listing every problem."""
    node_list = list(nodes)
    problems: list[str] = []
    by_id: dict[str, Node] = {}
    for n in node_list:
        if n.id in by_id:
            problems.append(
                f"duplicate node id {n.id}: {by_id[n.id].entry.where} and {n.entry.where} "
                f"({by_id[n.id].contract_file} / {n.contract_file})"
            )
            continue
        by_id[n.id] = n
    # §3: an entity is unique per layer. The registry checks entries that name their layer; a layer that
    # only the contract states is known here
    by_entity: dict[tuple[str, str], Node] = {}
    for n in by_id.values():
        other = by_entity.setdefault((n.layer, n.entity), n)
        if other is not n:
            where = f"{n.entry.where}: entity '{n.entity}'"
            problems.append(f"{where} appears twice in layer {n.layer} (also {other.entry.where})")
    externals = set(external_sources)
    for n in node_list:
        externals.update(n.external_sources)
    resolver = _Resolver(list(by_id.values()), externals)
    graph = nx.DiGraph()
    graph.add_nodes_from(by_id)
    satisfied: dict[str, set[str]] = {}
    for n in by_id.values():
        for ref in n.upstream:
            target, candidates = resolver.resolve(ref.name)
            if candidates:
                problems.append(f"{ref.source}: upstream '{ref.name}' is ambiguous: {', '.join(candidates)}")
                continue
            if target is None:
                if ref.name in externals:
                    satisfied.setdefault(n.id, set()).add(ref.name)
                else:
                    problems.append(
                        f"{ref.source}: unknown upstream '{ref.name}' (no node id, contract name, table "
                        "name, domain.system.name, entity or external source matches)"
                    )
                continue
            if target == n.id:
                problems.append(f"{ref.source}: contract {n.id} lists itself as upstream")
                continue
            up = by_id[target]
            if up.layer_index > n.layer_index:
                problems.append(
                    f"{ref.source}: upstream '{ref.name}' resolves to {target} in a later layer than {n.id}"
                )
                continue
            previous = graph.edges[target, n.id]["edge"] if graph.has_edge(target, n.id) else None
            critical = ref.critical and (previous.critical if previous else True)
            graph.add_edge(target, n.id, edge=Edge(target, n.id, critical=critical))
    if dims_first:
        gold = [n for n in by_id.values() if n.layer == "gold"]
        for dim in (n for n in gold if n.kind == "dimension"):
            for fact in (n for n in gold if n.kind == "fact"):
                if not graph.has_edge(dim.id, fact.id):
                    graph.add_edge(dim.id, fact.id, edge=Edge(dim.id, fact.id, implicit=True))
    if not problems:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            problems.append(f"dependency cycle: {_cycle_text(list(cycle))}")
    if problems:
        raise DagError("invalid contract DAG:\n  " + "\n  ".join(problems))
    return ContractDag(nodes=by_id, graph=graph, external=satisfied)
