"""Driver registries (DRIVER §3): ``_registry.yaml``, a ``_system.yaml``'s ``contracts:``, or a directory.

Every form becomes a flat list of :class:`RegistryEntry`, one per (contract file, layer). Invalid registries
fail before anything runs with a :class:`RegistryError` naming the file, the entry (index and entity) and key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lakelogic.contract.hierarchy.yamlio import read_yaml
from lakelogic.errors import ContractError, RegistryError
from lakelogic.types import LAYERS, normalize_layer

KINDS = ("dimension", "fact", "other")


@dataclass(frozen=True)
class UpstreamRef:
    """An upstream name from a registry entry or contract, with where it was written (for errors)."""

    name: str
    critical: bool = True
    source: str = ""  # "file: yaml.path"


@dataclass(frozen=True)
class RegistryEntry:
    contract_path: Path
    registry_file: Path
    index: int
    entity: str | None = None
    layer: str | None = None
    enabled: bool = True
    upstream: tuple[UpstreamRef, ...] = ()
    critical: bool = True
    kind: str | None = None
    timeout_minutes: float | None = None
    retries: int | None = None
    max_quarantine_ratio: float | None = None
    policy_pack: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    registry_domain: str | None = (
        None  # the registry's top-level domain/system, checked against the hierarchy
    )
    registry_system: str | None = None

    @property
    def where(self) -> str:
        label = f" ({self.entity})" if self.entity else ""
        return f"{self.registry_file}: entries[{self.index}]{label}"


class _UpstreamItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    critical: bool = True


class _EntryModel(BaseModel):
    """Strict shape of one entry; ``path`` and ``depends_on`` are accepted aliases."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    entity: str | None = None
    contract_path: str | None = Field(default=None, alias="path")
    contracts: dict[str, str] | None = None
    layer: str | None = None
    enabled: bool = True
    upstream: list[str | _UpstreamItem] = Field(default_factory=list)
    critical: bool = True
    kind: str | None = None
    timeout_minutes: float | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0)
    max_quarantine_ratio: float | None = Field(default=None, ge=0)
    policy_pack: str | list[str] | None = None
    description: str | None = None

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        if value is not None and value not in KINDS:
            raise ValueError(f"must be one of {', '.join(KINDS)}")
        return value

    @field_validator("layer")
    @classmethod
    def _layer(cls, value: str | None) -> str | None:
        norm = normalize_layer(value)
        if norm is not None and norm not in LAYERS:
            raise ValueError(f"unknown layer {value!r}; allowed: {', '.join(LAYERS)}")
        return norm


_TOP_KEYS = {"version", "domain", "system", "defaults", "entries", "description"}
_ENTRY_ALIASES = {"path": "contract_path", "depends_on": "upstream"}


