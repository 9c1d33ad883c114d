"""Default targets from the hierarchy's storage settings (DRIVER §2.2 ``*_layer``, §2.3 ``storage``).

Only fills gaps: a contract with a ``materialization`` block and no explicit location gets
``materialization.target_path`` when the hierarchy names a catalog, a namespace for its layer, or path
storage; its quarantine gets a table name when the hierarchy names the quarantine namespace or table pattern.
Without such settings nothing is added, so the engine's own defaults (S§13.1) apply unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lakelogic.contract.hierarchy.merge import Origin, get_path
from lakelogic.contract.hierarchy.models import DomainFile, Storage
from lakelogic.types import slugify

_EXPLICIT = ("materialization.target_path", "materialization.location", "server.path")


def storage_defaults(
    data: dict[str, Any],
    *,
    storage: Storage,
    storage_keys: set[str],
    domain: DomainFile | None,
    env_values: Mapping[str, str],
    layer: str | None,
    source: str,
) -> dict[str, Origin]:
    """Set default target/quarantine names in ``data``; return the origins of what was set."""
    mat = data.get("materialization")
    if not isinstance(mat, dict) or layer is None or any(get_path(data, p) for p in _EXPLICIT):
        return {}
    info = data.get("info") or {}
    table = str(info.get("table_name") or slugify(str(info.get("title") or "table")))
    layer_name = getattr(domain, f"{layer}_layer", None) if domain else None
    namespace = storage.namespaces.get(layer) or layer_name or layer
    catalog = env_values.get("catalog") or storage.catalog
    origins: dict[str, Origin] = {}
    if storage.storage_mode == "path":
        root = env_values.get("storage_root") or storage.warehouse
        if root:
            mat["target_path"] = f"{str(root).rstrip('/')}/{namespace}/{table}"
            origins["materialization.target_path"] = Origin(source, "inherited")
        return origins
    if catalog or namespace != layer:
        catalog = catalog or os.environ.get("LAKELOGIC_CATALOG", "lakelogic")
        mat["target_path"] = f"{catalog}.{namespace}.{table}"
        origins["materialization.target_path"] = Origin(source, "inherited")
    quarantine = data.setdefault("quarantine", {})
    explicit_q = (
        any(quarantine.get(k) for k in ("target", "table", "location"))
        if isinstance(quarantine, dict)
        else True
    )
    if not explicit_q and ({"quarantine_namespace", "quarantine_table_name"} & storage_keys or catalog):
        q_catalog = catalog or os.environ.get("LAKELOGIC_CATALOG", "lakelogic")
        q_table = storage.quarantine_table_name.replace("{table}", data.get("dataset") or table)
        quarantine["table"] = f"{q_catalog}.{storage.quarantine_namespace}.{q_table}"
        origins["quarantine.table"] = Origin(source, "inherited")
    if isinstance(quarantine, dict) and not quarantine:
        data.pop("quarantine")
    return origins


def run_log_defaults(data: dict[str, Any], storage: Storage, source: str) -> dict[str, Origin]:
    """``storage.run_log {backend, database, table}`` as the contract's ``metadata.run_log_*`` (DRIVER
    §15.1), so ``lakelogic run``, the API and the driver read one setting. A contract naming its own
    backend or database has chosen another store and inherits none of it; one naming only its table keeps
    the system's store."""
    settings = storage.run_log
    meta = data.get("metadata")
    if settings is None or (meta is not None and not isinstance(meta, dict)):
        return {}
    own = meta or {}
    if own.get("run_log_backend") is not None or own.get("run_log_database") is not None:
        return {}
    inherited = {
        f"run_log_{key}": value
        for key, value in settings.model_dump().items()
        if value is not None and own.get(f"run_log_{key}") is None
    }
    if inherited:
        data["metadata"] = {**own, **inherited}
    return {f"metadata.{key}": Origin(source, "inherited") for key in inherited}
