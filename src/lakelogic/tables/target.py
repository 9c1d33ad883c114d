"""Where a contract's output goes: target location, format and quarantine sink (SEMANTICS §13.1, §13.5).

Pure Python: no engine library is imported. The catalog name only comes from configuration
(:func:`lakelogic.engines.spark.session.default_catalog`), so the same contract runs against any catalog.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from lakelogic.errors import PlanError, UnsupportedError
from lakelogic.plan.access import opt
from lakelogic.types import normalize_layer, slugify

TargetKind = Literal["table", "path"]

TABLE_FORMATS = ("iceberg", "delta", "parquet", "csv", "json")
"""Formats the Spark engine writes; ``csv``/``json`` only append/overwrite (SEMANTICS §13.1)."""

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_TABLE_NAME = re.compile(rf"^{_IDENT}(\.{_IDENT}){{1,2}}$")
_QUOTED_PART = re.compile(r"`([^`]+)`|([^.`]+)")


def default_catalog_name() -> str:
    """The configured default catalog (``LAKELOGIC_CATALOG``, default ``lakelogic``)."""
    return os.environ.get("LAKELOGIC_CATALOG", "lakelogic")


@dataclass(frozen=True)
class ResolvedTarget:
    """A resolved write location.

    ``name`` is the fully qualified ``catalog.namespace.table`` for tables and the path (as written,
    ``file://`` stripped for local paths) for paths. ``quarantine`` is the quarantine sink of this target
    (itself a ResolvedTarget without a further quarantine), or None when it is not resolved.
    """

    kind: TargetKind
    name: str
    format: str
    quarantine: ResolvedTarget | None = None
    write_mode: str = "append"  # quarantine sinks: append | overwrite

    @property
    def is_table(self) -> bool:
        return self.kind == "table"

    @property
    def catalog(self) -> str | None:
        return self.name.split(".")[0] if self.is_table else None

    @property
    def namespace(self) -> str | None:
        return ".".join(self.name.split(".")[:-1]) if self.is_table else None

    def describe(self) -> str:
        return self.name


def is_table_name(value: str) -> bool:
    """True for ``table:...`` and 2-3 dot-separated identifiers without ``/`` (SEMANTICS §13.1)."""
    text = value.strip()
    if text.startswith("table:"):
        return True
    return "/" not in text and "\\" not in text and bool(_TABLE_NAME.match(text))


def qualify_table(value: str, catalog: str | None = None) -> str:
    """``table:x.y`` / ``x.y`` / ``c.x.y`` -> ``c.x.y`` with the default catalog filled in."""
    text = value.strip().removeprefix("table:").strip()
    parts = [a or b for a, b in _QUOTED_PART.findall(text)]
    if len(parts) == 2:
        parts = [catalog or default_catalog_name(), *parts]
    if len(parts) != 3 or not all(parts):
        raise PlanError(
            f"table name {value!r} must be 'namespace.table' or 'catalog.namespace.table'",
            yaml_path="materialization.target_path",
        )
    return ".".join(parts)


def normalize_path(value: str) -> str:
    """Strip ``file://`` from local paths; other URIs (s3a://, abfss://) are kept as written."""
    text = value.strip()
    if text.startswith("file://"):
        text = text[len("file://") :]
        if not text.startswith("/"):
            text = "/" + text
    return text.rstrip("/") or "/"


def _env_entry(contract: Any, env: str | None) -> Any:
    envs = opt(contract, "environments") or {}
    active = env or os.environ.get("LAKELOGIC_ENV")
    if not envs or not active:
        return None
    entry = envs.get(active) if hasattr(envs, "get") else None
    if entry is None:
        raise PlanError(
            f"environment {active!r} is not defined; defined: {', '.join(sorted(envs))}",
            yaml_path="environments",
        )
    return entry


def _layer(contract: Any) -> str:
    info = opt(contract, "info")
    layer = opt(info, "target_layer") or opt(contract, "tier")
    return (normalize_layer(str(layer)) if layer else None) or "default"


def table_name_of(contract: Any) -> str:
    info = opt(contract, "info")
    name = opt(info, "table_name")
    if name:
        return str(name)
    return slugify(str(opt(info, "title", "table")))


def contract_name_of(contract: Any) -> str:
    explicit = getattr(contract, "contract_name", None)
    if isinstance(explicit, str) and explicit:
        return str(explicit)
    return str(opt(contract, "dataset") or table_name_of(contract))


def _location(contract: Any, target: str | None, env_entry: Any) -> str:
    mat = opt(contract, "materialization")
    server = opt(contract, "server")
    for candidate in (
        target,
        opt(env_entry, "path"),
        opt(mat, "target_path"),
        opt(mat, "location"),
        opt(server, "path"),
    ):
        if candidate:
            return str(candidate)
    return f"{default_catalog_name()}.{_layer(contract)}.{table_name_of(contract)}"


def _format(contract: Any, env_entry: Any, kind: TargetKind) -> str:
    mat = opt(contract, "materialization")
    server = opt(contract, "server")
    chosen = opt(env_entry, "format") or opt(mat, "format") or (opt(server, "format") if server else None)
    fmt = (
        str(getattr(chosen, "value", chosen)).lower()
        if chosen
        else ("iceberg" if kind == "table" else "delta")
    )
    if fmt not in TABLE_FORMATS:
        raise UnsupportedError(
            f"materialization format {fmt!r} is not supported on Spark; supported: {', '.join(TABLE_FORMATS)}"
        )
    return fmt


def _make(value: str, fmt: str) -> ResolvedTarget:
    if is_table_name(value):
        return ResolvedTarget("table", qualify_table(value), fmt)
    return ResolvedTarget("path", normalize_path(value), fmt)


def resolve_quarantine(contract: Any, resolved: ResolvedTarget) -> ResolvedTarget:
    """The quarantine sink of ``resolved`` (SEMANTICS §13.5)."""
    quarantine = opt(contract, "quarantine")
    explicit = opt(quarantine, "target") or opt(quarantine, "table") or opt(quarantine, "location")
    fmt_value = opt(quarantine, "format")
    write_mode = str(opt(quarantine, "write_mode", "append")).lower()
    if write_mode not in ("append", "overwrite"):
        raise PlanError(
            f"quarantine.write_mode {write_mode!r}: allowed append, overwrite", yaml_path="quarantine"
        )
    if explicit:
        kind: TargetKind = "table" if is_table_name(str(explicit)) else "path"
    else:
        kind = resolved.kind
    if fmt_value:
        fmt = str(fmt_value).lower()
    elif kind == resolved.kind:
        fmt = resolved.format
    else:
        fmt = "iceberg" if kind == "table" else "delta"
    if fmt not in TABLE_FORMATS:
        raise UnsupportedError(
            f"quarantine format {fmt!r} is not supported; supported: {', '.join(TABLE_FORMATS)}"
        )
    if explicit:
        sink = _make(str(explicit), fmt)
    elif resolved.is_table:
        sink = ResolvedTarget("table", f"{resolved.catalog}.quarantine.{contract_name_of(contract)}", fmt)
    else:
        parent, _, base = resolved.name.rpartition("/")
        sink = ResolvedTarget("path", f"{parent}/_quarantine/{base}", fmt)
    return replace(sink, write_mode=write_mode)


def resolve_target(contract: Any, *, target: str | None = None, env: str | None = None) -> ResolvedTarget:
    """Target location, kind and format of a contract, with its quarantine sink (SEMANTICS §13.1)."""
    env_entry = _env_entry(contract, env)
    location = _location(contract, target, env_entry)
    kind: TargetKind = "table" if is_table_name(location) else "path"
    resolved = _make(location, _format(contract, env_entry, kind))
    return replace(resolved, quarantine=resolve_quarantine(contract, resolved))


def require_spark_writable(target: ResolvedTarget) -> None:
    """Spark writes Iceberg to catalog tables and the other formats to paths; anything else is refused
    before a run reads its source (not after it validated every row)."""
    if target.format == "iceberg" and not target.is_table:
        raise UnsupportedError(
            f"iceberg targets must be catalog tables (catalog.namespace.table), got the path {target.name!r}",
            hint="configure a catalog and use a table name, or choose format delta/parquet for paths",
        )
    if target.format != "iceberg" and target.is_table:
        raise UnsupportedError(
            f"format {target.format!r} on catalog table {target.name!r} is not supported on Spark",
            hint="use format iceberg for catalog tables, or a path for delta/parquet/csv/json",
        )
