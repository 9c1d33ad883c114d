"""A DAG node: one registry entry bound to its effective contract (DRIVER §1, §4.1, §4.3)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakelogic.driver.registry import RegistryEntry, UpstreamRef
from lakelogic.errors import RegistryError
from lakelogic.types import LAYERS, normalize_layer, slugify

_DIM = re.compile(r"(^|_)dim_")
_FACT = re.compile(r"(^|_)fact_")


@dataclass
class Node:
    """One contract in the DAG. ``data`` is the effective contract as a plain mapping."""

    id: str
    name: str
    layer: str
    entity: str
    entry: RegistryEntry
    data: Mapping[str, Any]
    table_name: str
    domain: str | None = None
    system: str | None = None
    kind: str = "other"
    upstream: tuple[UpstreamRef, ...] = ()
    effective: Any = None  # lakelogic.contract.hierarchy.EffectiveContract when resolved from files
    external_sources: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def contract_file(self) -> Path:
        return self.entry.contract_path

    @property
    def enabled(self) -> bool:
        return self.entry.enabled

    @property
    def layer_index(self) -> int:
        return LAYERS.index(self.layer)


def contract_name(data: Mapping[str, Any]) -> str:
    """``dataset`` (or ``info.dataset``), else ``info.table_name``, else the slug of ``info.title`` (S§2)."""
    info = data.get("info") or {}
    for candidate in (data.get("dataset"), info.get("dataset"), info.get("table_name")):
        if candidate:
            return str(candidate)
    return slugify(str(info.get("title") or ""))


def _layer(entry: RegistryEntry, data: Mapping[str, Any]) -> str:
    info = data.get("info") or {}
    declared = normalize_layer(info.get("target_layer")) or normalize_layer(data.get("tier"))
    if entry.layer and declared and declared in LAYERS and entry.layer != declared:
        raise RegistryError(
            f"{entry.where}: layer '{entry.layer}' disagrees with {entry.contract_path}: "
            f"info.target_layer '{declared}'"
        )
    layer = entry.layer or declared
    if layer not in LAYERS:
        raise RegistryError(
            f"{entry.contract_path}: info.target_layer: cannot tell the contract's layer "
            f"(got {layer!r}); set info.target_layer or the registry entry's layer; "
            f"allowed: {', '.join(LAYERS)}"
        )
    return layer


def _upstream_refs(entry: RegistryEntry, data: Mapping[str, Any]) -> tuple[UpstreamRef, ...]:
    file = str(entry.contract_path)
    meta = data.get("metadata") or {}
    non_critical = set(meta.get("non_critical_upstreams") or [])
    refs: list[UpstreamRef] = []
    info = data.get("info") or {}
    for key, items in (("upstream", data.get("upstream")), ("info.upstream", info.get("upstream"))):
        for i, name in enumerate(items or []):
            refs.append(UpstreamRef(str(name), str(name) not in non_critical, f"{file}: {key}[{i}]"))
    for i, ref in enumerate(data.get("upstream_contracts") or []):
        name = str(ref.get("contract")) if isinstance(ref, Mapping) else str(ref)
        if isinstance(ref, Mapping) and ref.get("layer"):
            name = f"{normalize_layer(ref['layer'])}.{name}"
        elif isinstance(ref, Mapping) and ref.get("domain") and ref.get("system"):
            name = f"{ref['domain']}.{ref['system']}.{name}"
        refs.append(UpstreamRef(name, name not in non_critical, f"{file}: upstream_contracts[{i}].contract"))
    for ref in entry.upstream:
        refs.append(UpstreamRef(ref.name, ref.critical and ref.name not in non_critical, ref.source))
    return tuple(refs)


def node_kind(entry: RegistryEntry, data: Mapping[str, Any], name: str) -> str:
    """Dimension/fact classification of §4.3; an explicit entry ``kind`` wins."""
    if entry.kind:
        return entry.kind
    mat = data.get("materialization") or {}
    if mat.get("strategy") == "scd2" or mat.get("scd2") or mat.get("unknown_member") or _DIM.search(name):
        return "dimension"
    if mat.get("fact") or _FACT.search(name):
        return "fact"
    return "other"


def build_node(entry: RegistryEntry, data: Mapping[str, Any], *, effective: Any = None) -> Node:
    name = contract_name(data)
    if not name:
        raise RegistryError(f"{entry.contract_path}: info.title: required to name the contract")
    layer = _layer(entry, data)
    info = data.get("info") or {}
    meta = data.get("metadata") or {}
    return Node(
        id=f"{layer}.{name}",
        name=name,
        layer=layer,
        entity=entry.entity or name,
        entry=entry,
        data=data,
        table_name=str(info.get("table_name") or slugify(str(info.get("title") or name))),
        domain=info.get("domain") or meta.get("domain"),
        system=info.get("system") or meta.get("system"),
        kind=node_kind(entry, data, name),
        upstream=_upstream_refs(entry, data),
        effective=effective,
        metadata=meta,
    )
