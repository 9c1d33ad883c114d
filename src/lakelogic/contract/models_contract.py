"""The root model :class:`Contract` (OLC v1 top-level keys, SEMANTICS §1.4) and its identity helpers."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, StringConstraints, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lakelogic.contract.models_base import NAME_PATTERN, Columns, OLCModel
from lakelogic.contract.models_fields import Model, ModelField
from lakelogic.contract.models_meta import (
    DownstreamConsumer,
    ExternalLogic,
    Extraction,
    Info,
    Quarantine,
    ServiceLevels,
    UpstreamContractRef,
)
from lakelogic.contract.models_quality import Quality, QualityRule
from lakelogic.contract.models_source import Environment, Link, SchemaPolicy, Server, Source
from lakelogic.contract.models_target import Lineage, Materialization
from lakelogic.contract.models_transform import Transformation
from lakelogic.types import normalize_layer, slugify

SEMVER_PATTERN = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
EXTENSION_KEY_PATTERN = r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)+$"

ExtensionKey = Annotated[str, StringConstraints(pattern=EXTENSION_KEY_PATTERN)]


class Contract(OLCModel):
    """An Open Lakehouse Contract v1 document (plus LakeLogic's documented deviations, §1.5)."""

    version: str = Field(json_schema_extra={"pattern": SEMVER_PATTERN})
    info: Info
    model: Model
    dataset: str | None = None
    upstream: list[str] = Field(default_factory=list)
    upstream_contracts: list[UpstreamContractRef] = Field(default_factory=list)
    downstream: list[DownstreamConsumer] = Field(default_factory=list)
    tier: str | None = None
    source: Source | None = None
    links: list[Link] = Field(default_factory=list)
    primary_key: Columns = Field(default_factory=list)
    natural_key: Columns = Field(default_factory=list)
    schema_policy: SchemaPolicy = Field(default_factory=SchemaPolicy)
    server: Server | None = None
    environments: dict[str, Environment] = Field(default_factory=dict)
    transformations: list[Transformation] = Field(default_factory=list)
    quality: Quality = Field(default_factory=Quality)
    quarantine: Quarantine = Field(default_factory=Quarantine)
    materialization: Materialization | None = None  # absent = no write (§1.4)
    lineage: Lineage | None = None  # absent = off
    service_levels: ServiceLevels | None = None
    external_logic: ExternalLogic | None = None
    extraction: Extraction | None = None
    compliance: dict[str, Any] = Field(default_factory=dict)  # free-form
    metadata: dict[str, Any] = Field(default_factory=dict)  # free-form
    observatory: dict[str, Any] = Field(default_factory=dict)  # free-form
    extensions: dict[ExtensionKey, Any] = Field(default_factory=dict)
    schedule: str | None = None
    logic: str | None = None  # informational SQL, never executed
    contract_file_name: str | None = None

    _source_file: Path | None = PrivateAttr(default=None)
    # the hierarchy environment's `region` (DRIVER §2.5), for the §18 data_residency check
    _environment_region: str | None = PrivateAttr(default=None)
    # hierarchy `slo` settings without a contract key: quality (completeness), row_count anomaly (§15)
    _hierarchy_slo: dict[str, Any] = PrivateAttr(default_factory=dict)

    # --- document-level normalisation ------------------------------------------------------

    @model_validator(mode="before")
    @classmethod
    def _lift_info_identity(cls, data: Any) -> Any:
        """§1.5.4: ``info.dataset``/``info.upstream`` are aliases of the root keys."""
        if not isinstance(data, Mapping):
            return data
        info = data.get("info")
        if not isinstance(info, Mapping) or not ({"dataset", "upstream"} & set(info)):
            return data
        out = dict(data)
        info = dict(info)
        if "dataset" in info:
            inner = info.pop("dataset")
            if "dataset" in out and out["dataset"] != inner:
                raise PydanticCustomError(
                    "dataset_conflict",
                    "info.dataset '{inner}' differs from dataset '{outer}'; write one name",
                    {"inner": inner, "outer": out["dataset"]},
                )
            out["dataset"] = inner
        if "upstream" in info:
            inner_up = info.pop("upstream")
            outer_up = out.get("upstream")
            if isinstance(inner_up, list) and isinstance(outer_up, list):
                out["upstream"] = [*outer_up, *(u for u in inner_up if u not in outer_up)]
            elif outer_up is None:
                out["upstream"] = inner_up
            # otherwise leave the outer value; its type error is reported by the list validator
        out["info"] = info
        return out

    @field_validator("version", mode="before")
    @classmethod
    def _semver(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, str):
            hint = ""
            if isinstance(value, (int, float)):
                hint = f'; quote it, e.g. version: "{value}.0"' if isinstance(value, float) else ""
                hint = hint or f'; quote it, e.g. version: "{value}.0.0"'
            raise PydanticCustomError(
                "semver",
                "version must be a SemVer 2.0 string{hint}",
                {"hint": hint, "allowed": 'SemVer 2.0 text such as "1.0.0" or "2.1.0-rc.1"'},
            )
        if not re.match(SEMVER_PATTERN, value):
            raise PydanticCustomError(
                "semver",
                "version is not SemVer 2.0",
                {"value": value, "allowed": 'SemVer 2.0 text such as "1.0.0" or "2.1.0-rc.1"'},
            )
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> Contract:
        found = self.document_problems()
        if found:
            # One error carrying every finding; the loader turns each into its own Problem.
            raise PydanticCustomError(
                "document",
                "{summary}",
                {"summary": "; ".join(message for _, message in found), "problems": tuple(found)},
            )
        return self

    def document_problems(self) -> list[tuple[str, str]]:
        """Checks across blocks, as ``(yaml path, message)`` pairs (SEMANTICS §2, §4, §10.4, §13)."""
        found: list[tuple[str, str]] = []
        if not re.match(NAME_PATTERN, self.contract_name):
            where = (
                "dataset" if self.dataset else ("info.table_name" if self.info.table_name else "info.title")
            )
            found.append((where, f"contract name {self.contract_name!r} must match [A-Za-z0-9_.-]+"))
        # SQL names tables case-insensitively: `r` and `R` would be one table to a `sql` op
        found += _duplicates(
            [(f"links[{i}].name", link.name) for i, link in enumerate(self.links)], "link", fold=True
        )
        found += _duplicates(self._row_rule_names(), "row rule")
        dataset_names = [
            (f"quality.dataset_rules[{i}].name", r.name)
            for i, r in enumerate(self.quality.dataset_rules)
            if r.name is not None
        ]
        found += _duplicates(dataset_names, "dataset rule")
        mat = self.materialization
        if mat is not None and mat.strategy == "merge" and not self.primary_key:
            found.append(("materialization.strategy", "strategy 'merge' needs primary_key"))
        if (
            mat is not None
            and mat.strategy == "scd2"
            and not ((mat.scd2 and mat.scd2.business_key) or self.natural_key or self.primary_key)
        ):
            found.append(
                (
                    "materialization.strategy",
                    "strategy 'scd2' needs scd2.business_key, natural_key or primary_key",
                )
            )
        return found

    def _row_rule_names(self) -> list[tuple[str, str]]:
        names = [
            (f"model.fields[{i}].rules[{j}].name", rule.name)
            for i, field in enumerate(self.model.fields)
            for j, rule in enumerate(field.rules)
        ]
        names += [
            (f"quality.row_rules[{i}].name", rule.name)
            for i, rule in enumerate(self.quality.row_rules)
            if rule.name is not None
        ]
        return names

    # --- identity (§2) -------------------------------------------------------------------------

    @property
    def table_name(self) -> str:
        """``info.table_name``, else the slug of ``info.title``."""
        return self.info.table_name or slugify(self.info.title)

    @property
    def contract_name(self) -> str:
        """``dataset``, else ``info.table_name``, else the slug of ``info.title`` (§2)."""
        return self.dataset or self.table_name

    @property
    def layer(self) -> str | None:
        """``info.target_layer`` normalised, else ``tier`` normalised (registry fallback is the driver's)."""
        return normalize_layer(self.info.target_layer or self.tier)

    @property
    def domain(self) -> str | None:
        return self.info.domain or _str_or_none(self.metadata.get("domain"))

    @property
    def system(self) -> str | None:
        return self.info.system or _str_or_none(self.metadata.get("system"))

    # --- files -----------------------------------------------------------------------------

    @property
    def source_file(self) -> Path | None:
        """The YAML file this contract was loaded from (None for in-memory documents)."""
        return self._source_file

    @property
    def hierarchy_slo(self) -> dict[str, Any]:
        """The domain/system ``slo`` settings with no contract key: ``quality``, ``anomaly``, ``alerting``
        and ``freshness_candidates`` (the ``check_columns`` to try in order), when present."""
        return dict(self._hierarchy_slo)

    @property
    def environment_region(self) -> str | None:
        """The region of the environment this contract runs in: the hierarchy environment's ``region``,
        else ``LAKELOGIC_REGION``."""
        return self._environment_region or os.environ.get("LAKELOGIC_REGION") or None

    @property
    def contract_dir(self) -> Path:
        """Directory relative paths (links, external_logic, templates) resolve against."""
        return self._source_file.parent if self._source_file is not None else Path.cwd()

    def resolve_path(self, path: str) -> str:
        """Resolve a contract-relative local path; URIs and absolute paths are returned unchanged."""
        if "://" in path or path.startswith("table:") or Path(path).is_absolute():
            return path
        return str(self.contract_dir / path)

    # --- fields ----------------------------------------------------------------------------

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.model.fields]

    def model_field(self, name: str) -> ModelField | None:
        """The model field called ``name`` (case-sensitive), or None."""
        for f in self.model.fields:
            if f.name == name:
                return f
        return None

    @property
    def field_rules(self) -> list[tuple[ModelField, QualityRule]]:
        """``model.fields[].rules`` flattened, in field order."""
        return [(f, r) for f in self.model.fields for r in f.rules]


def _duplicates(named: list[tuple[str, str]], kind: str, *, fold: bool = False) -> list[tuple[str, str]]:
    """Explicit names must be unique: report every repeat at its own path (§10.4); ``fold``: names that
    differ only in case are the same name."""
    seen: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    for path, name in named:
        key = name.lower() if fold else name
        if key in seen:
            earlier = seen[key]
            same = "" if earlier == name else f" (the same name as {earlier!r}: names ignore case)"
            found.append((path, f"duplicate {kind} name {name!r}{same}"))
        seen.setdefault(key, name)
    return found


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


__all__ = ["EXTENSION_KEY_PATTERN", "SEMVER_PATTERN", "Contract"]
