"""``lakelogic bootstrap`` (DRIVER §17): draft contracts and a registry from a landing zone.

Each sub-folder of the landing root that holds matching files is an entity (named after the folder); files
lying directly in the root are grouped by their name with dates stripped (``orders_2026-11-01.csv`` and
``orders_2026-11-02.csv`` are the entity ``orders``). A sample of each entity's rows (DuckDB, no Spark) gives
the model: ``integer``, ``bigint``, ``double``, ``boolean``, ``date``, ``timestamp`` or ``string``, nothing
required. Every contract written is loaded back through the strict loader before it is kept, and output
is sorted, so the same landing zone always gives the same files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lakelogic.errors import LakeLogicError

FORMATS = ("csv", "parquet", "json")
_DATE = re.compile(r"[_\-.]?\d{4}-?\d{2}-?\d{2}(?:[T_\-]?\d{2}-?\d{2}(?:-?\d{2})?)?")
_NAME = re.compile(r"[^a-z0-9]+")
_INT32 = (-(2**31), 2**31 - 1)
_PII_NAMES = re.compile(
    r"(^|_)(e_?mail|phone|mobile|first_?name|last_?name|full_?name|surname|given_?name|name|address|"
    r"street|postcode|zip|birth|dob|ssn|national_?id|passport|iban|ip_?address|ip)($|_)"
)
_EMAIL_VALUE = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")


class BootstrapError(LakeLogicError):
    error_type = "bootstrap"


@dataclass
class Entity:
    name: str
    folder: Path
    pattern: str
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nulls: int
    distinct: list[Any] | None  # the values when there are at most 10 (accepted_values), else None
    low: Any = None
    high: Any = None
    emails: bool = False


@dataclass
class BootstrapResult:
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    registry: Path | None = None


def entity_name(text: str) -> str:
    return _NAME.sub("_", text.lower()).strip("_") or "entity"


def _stem(path: Path) -> str:
    name = path.name
    for suffix in path.suffixes:
        name = name.removesuffix(suffix)
    return name


def discover(landing: Path, pattern: str) -> list[Entity]:
    """The entities of a landing root (see the module docstring), sorted by name."""
    if not landing.is_dir():
        raise BootstrapError(f"landing root {landing} is not a directory")
    found: dict[str, Entity] = {}
    suffix = pattern[pattern.rfind("*") + 1 :] if "*" in pattern else ""
    for path in sorted(p for p in landing.rglob(pattern) if p.is_file()):
        relative = path.relative_to(landing)
        if any(part.startswith((".", "_")) for part in relative.parts):
            continue
        if len(relative.parts) > 1:
            folder = path.parent
            name = entity_name(folder.name)
            file_pattern = pattern
        else:
            folder = landing
            base = _DATE.sub("", _stem(path)) or _stem(path)
            name = entity_name(base)
            undated = _stem(path) != base
            file_pattern = f"{base}*{suffix}" if undated else path.name
        entity = found.get(name)
        if entity is None:
            entity = found[name] = Entity(name, folder, file_pattern)
        elif entity.folder != folder:
            raise BootstrapError(
                f"two landing folders give the entity {name!r}: {entity.folder} and {folder}",
                hint="rename one folder, or bootstrap them separately",
            )
        entity.files.append(path)
    return [found[n] for n in sorted(found)]


def _reader(fmt: str, files: Iterable[Path], rows: int) -> str:
    listed = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    if fmt == "csv":
        options = f"header = true, sample_size = {rows}, ignore_errors = true, union_by_name = true"
        return f"read_csv({listed}, {options})"
    if fmt == "json":
        return f"read_json_auto({listed}, sample_size = {rows}, ignore_errors = true, union_by_name = true)"
    return f"read_parquet({listed}, union_by_name = true)"


def _olc_type(duck: str, low: Any, high: Any) -> str:
    kind = duck.upper()
    if kind in ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"):
        return "integer"
    if kind in ("BIGINT", "UINTEGER", "UBIGINT", "HUGEINT"):
        fits = isinstance(low, int) and isinstance(high, int) and _INT32[0] <= low and high <= _INT32[1]
        return "integer" if fits else "bigint"
    if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
        return "double"
    if kind == "BOOLEAN":
        return "boolean"
    if kind == "DATE":
        return "date"
    if kind.startswith("TIMESTAMP"):
        return "timestamp"
    return "string"  # text, nested values, times, blobs: kept as text in a bronze contract


def sample_columns(entity: Entity, fmt: str, rows: int) -> list[Column]:
    """The columns of a sample of ``rows`` rows of the entity's files, with simple statistics."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE sample AS SELECT * FROM {_reader(fmt, entity.files, rows)} LIMIT {rows}")
        described = con.execute("DESCRIBE sample").fetchall()
        columns: list[Column] = []
        for name, duck_type, *_ in described:
            quoted = '"' + str(name).replace('"', '""') + '"'
            # only plain values come back to Python (zoned timestamps would need pytz)
            kind = _olc_type(str(duck_type), None, None)
            numeric = kind in ("integer", "bigint", "double")
            bounds = f"min({quoted}), max({quoted})" if numeric else "NULL, NULL"
            nulls, count_distinct, low, high = con.execute(
                f"SELECT count(*) - count({quoted}), count(DISTINCT {quoted}), {bounds} FROM sample"
            ).fetchone() or (0, 0, None, None)
            if numeric:
                kind = _olc_type(str(duck_type), low, high)
            values = None
            if count_distinct and count_distinct <= 10 and kind in ("string", "integer", "bigint"):
                values = [
                    r[0]
                    for r in con.execute(
                        f"SELECT DISTINCT {quoted} FROM sample WHERE {quoted} IS NOT NULL ORDER BY 1"
                    ).fetchall()
                ]
            emails = False
            if str(duck_type).upper() == "VARCHAR":
                picked = f"SELECT {quoted} FROM sample WHERE {quoted} IS NOT NULL LIMIT 50"
                texts = [r[0] for r in con.execute(picked).fetchall()]
                emails = bool(texts) and sum(bool(_EMAIL_VALUE.match(t)) for t in texts) > len(texts) / 2
            columns.append(
                Column(
                    name=str(name),
                    type=kind,
                    nulls=int(nulls or 0),
                    distinct=values,
                    low=low,
                    high=high,
                    emails=emails,
                )
            )
        return columns
    except duckdb.Error as exc:
        raise BootstrapError(f"could not sample {entity.name} ({entity.folder}): {exc}") from exc
    finally:
        con.close()


