"""The effective contract: domain → system → contract file → ``--set``, locked, bound, validated.

DRIVER §2.1 (discovery), §2.4 (merge order, locked paths), §2.5 (environment binding and
placeholders). Policy packs (§10) are not applied yet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import getaddresses
from pathlib import Path
from typing import Any

from lakelogic.contract.hierarchy.checks import (
    check_hierarchy_locks,
    check_identity,
    check_locked,
    file_of,
    reattribute,
)
from lakelogic.contract.hierarchy.environment import bind_environment, placeholder_values
from lakelogic.contract.hierarchy.merge import Merger, Origin, drop_nulls, get_path, has_path, leaf_paths
from lakelogic.contract.hierarchy.models import (
    DomainFile,
    Storage,
    SystemFile,
    parse_domain,
    parse_storage,
    parse_system,
)
from lakelogic.contract.hierarchy.packs import PolicyPack, append_rules, apply_transformations, load_pack
from lakelogic.contract.hierarchy.placeholders import substitute
from lakelogic.contract.hierarchy.targets import run_log_defaults, storage_defaults
from lakelogic.contract.hierarchy.yamlio import read_yaml
from lakelogic.contract.loader import prepare_document, validate_document
from lakelogic.contract.models import Contract
from lakelogic.contract.overrides import apply_overrides, parse_override_path
from lakelogic.contract.yaml_io import load_yaml
from lakelogic.errors import ContractError, Problem
from lakelogic.types import normalize_layer

ROOT_MARKERS = (".git", "pyproject.toml", "lakelogic.yaml")
# Contract blocks that receive hierarchy defaults only when the contract declares them: adding a
# `materialization` block would make a non-writing contract write (SEMANTICS §1.4).
_DECLARED_ONLY = ("materialization", "server", "extraction")


@dataclass
class EffectiveContract:
    contract: Contract
    data: dict[str, Any]
    origins: dict[str, Origin]
    domain: DomainFile | None
    system: SystemFile | None
    storage: Storage
    environment: str
    layer: str | None
    contract_file: Path
    domain_file: Path | None = None
    system_file: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    placeholders: dict[str, str] = field(default_factory=dict)
    policy_packs: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.contract.contract_name

    def origin(self, path: str) -> Origin | None:
        """Origin of a leaf, or of the nearest recorded ancestor/descendant mapping."""
        if path in self.origins:
            return self.origins[path]
        parts = path.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = ".".join(parts[:i])
            if parent in self.origins:
                return self.origins[parent]
        return None


def find_project_root(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return Path(start.anchor)


def _nearest(start: Path, name: str, root: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / name).is_file():
            return candidate / name
        if candidate == root:
            break
    return None


def find_hierarchy(contract_path: Path) -> tuple[Path | None, Path | None]:
    """``(_domain.yaml, _system.yaml)`` of a contract, either possibly None (DRIVER §2.1)."""
    here = contract_path.resolve().parent
    root = find_project_root(here)
    system = _nearest(here, "_system.yaml", root)
    domain = _nearest(system.parent if system else here, "_domain.yaml", root)
    return domain, system


_TEMPLATE_FILE_KEYS = ("subject_template_file", "message_template_file", "body_template_file")


def _anchored(channel: Any, base: Path) -> Any:
    """A hierarchy channel with its template files made absolute: they are relative to the file that
    declares the channel, not to each contract that inherits it."""
    if not isinstance(channel, Mapping):
        return channel
    out = dict(channel)
    for key in _TEMPLATE_FILE_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            out[key] = str((base / value).resolve())
    return out


CONTACT_EVENTS = ["failure", "slo_breach"]


def _contact_channels(doc: DomainFile | SystemFile) -> list[dict[str, Any]]:
    """Ownership contacts become channels for ``failure`` and ``slo_breach`` (DRIVER §2.2): an e-mail
    address, and Slack/Teams/webhook values that are URLs. A Slack channel name (``#team``) needs a bot
    token the hierarchy cannot know about, so it stays documentation."""
    if doc.ownership is None:
        return []
    out: list[dict[str, Any]] = []
    for contact in doc.ownership.contacts:
        for _, address in getaddresses([contact.email or ""]):  # "On call <oncall@x.com>" forms too
            if "@" in address and " " not in address:
                out.append({"type": "email", "to": address, "on_events": list(CONTACT_EVENTS)})
        for kind in ("slack", "teams", "webhook"):
            value = getattr(contact, kind)
            if value and "://" in value:
                out.append({"type": kind, "url": value, "on_events": list(CONTACT_EVENTS)})
    return out


def _layer_retention(
    data: dict[str, Any], origins: dict[str, Origin], levels: Sequence[Any], layer: str | None
) -> None:
    """DRIVER §2.2: the domain's ``retention: {<layer>: period}`` becomes the contract's
    ``compliance.retention.period`` unless the contract (or a compliance default) sets one.
    Without a ``column``, the lineage processed-at column is used when lineage writes it; otherwise
    ``lakelogic retention apply`` asks for one."""
    chosen: tuple[str, Path] | None = None
    for level in levels:
        table = getattr(level[0], "retention", None) if level is not None else None
        if layer and isinstance(table, Mapping):
            period = table.get(layer)
            if period:
                chosen = (str(period), level[1])
    if chosen is None:
        return
    compliance = data.get("compliance")
    if compliance is None:
        compliance = data["compliance"] = {}
    if not isinstance(compliance, dict):
        return  # the contract's own type error is reported by validation
    retention = compliance.get("retention")
    if retention is None:
        retention = compliance["retention"] = {}
    if not isinstance(retention, dict) or retention.get("period"):
        return
    retention["period"] = chosen[0]
    origins["compliance.retention.period"] = Origin(f"domain:{chosen[1]}", "inherited")
    lineage = data.get("lineage")
    writes_timestamp = (
        isinstance(lineage, dict)
        and lineage.get("enabled")
        and lineage.get("capture_timestamp", True) is not False
    )
    if not retention.get("column") and writes_timestamp and isinstance(lineage, dict):
        retention["column"] = str(lineage.get("timestamp_column_name") or "_lakelogic_processed_at")
        origins["compliance.retention.column"] = Origin(f"domain:{chosen[1]}", "inherited")


def _slo_extras(levels: Sequence[Any], layer: str | None, tables: frozenset[str]) -> dict[str, Any]:
    """The hierarchy ``slo`` settings with no v1 contract key (SEMANTICS §15): ``quality`` (completeness)
    and ``row_count.<layer>.anomaly``; a system's keys override its domain's. ``include_tables`` /
    ``exclude_tables`` of the layer's row_count block decide whether the anomaly check applies here."""
    quality: dict[str, Any] = {}
    anomaly: dict[str, Any] = {}
    alerting: dict[str, Any] = {}
    candidates: list[str] = []
    check_field: str | None = None
    warn_only = False
    for level in levels:
        if level is None or not level[0].slo:
            continue
        slo = level[0].slo
        if isinstance(slo.get("quality"), Mapping):
            quality.update(slo["quality"])
        if isinstance(slo.get("alerting"), Mapping):
            alerting.update(slo["alerting"])
        rows = (slo.get("row_count") or {}).get(layer) if layer else None
        if isinstance(rows, Mapping) and _applies(rows, tables):
            if isinstance(rows.get("anomaly"), Mapping):
                anomaly.update(rows["anomaly"])
            check_field = rows.get("check_field", check_field)
            warn_only = rows.get("warn_only", warn_only) is True
        fresh = (slo.get("freshness") or {}).get(layer) if layer else None
        if isinstance(fresh, Mapping) and fresh.get("check_columns") and _applies(fresh, tables):
            candidates = [str(c) for c in fresh["check_columns"]]
    out: dict[str, Any] = {}
    if quality:
        out["quality"] = quality
    if anomaly and anomaly.get("enabled", True) is not False:
        # the anomaly compares run counts; a row_count counting a column leaves it on counts_good
        counted = check_field if check_field and str(check_field).startswith("counts_") else "counts_good"
        out["anomaly"] = {"check_field": counted, **anomaly}
    if candidates:
        out["freshness_candidates"] = candidates
    if alerting:
        out["alerting"] = alerting
    if warn_only:
        out["row_count_warn_only"] = True
    return out


def _applies(block: Mapping[str, Any], tables: frozenset[str]) -> bool:
    """``include_tables`` / ``exclude_tables`` of a hierarchy slo block, matched against any name the
    contract goes by (table name, dataset, file name)."""
    include, exclude = block.get("include_tables"), block.get("exclude_tables")
    if include and not tables & set(include):
        return False
    return not (exclude and tables & set(exclude))


def _table_names(contract_doc: Mapping[str, Any], path: Path) -> frozenset[str]:
    """Every name a contract goes by: table name, dataset, the slug of its title, its file name."""
    info = contract_doc.get("info") or {}
    title = str(info.get("title") or "")
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    names = {info.get("table_name"), contract_doc.get("dataset"), slug, path.stem}
    return frozenset(str(n) for n in names if n)


def _hierarchy_layers(
    doc: DomainFile | SystemFile,
    layer: str | None,
    base: Path | None = None,
    tables: frozenset[str] = frozenset(),
) -> list[tuple[str, Any]]:
    """``(contract path, value)`` pairs a hierarchy file contributes, in merge order."""
    out: list[tuple[str, Any]] = []
    if doc.ownership is not None:
        owner = doc.ownership.team or doc.ownership.domain_owner
        if owner:
            out.append(("info.owner", owner))
        if doc.ownership.contacts:
            first = doc.ownership.contacts[0].model_dump(exclude_none=True)
            out.append(("info.contact", {k: str(v) for k, v in first.items()}))
    for block in ("quarantine", "lineage", "compliance", "metadata"):
        value = getattr(doc, block)
        if value is not None:
            out.append((block, value))
    if doc.materialization:
        for key in ("_all", layer):
            if key and doc.materialization.get(key):
                out.append(("materialization", doc.materialization[key]))
    if doc.server and layer and doc.server.get(layer):
        out.append(("server", doc.server[layer]))
    contact_channels = _contact_channels(doc)
    if (doc.notifications or contact_channels) and doc.notifications_enabled is not False:
        # contacts first: a channel the file declares for the same destination keeps its own texts
        channels = contact_channels + list(doc.notifications or [])
        out.append(("quarantine.notifications", [_anchored(c, base) for c in channels] if base else channels))
    if doc.notifications_enabled is not None:
        # the master switch (DRIVER §2.2, locked either way): `false` silences every channel of every
        # contract below; `true` keeps a contract from silencing the domain's channels
        out.append(("quarantine.notifications_enabled", doc.notifications_enabled))
    if doc.slo and layer:
        fresh = (doc.slo.get("freshness") or {}).get(layer)
        if (
            isinstance(fresh, Mapping)
            and fresh.get("max_delay_minutes") is not None
            and _applies(fresh, tables)
        ):
            slo: dict[str, Any] = {"threshold": f"{fresh['max_delay_minutes']}m"}
            if fresh.get("check_columns"):
                slo["field"] = fresh["check_columns"][0]
            out.append(("service_levels.freshness", slo))
        rows = (doc.slo.get("row_count") or {}).get(layer)
        if isinstance(rows, Mapping) and _applies(rows, tables):
            keep = {k: rows[k] for k in ("min_rows", "max_rows", "check_field") if k in rows}
            if keep:
                out.append(("service_levels.row_count", keep))
    if isinstance(doc, SystemFile) and doc.extraction_defaults:
        out.append(("extraction", doc.extraction_defaults))
    return out


def _contract_layer(data: Mapping[str, Any], layer: str | None) -> str | None:
    info = data.get("info") or {}
    return (
        normalize_layer(layer)
        or normalize_layer(info.get("target_layer"))
        or normalize_layer(data.get("tier"))
    )


def _normalise_override_path(path: str) -> str:
    return ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in parse_override_path(path)).replace(
        ".[", "["
    )


