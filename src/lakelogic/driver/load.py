"""From ``--registry`` paths to a validated DAG of effective contracts (DRIVER §5, before anything runs).

Every registry, hierarchy file and contract is loaded and every problem is collected, so a broken
configuration is reported in full (exit code 2) instead of one problem per attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakelogic.contract.hierarchy import resolve_effective
from lakelogic.driver.dag import ContractDag, build_dag
from lakelogic.driver.nodes import Node, build_node
from lakelogic.driver.registry import RegistryEntry, load_registries
from lakelogic.errors import LakeLogicError, RegistryError
from lakelogic.types import LAYERS, normalize_layer


class ConfigurationError(RegistryError):
    """Every problem found while loading a pipeline; the driver exits 2."""

    error_type = "configuration"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} configuration problem(s):\n  " + "\n  ".join(self.problems))


@dataclass
class Pipeline:
    dag: ContractDag
    selected: set[str]
    entries: list[RegistryEntry] = field(default_factory=list)


@dataclass(frozen=True)
class PackOptions:
    """``--policy-pack`` (for contracts without their own) and ``--policy-pack-dir``."""

    default: str | None = None
    directory: Path | None = None


def _node(
    entry: RegistryEntry, *, env: str | None, overrides: Mapping[str, Any] | None, packs: PackOptions
) -> Node:
    effective = resolve_effective(
        entry.contract_path,
        overrides=overrides,
        env=env,
        layer=entry.layer,
        entity=entry.entity,
        policy_packs=[(p, entry.registry_file.parent) for p in entry.policy_pack],
        default_policy_pack=(packs.default, Path.cwd()) if packs.default else None,
        policy_pack_dir=packs.directory,
    )
    info = effective.data.get("info") or {}
    for key, expected in (("domain", entry.registry_domain), ("system", entry.registry_system)):
        actual = info.get(key)
        if expected is not None and actual is not None and actual != expected:
            raise RegistryError(
                f"{entry.where}: registry {key} '{expected}' differs from {entry.contract_path}: "
                f"info.{key} '{actual}' (from the hierarchy or the contract)"
            )
    node = build_node(entry, effective.data, effective=effective)
    if effective.system is not None:
        node.external_sources = tuple(s.name for s in effective.system.external_sources)
    return node


def _problem_lines(exc: LakeLogicError) -> list[str]:
    problems = getattr(exc, "problems", None)
    if problems and all(hasattr(p, "render") for p in problems):
        return [p.render() for p in problems]
    return [str(exc)]


def select(
    dag: ContractDag,
    *,
    layers: Iterable[str] | None = None,
    entities: Iterable[str] | None = None,
    contracts: Iterable[str] | None = None,
    strict_layer_order: bool = False,
) -> set[str]:
    """Node ids chosen by ``--layers``, ``--entities`` and ``--contracts`` (DRIVER §9); unknown names fail."""
    chosen = set(dag.nodes)
    if layers:
        wanted = [normalize_layer(x.strip()) for x in layers if x.strip()]
        unknown = [x for x in wanted if x not in LAYERS]
        if unknown:
            raise RegistryError(
                f"--layers: unknown layer(s) {', '.join(map(str, unknown))}; allowed: {', '.join(LAYERS)}"
            )
        if strict_layer_order and wanted != sorted(wanted, key=lambda x: LAYERS.index(str(x))):
            raise RegistryError(
                f"--layers: {','.join(map(str, wanted))} is not in canonical order {','.join(LAYERS)}"
            )
        chosen = {n for n in chosen if dag.nodes[n].layer in wanted}
    if entities:
        names = {x.strip() for x in entities if x.strip()}
        known = {n.entity for n in dag.nodes.values()} | {n.name for n in dag.nodes.values()}
        unknown_names = sorted(names - known)
        if unknown_names:
            raise RegistryError(f"--entities: unknown entity or contract name(s): {', '.join(unknown_names)}")
        chosen = {n for n in chosen if dag.nodes[n].entity in names or dag.nodes[n].name in names}
    if contracts:
        wanted_c = {x.strip() for x in contracts if x.strip()}
        matched: set[str] = set()
        for item in wanted_c:
            hits = {
                n.id
                for n in dag.nodes.values()
                if item in (n.id, n.name) or Path(item).resolve() == n.contract_file
            }
            if not hits:
                raise RegistryError(f"--contracts: unknown contract {item!r}")
            matched |= hits
        chosen &= matched
    return chosen


def load_pipeline(
    registries: Iterable[Path] = (),
    *,
    reference: Iterable[Path] = (),
    gold: Iterable[Path] = (),
    env: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    dims_first: bool = True,
    layers: Iterable[str] | None = None,
    entities: Iterable[str] | None = None,
    contracts: Iterable[str] | None = None,
    strict_layer_order: bool = False,
    packs: PackOptions | None = None,
) -> Pipeline:
    """Load everything, resolve every effective contract, build the DAG and apply the selection."""
    try:
        entries = load_registries(registries, reference=reference, gold=gold)
    except LakeLogicError as exc:
        raise ConfigurationError(_problem_lines(exc)) from exc
    if not entries:
        raise ConfigurationError(["no contracts found in the given registries"])
    pack_options = packs or PackOptions()
    problems: list[str] = []
    nodes: list[Node] = []
    for entry in entries:
        try:
            nodes.append(_node(entry, env=env, overrides=None, packs=pack_options))
        except LakeLogicError as exc:
            problems.extend(_problem_lines(exc))
    if problems:
        raise ConfigurationError(problems)
    try:
        dag = build_dag(nodes, dims_first=dims_first)
        selected = select(
            dag, layers=layers, entities=entities, contracts=contracts, strict_layer_order=strict_layer_order
        )
    except LakeLogicError as exc:
        raise ConfigurationError(_problem_lines(exc)) from exc
    if overrides:
        # --set applies to every selected contract (DRIVER §9): re-resolve those with the overrides.
        for node_id in sorted(selected):
            node = dag.nodes[node_id]
            try:
                updated = _node(node.entry, env=env, overrides=overrides, packs=pack_options)
            except LakeLogicError as exc:
                problems.extend(_problem_lines(exc))
                continue
            if updated.id != node_id:
                problems.append(f"{node.contract_file}: --set changes the node id {node_id} -> {updated.id}")
                continue
            dag.nodes[node_id] = updated
        if problems:
            raise ConfigurationError(problems)
    return Pipeline(dag=dag, selected=selected, entries=entries)