def _canonical(raw: Mapping[str, Any], file: Path, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        canon = _ENTRY_ALIASES.get(str(key), str(key))
        if canon in out:
            raise RegistryError(f"{file}: {where}: both '{canon}' and its alias '{key}' are set")
        out[canon] = value
    return out


def _entry_error(file: Path, index: int, entity: Any, exc: ValidationError) -> RegistryError:
    label = f" ({entity})" if entity else ""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "<entry>"
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{file}: entries[{index}]{label}: {key}: {message}")
    return RegistryError("invalid registry entry:\n  " + "\n  ".join(lines))


def _expand(
    raw_entry: Any,
    *,
    index: int,
    file: Path,
    defaults: Mapping[str, Any],
    default_layer: str | None,
    identity: tuple[str | None, str | None] = (None, None),
) -> list[RegistryEntry]:
    if not isinstance(raw_entry, Mapping):
        raise RegistryError(f"{file}: entries[{index}]: must be a mapping, got {type(raw_entry).__name__}")
    merged = {**_canonical(defaults, file, "defaults"), **_canonical(raw_entry, file, f"entries[{index}]")}
    try:
        model = _EntryModel.model_validate(merged)
    except ValidationError as exc:
        raise _entry_error(file, index, merged.get("entity"), exc) from exc
    where = f"{file}: entries[{index}]" + (f" ({model.entity})" if model.entity else "")
    if (model.contract_path is None) == (model.contracts is None):
        raise RegistryError(
            f"{where}: exactly one of 'contract_path' (alias 'path') or 'contracts' is required"
        )
    if model.entity is None and "entity" not in raw_entry and file.name == "_registry.yaml":
        raise RegistryError(f"{where}: entity: required")
    ups = tuple(
        UpstreamRef(item, True, f"{where}: upstream[{i}]")
        if isinstance(item, str)
        else UpstreamRef(item.name, item.critical, f"{where}: upstream[{i}]")
        for i, item in enumerate(model.upstream)
    )
    packs = (model.policy_pack,) if isinstance(model.policy_pack, str) else tuple(model.policy_pack or ())
    pairs: list[tuple[str | None, str]]
    if model.contracts is not None:
        pairs = []
        for layer_key, rel in model.contracts.items():
            norm = normalize_layer(layer_key)
            if norm not in LAYERS:
                raise RegistryError(
                    f"{where}: contracts.{layer_key}: unknown layer; allowed: {', '.join(LAYERS)}"
                )
            pairs.append((norm, rel))
    else:
        assert model.contract_path is not None
        pairs = [(model.layer or default_layer, model.contract_path)]
    entries = []
    for layer, rel in pairs:
        path = (file.parent / rel).resolve()
        if not path.is_file():
            raise RegistryError(f"{where}: contract file not found: {rel} (looked at {path})")
        entries.append(
            RegistryEntry(
                contract_path=path,
                registry_file=file,
                index=index,
                entity=model.entity,
                layer=layer,
                enabled=model.enabled,
                upstream=ups,
                critical=model.critical,
                kind=model.kind,
                timeout_minutes=model.timeout_minutes,
                retries=model.retries,
                max_quarantine_ratio=model.max_quarantine_ratio,
                policy_pack=packs,
                registry_domain=identity[0],
                registry_system=identity[1],
            )
        )
    return entries


def load_registry_file(path: Path, *, default_layer: str | None = None) -> list[RegistryEntry]:
    """Entries of one ``_registry.yaml`` or ``_system.yaml`` (its ``contracts:`` list)."""
    path = path.resolve()
    try:
        data = read_yaml(path)
    except ContractError as exc:
        raise RegistryError(str(exc)) from exc
    if not isinstance(data, Mapping):
        raise RegistryError(f"{path}: a registry must be a mapping")
    identity = (data.get("domain"), data.get("system"))
    if path.name == "_system.yaml":
        items = data.get("contracts") or []
        defaults: Mapping[str, Any] = {}
    else:
        unknown = sorted(set(data) - _TOP_KEYS)
        if unknown:
            raise RegistryError(
                f"{path}: unknown top-level key(s): {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(_TOP_KEYS))}"
            )
        if data.get("version", 1) != 1:
            raise RegistryError(
                f"{path}: version: unsupported registry version {data.get('version')!r}; allowed: 1"
            )
        if "entries" not in data:
            raise RegistryError(f"{path}: entries: required")
        items = data.get("entries") or []
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, Mapping):
            raise RegistryError(f"{path}: defaults: must be a mapping")
    if not isinstance(items, list):
        raise RegistryError(
            f"{path}: {'contracts' if path.name == '_system.yaml' else 'entries'}: must be a list"
        )
    out: list[RegistryEntry] = []
    for index, raw in enumerate(items):
        out.extend(
            _expand(
                raw, index=index, file=path, defaults=defaults, default_layer=default_layer, identity=identity
            )
        )
    _check_unique_entities(out)
    return out


def _check_unique_entities(entries: Iterable[RegistryEntry]) -> None:
    seen: dict[tuple[str, str | None], RegistryEntry] = {}
    for entry in entries:
        if entry.entity is None:
            continue
        key = (entry.entity, entry.layer)
        if key in seen and entry.layer is not None:
            raise RegistryError(
                f"{entry.where}: entity '{entry.entity}' appears twice in layer {entry.layer} "
                f"(also {seen[key].where})"
            )
        seen[key] = entry


def _looks_like_contract(path: Path) -> bool:
    try:
        data = read_yaml(path)
    except ContractError:
        return False
    return isinstance(data, Mapping) and "info" in data and "model" in data


def discover(path: Path, *, default_layer: str | None = None) -> list[RegistryEntry]:
    """Entries from a registry file, a ``_system.yaml``, or a directory (DRIVER §3, ``--registry``)."""
    path = path.resolve()
    if path.is_file():
        return load_registry_file(path, default_layer=default_layer)
    if not path.is_dir():
        raise RegistryError(f"registry not found: {path}")
    files = sorted(p for p in path.rglob("*.yaml") if p.name in ("_registry.yaml", "_system.yaml"))
    if files:
        out: list[RegistryEntry] = []
        for file in files:
            out.extend(load_registry_file(file, default_layer=default_layer))
        return out
    contracts = sorted(
        p for p in path.rglob("*.y*ml") if not p.name.startswith("_") and p.suffix in (".yaml", ".yml")
    )
    return [
        RegistryEntry(contract_path=p, registry_file=path, index=i, layer=default_layer)
        for i, p in enumerate(c for c in contracts if _looks_like_contract(c))
    ]


def load_registries(
    registries: Iterable[Path] = (),
    *,
    reference: Iterable[Path] = (),
    gold: Iterable[Path] = (),
) -> list[RegistryEntry]:
    """All entries of every ``--registry``, ``--reference-registry`` and ``--gold-registry``."""
    out: list[RegistryEntry] = []
    for layer, paths in ((None, registries), ("reference", reference), ("gold", gold)):
        for path in paths:
            out.extend(discover(Path(path), default_layer=layer))
    return out