@dataclass
class _Merged:
    data: dict[str, Any]
    origins: dict[str, Origin]
    locked: dict[str, Any]


def _merge(
    path: Path,
    contract_doc: Mapping[str, Any],
    domain: tuple[DomainFile, Path] | None,
    system: tuple[SystemFile, Path] | None,
    layer: str | None,
    overrides: Mapping[str, Any],
    packs: Sequence[PolicyPack],
) -> _Merged:
    """Merge pack defaults → domain → system → contract → --set → pack enforce, rules and steps."""
    merger = Merger()
    for pack in packs:
        for block in pack.defaults(layer):
            merger.add(block, pack.source, hierarchy=True)
    locked: dict[str, Any] = {}
    for level in (domain, system):
        if level is None:
            continue
        doc, file = level
        source = f"{'domain' if isinstance(doc, DomainFile) else 'system'}:{file}"
        if isinstance(doc, DomainFile):
            merger.add({"info": {"domain": doc.domain}}, source, hierarchy=True)
        else:
            merger.add({"info": {"system": doc.system}}, source, hierarchy=True)
            if doc.domain and domain is None:
                merger.add({"info": {"domain": doc.domain}}, source, hierarchy=True)
        for at, value in _hierarchy_layers(doc, layer, file.parent, _table_names(contract_doc, path)):
            if at.split(".")[0] in _DECLARED_ONLY and at.split(".")[0] not in contract_doc:
                continue
            merger.add(value, source, hierarchy=True, at=at)
        if isinstance(doc, DomainFile):
            locked["info.domain"] = doc.domain
            if doc.notifications_enabled is not None:
                locked["quarantine.notifications_enabled"] = doc.notifications_enabled
            for lpath in doc.locked:
                if has_path(merger.data, lpath):
                    locked[lpath] = get_path(merger.data, lpath)
    merger.add(contract_doc, f"contract:{path}", hierarchy=False)
    set_paths: dict[str, Any] = {}
    for opath, value in overrides.items():
        norm = _normalise_override_path(opath)
        existed = norm in merger.origins or any(p.startswith(norm + ".") for p in merger.origins)
        merger.data = apply_overrides(merger.data, {opath: value})
        merger.origins = {p: o for p, o in merger.origins.items() if not p.startswith(norm + ".")}
        merger.origins[norm] = Origin("override:--set", "overridden" if existed else "declared")
        set_paths[norm] = get_path(merger.data, norm)
    problems: list[Problem] = []
    for pack in packs:
        for block in pack.enforced(layer):
            for leaf in leaf_paths(block):
                given = _set_value_at(set_paths, leaf)
                if given is not _NOT_SET and given != get_path(block, leaf):
                    problems.append(
                        Problem(
                            file="override:--set",
                            path=leaf,
                            message=f"is enforced by policy pack {pack.name}",
                            value=str(given),
                            allowed=str(get_path(block, leaf)),
                        )
                    )
            merger.add(block, pack.source, hierarchy=True)
            for leaf in leaf_paths(block):
                merger.origins[leaf] = Origin(pack.source, "enforced")
    if problems:
        raise ContractError(problems)
    source = ", ".join(p.source for p in packs)
    for touched in append_rules(merger.data, packs, layer):
        merger.origins[touched] = Origin(source, "appended")
    if apply_transformations(merger.data, packs, layer):
        merger.origins["transformations"] = Origin(source, "appended")
    origins = merger.mark_deep_merged()
    for lpath in locked:
        if lpath in origins and origins[lpath].source.startswith("domain:"):
            origins[lpath] = Origin(origins[lpath].source, "locked")
    return _Merged(merger.data, origins, locked)