def _is_pii(column: Column) -> bool:
    return bool(_PII_NAMES.search(column.name.lower())) or column.emails


def _rules(columns: list[Column]) -> list[dict[str, Any]]:
    """``--suggest-rules``: warnings, never quarantines, from what the sample shows."""
    rules: list[dict[str, Any]] = []
    for c in columns:
        if c.nulls == 0:
            rules.append({"not_null": c.name, "severity": "warning"})
        if c.distinct is not None and c.type == "string" and c.distinct:
            values = [str(v) for v in c.distinct]
            rules.append({"accepted_values": {"field": c.name, "values": values}, "severity": "warning"})
        if c.low is not None and c.high is not None:
            low, high = (float(c.low), float(c.high)) if c.type == "double" else (int(c.low), int(c.high))
            rules.append({"range": {"field": c.name, "min": low, "max": high}, "severity": "warning"})
    return rules


def draft_contract(
    entity: Entity,
    columns: list[Column],
    *,
    fmt: str,
    layer: str,
    contract_dir: Path,
    suggest_rules: bool,
    detect_pii: bool,
) -> dict[str, Any]:
    """The contract document of one entity (a plain mapping, written as YAML)."""
    source_path = Path(_relative(entity.folder, contract_dir)).as_posix().rstrip("/") + "/"
    fields = []
    for c in columns:
        item: dict[str, Any] = {"name": c.name, "type": c.type}
        if detect_pii and _is_pii(c):
            item["pii"] = True
        fields.append(item)
    doc: dict[str, Any] = {
        "version": "1.0.0",
        "info": {
            "title": f"{entity.name} ({layer})",
            "table_name": entity.name,
            "target_layer": layer,
            "description": f"Drafted by lakelogic bootstrap from {len(entity.files)} sampled file(s).",
        },
        "dataset": f"{layer}_{entity.name}",
        "source": {
            "type": "landing",
            "path": source_path,
            "pattern": entity.pattern,
            "format": fmt,
            "load_mode": "incremental",
            "watermark_strategy": "pipeline_log",
        },
        "model": {"fields": fields},
    }
    if suggest_rules:
        rules = _rules(columns)
        if rules:
            doc["quality"] = {"row_rules": rules}
    return doc


