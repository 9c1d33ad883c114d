"""Strict models of ``_domain.yaml`` and ``_system.yaml`` (DRIVER §2.2, §2.3).

Unknown keys are errors, except top-level ``x-*`` keys (YAML anchor holders), which are dropped before
validation. Blocks that are defaults for contract blocks stay free-form mappings here: the merged
contract is validated as a whole, so each key is checked once, by the contract models.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lakelogic.errors import ContractError, Problem

Block = dict[str, Any]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Contact(_Strict):
    name: str | None = None
    role: str | None = None
    email: str | None = None
    slack: str | None = None
    teams: str | None = None
    webhook: str | None = None


class Ownership(_Strict):
    domain_owner: str | None = None
    team: str | None = None
    cost_center: str | None = None
    contacts: list[Contact] = Field(default_factory=list)


class RunLogStorage(_Strict):
    backend: str | None = None
    database: str | None = None
    table: str | None = None


class Storage(_Strict):
    catalog: str | None = None
    namespaces: dict[str, str] = Field(default_factory=dict)
    quarantine_namespace: str = "quarantine"
    quarantine_table_name: str = "{table}"
    landing_root: str | None = None
    warehouse: str | None = None
    storage_mode: str = "catalog"
    run_log: RunLogStorage | None = None


class Environment(BaseModel):
    """``environments.<env>``: ``catalog`` required, any other key becomes a placeholder (§2.5)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    catalog: str


class ExternalSource(_Strict):
    name: str
    type: str | None = None
    source_domain: str | None = None
    catalog_path: str | None = None
    consumed_by: list[str] = Field(default_factory=list)


class _Common(_Strict):
    """Keys both hierarchy levels share."""

    description: str | None = None
    display_name: str | None = None
    ownership: Ownership | None = None
    storage: Block | None = None
    slo: Block | None = None
    notifications: list[Block] | None = None
    notifications_enabled: bool | None = None
    quarantine: Block | None = None
    lineage: Block | None = None
    compliance: Block | None = None
    metadata: Block | None = None
    materialization: dict[str, Block | None] | None = None  # _all and per layer
    server: dict[str, Block | None] | None = None  # per layer
    cost: Block | None = None


class DomainFile(_Common):
    domain: str
    reference_layer: str | None = None
    bronze_layer: str | None = None
    silver_layer: str | None = None
    gold_layer: str | None = None
    retention: dict[str, str] | None = None
    locked: list[str] = Field(default_factory=list)
    products: Any = None
    observatory: Any = None


class SystemFile(_Common):
    system: str
    domain: str | None = None
    contracts: list[Block] = Field(default_factory=list)  # validated by the driver registry
    environments: dict[str, Environment] = Field(default_factory=dict)
    extraction_defaults: Block | None = None
    external_sources: list[ExternalSource] = Field(default_factory=list)


def _problems(file: Path, exc: ValidationError) -> list[Problem]:
    out = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            out.append(Problem(file=str(file), path=path, message="unknown key"))
        else:
            out.append(Problem(file=str(file), path=path, message=err["msg"]))
    return out


def _strip_x_keys(data: Any, file: Path) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ContractError(Problem(file=str(file), path="", message="must be a mapping"))
    return {k: v for k, v in data.items() if not str(k).startswith("x-")}


def parse_domain(data: Any, file: Path) -> DomainFile:
    try:
        return DomainFile.model_validate(_strip_x_keys(data, file))
    except ValidationError as exc:
        raise ContractError(_problems(file, exc)) from None


def parse_system(data: Any, file: Path) -> SystemFile:
    try:
        return SystemFile.model_validate(_strip_x_keys(data, file))
    except ValidationError as exc:
        raise ContractError(_problems(file, exc)) from None


def parse_storage(block: Mapping[str, Any] | None, file: str) -> Storage:
    try:
        return Storage.model_validate(dict(block or {}))
    except ValidationError as exc:
        raise ContractError(_problems(Path(file), exc)) from None