def _pack_refs(
    merged: _Merged,
    entry_packs: Sequence[tuple[str, Path]],
    default_pack: tuple[str, Path] | None,
    path: Path,
) -> list[tuple[str, Path]]:
    """The contract's own packs (entry, else ``metadata.policy_pack``), else ``--policy-pack``."""
    if entry_packs:
        return list(entry_packs)
    declared = get_path(merged.data, "metadata.policy_pack")
    if declared:
        names = [declared] if isinstance(declared, str) else list(declared)
        origin = merged.origins.get("metadata.policy_pack")
        base = Path(file_of(origin, str(path))).parent if origin else path.parent
        return [(str(n), base) for n in names]
    return [default_pack] if default_pack else []


def resolve_effective(
    contract_path: str | Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: str | None = None,
    layer: str | None = None,
    entity: str | None = None,
    policy_packs: Sequence[tuple[str, Path]] = (),
    default_policy_pack: tuple[str, Path] | None = None,
    policy_pack_dir: Path | None = None,
) -> EffectiveContract:
    """Resolve the effective contract of one file (DRIVER §2.4, §2.5, §10); every problem in one error.

    ``policy_packs``: the registry entry's packs as ``(name or path, directory it is relative to)``;
    ``default_policy_pack``: ``--policy-pack`` for contracts without their own.
    """
    path = Path(contract_path).resolve()
    domain_file, system_file = find_hierarchy(path)
    domain = parse_domain(read_yaml(domain_file), domain_file) if domain_file else None
    system = parse_system(read_yaml(system_file), system_file) if system_file else None
    duplicates: list[Problem] = []  # reported with the validation problems, not instead of them
    raw, positions = load_yaml(path, duplicates=duplicates)
    contract_doc = prepare_document(raw, file=str(path), positions=positions)
    the_layer = _contract_layer(contract_doc, layer)
    levels = (
        (domain, domain_file) if domain is not None and domain_file is not None else None,
        (system, system_file) if system is not None and system_file is not None else None,
    )
    set_values = dict(overrides or {})
    merged = _merge(path, contract_doc, levels[0], levels[1], the_layer, set_values, ())
    refs = _pack_refs(merged, policy_packs, default_policy_pack, path)
    packs = [load_pack(ref, relative_to=base, pack_dir=policy_pack_dir) for ref, base in refs]
    if packs:
        merged = _merge(path, contract_doc, levels[0], levels[1], the_layer, set_values, packs)
    data, origins, locked = merged.data, merged.origins, merged.locked

    problems = check_identity(data, origins, domain, system, (domain_file, system_file))
    problems += [p for p in check_locked(data, origins, locked, domain_file) if p.path != "info.domain"]
    problems += check_hierarchy_locks(domain, system, domain_file, system_file)
    if problems:
        raise ContractError(problems)

    _layer_retention(data, origins, levels, the_layer)
    environment, env_values = bind_environment(env, system, system_file)
    storage_block: dict[str, Any] = {}
    for doc in (domain, system):
        if doc is not None and doc.storage:
            # §2.4: the system's storage deep-merges over the domain's (its `namespaces.gold` must not
            # drop the domain's bronze and silver namespaces)
            storage_block = _deep_merged(storage_block, doc.storage)
    storage = parse_storage(storage_block, str(system_file or domain_file or path))
    origins.update(
        storage_defaults(
            data,
            storage=storage,
            storage_keys=set(storage_block),
            domain=domain,
            env_values=env_values,
            layer=the_layer,
            source=f"system:{system_file}" if system_file else f"domain:{domain_file}",
        )
    )
    origins.update(
        run_log_defaults(data, storage, f"system:{system_file}" if system_file else f"domain:{domain_file}")
    )
    values = placeholder_values(data, domain, system, environment, env_values, storage, the_layer, entity)
    for key in env_values:
        origins.setdefault(
            f"environments.{environment}.{key}", Origin(f"environment:{environment}", "inherited")
        )

    def origin_file(p: str) -> str:
        return file_of(origins.get(p.split("[")[0]), str(path))

    bound = drop_nulls(substitute(data, values, origin_of=origin_file, default_file=str(path)))
    try:
        contract = validate_document(bound, file=str(path), positions=positions)
    except ContractError as exc:
        found = duplicates + [reattribute(p, origins, str(path)) for p in exc.problems]
        found.sort(key=lambda p: (p.line or 10**9, p.column, p.path))
        raise ContractError(found, document=bound) from None
    if duplicates:
        raise ContractError(duplicates, document=bound)
    contract._source_file = path
    region = values.get("region")
    contract._environment_region = str(region) if region else None
    names = _table_names(contract_doc, path) | {contract.contract_name}
    contract._hierarchy_slo = _slo_extras(levels, the_layer, names)
    return EffectiveContract(
        contract=contract,
        data=bound,
        origins=origins,
        domain=domain,
        system=system,
        storage=storage,
        environment=environment,
        layer=the_layer,
        contract_file=path,
        domain_file=domain_file,
        system_file=system_file,
        overrides=set_values,
        placeholders=values,
        policy_packs=[p.name for p in packs],
    )


def _deep_merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base`` per leaf (DRIVER §2.4): mappings merge, an explicit null clears."""
    merged = dict(base)
    for key, value in overlay.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _deep_merged(current, value)
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


_NOT_SET = object()


def _set_value_at(set_paths: Mapping[str, Any], leaf: str) -> Any:
    """The value a ``--set`` gives ``leaf``: set on the leaf itself, or inside a mapping set on one of its
    parents (``--set lineage={enabled: false}`` sets ``lineage.enabled``); ``_NOT_SET`` when none does."""
    for path, value in set_paths.items():
        if path == leaf:
            return value
        if leaf.startswith(path + ".") and isinstance(value, Mapping):
            inner = leaf[len(path) + 1 :]
            if has_path(value, inner):
                return get_path(value, inner)
    return _NOT_SET
