"""Environment binding and the placeholder values of DRIVER §2.5."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lakelogic.contract.hierarchy.models import DomainFile, Storage, SystemFile
from lakelogic.errors import ContractError, Problem
from lakelogic.types import LAYERS, slugify

DEFAULT_ENV = "dev"
_LAYER_KEYS = tuple(f"{layer}_layer" for layer in LAYERS)


def environment_name(env: str | None) -> str:
    """The active environment (§2.5): ``--env``, else ``LAKELOGIC_ENV``, else ``dev``."""
    return env or os.environ.get("LAKELOGIC_ENV") or DEFAULT_ENV


def bind_environment(
    env: str | None, system: SystemFile | None, system_file: Path | None
) -> tuple[str, dict[str, str]]:
    name = environment_name(env)
    if system is None or not system.environments:
        return name, {}
    if name not in system.environments:
        raise ContractError(
            Problem(
                file=str(system_file),
                path="environments",
                message=f"environment '{name}' is not defined",
                allowed=", ".join(sorted(system.environments)),
            )
        )
    values = system.environments[name].model_dump()
    return name, {k: str(v) for k, v in values.items() if v is not None and not isinstance(v, dict | list)}


def placeholder_values(
    data: Mapping[str, Any],
    domain: DomainFile | None,
    system: SystemFile | None,
    environment: str,
    env_values: Mapping[str, str],
    storage: Storage,
    layer: str | None,
    entity: str | None,
) -> dict[str, str]:
    info = data.get("info") or {}
    table = info.get("table_name") or slugify(str(info.get("title") or ""))
    name = data.get("dataset") or table
    values: dict[str, str] = {"env": environment, "table": str(table), "entity": str(entity or name)}
    if domain is not None:
        values["domain"] = domain.domain
    if system is not None:
        values["system"] = system.system
    if layer:
        values["layer"] = layer
    for layer_name, key in zip(LAYERS, _LAYER_KEYS, strict=True):
        values[key] = str(getattr(domain, key, None) or layer_name) if domain else layer_name
    for key, value in storage.model_dump().items():
        if value is not None and not isinstance(value, dict | list):
            values[key] = str(value)
    values.update(env_values)
    catalog = env_values.get("catalog") or storage.catalog
    if catalog:
        values["catalog"] = catalog
    return values