def _relative(target: Path, start: Path) -> str:
    import os

    return os.path.relpath(target.resolve(), start.resolve())


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False, width=110)


def _validated(text: str, path: Path) -> None:
    """The draft must load through the strict loader; a draft that does not is a bug, never written."""
    from lakelogic.contract.loader import load_contract
    from lakelogic.contract.yaml_io import parse_yaml_text

    data, _ = parse_yaml_text(text, file=str(path))
    load_contract(data)


def _add_columns(existing: dict[str, Any], columns: list[Column], detect_pii: bool) -> bool:
    """``--sync-update-schema``: append sampled columns the contract does not have; True when any was."""
    fields = ((existing.get("model") or {}).get("fields")) or []
    known = {str(f.get("name")) for f in fields if isinstance(f, dict)}
    added = False
    for c in columns:
        if c.name not in known:
            item: dict[str, Any] = {"name": c.name, "type": c.type}
            if detect_pii and _is_pii(c):
                item["pii"] = True
            fields.append(item)
            added = True
    if added:
        existing.setdefault("model", {})["fields"] = fields
    return added


def _load_registry(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"version": 1, "entries": []}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise BootstrapError(f"registry {path} is not a mapping with an entries list")
    data.setdefault("entries", [])
    return data


def bootstrap(
    landing: Path,
    output_dir: Path,
    registry: Path,
    *,
    fmt: str = "csv",
    pattern: str | None = None,
    layer: str = "bronze",
    sample_rows: int = 1000,
    sync: bool = False,
    sync_update_schema: bool = False,
    sync_overwrite: bool = False,
    suggest_rules: bool = False,
    detect_pii: bool = False,
) -> BootstrapResult:
    """Draft one contract per entity and the registry entries for them (see the module docstring)."""
    if fmt not in FORMATS:
        raise BootstrapError(f"--format {fmt!r}; allowed: {', '.join(FORMATS)}")
    if sample_rows < 1:
        raise BootstrapError("--sample-rows must be at least 1")
    glob = pattern or {"csv": "*.csv", "parquet": "*.parquet", "json": "*.json*"}[fmt]
    entities = discover(landing, glob)
    output_dir.mkdir(parents=True, exist_ok=True)
    result = BootstrapResult(registry=registry)
    reg = _load_registry(registry)
    entries: list[dict[str, Any]] = [e for e in reg["entries"] if isinstance(e, dict)]
    by_entity = {(str(e.get("entity")), str(e.get("layer", layer))): e for e in entries}
    for entity in entities:
        path = output_dir / f"{layer}_{entity.name}.yaml"
        columns = sample_columns(entity, fmt, sample_rows)
        if path.exists() and not sync_overwrite:
            if sync_update_schema:
                existing = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
                if _add_columns(existing, columns, detect_pii):
                    text = _dump(existing)
                    _validated(text, path)
                    path.write_text(text, encoding="utf-8")
                    result.updated.append(path)
                    continue
            result.kept.append(path)
        else:
            doc = draft_contract(
                entity, columns, fmt=fmt, layer=layer, contract_dir=output_dir,
                suggest_rules=suggest_rules, detect_pii=detect_pii,
            )  # fmt: skip
            text = _dump(doc)
            _validated(text, path)
            path.write_text(text, encoding="utf-8")
            result.written.append(path)
        key = (entity.name, layer)
        contract_path = _relative(path, registry.parent)
        if key in by_entity:
            by_entity[key]["enabled"] = True
        else:
            entry: dict[str, Any] = {"entity": entity.name, "layer": layer, "contract_path": contract_path}
            entries.append(entry)
            by_entity[key] = entry
    if sync:
        present = {e.name for e in entities}
        for (name, entry_layer), entry in by_entity.items():
            if entry_layer == layer and name not in present and entry.get("enabled", True) is not False:
                entry["enabled"] = False
                result.disabled.append(name)
    reg["entries"] = sorted(entries, key=lambda e: (str(e.get("layer", "")), str(e.get("entity", ""))))
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(_dump(reg), encoding="utf-8")
    return result
