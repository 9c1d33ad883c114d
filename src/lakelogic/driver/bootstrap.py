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


def _split_name(path: Path) -> tuple[str, str]:
    """``(stem, extensions)`` of a file name: ``orders.csv.gz`` -> ``("orders", ".csv.gz")``."""
    name = path.name
    dot = name.find(".", 1)
    return (name, "") if dot < 0 else (name[:dot], name[dot:])


def _root_entity(path: Path) -> tuple[str, str]:
    """Entity name and glob of a file lying directly in the landing root: the date in its name (the first
    one) becomes ``[0-9]*``, so the glob reads the entity's dated files and no other entity's."""
    stem, extensions = _split_name(path)
    match = _DATE.search(stem)
    if match is None:
        return entity_name(stem), path.name
    before, after = stem[: match.start()], stem[match.end() :]
    separator = match.group(0)[0] if match.group(0)[0] in "_-." else ""
    glob = f"{before}{separator}[0-9]*{after}{extensions}"
    return entity_name(before + after), glob


def _is_partition(folder: str) -> bool:
    """A folder that partitions its parent's files (``key=value``, a date, a number), not an entity."""
    return "=" in folder or bool(_DATE.fullmatch(folder)) or folder.isdigit()


def discover(landing: Path, pattern: str) -> list[Entity]:
    """The entities of a landing root (see the module docstring), sorted by name."""
    if not landing.is_dir():
        raise BootstrapError(f"landing root {landing} is not a directory")
    found: dict[str, Entity] = {}
    for path in sorted(p for p in landing.rglob(pattern) if p.is_file()):
        relative = path.relative_to(landing)
        if any(part.startswith((".", "_")) for part in relative.parts):
            continue
        folder = path.parent
        while folder != landing and _is_partition(folder.name):
            folder = folder.parent  # dt=2024-01-01/, 2024-01-01/: partitions of the folder above
        nested = path.parent != folder
        if folder != landing:
            name = entity_name(folder.name)
            file_pattern = f"**/{pattern}" if nested else pattern
        else:
            name, file_pattern = _root_entity(path)
            file_pattern = f"**/{file_pattern}" if nested else file_pattern
        entity = found.get(name)
        if entity is None:
            entity = found[name] = Entity(name, folder, file_pattern)
        elif entity.folder != folder or (folder == landing and entity.pattern != file_pattern):
            raise BootstrapError(
                f"two groups of landing files give the entity {name!r}: {entity.folder / entity.pattern} "
                f"and {folder / file_pattern}",
                hint="rename one of them, or bootstrap them separately",
            )
        elif file_pattern.startswith("**/") and not entity.pattern.startswith("**/"):
            entity.pattern = file_pattern  # one nested file makes the folder's glob recursive
        entity.files.append(path)
    for entity in found.values():
        if entity.folder == landing:
            others = [o for o in found.values() if o is not entity and o.folder == landing]
            stray = [f.name for o in others for f in o.files if f.match(entity.pattern)]
            if stray:
                raise BootstrapError(
                    f"the glob {entity.pattern!r} of entity {entity.name!r} would also read "
                    + ", ".join(stray),
                    hint="move each entity's files into a folder of its own under the landing root",
                )
    return [found[n] for n in sorted(found)]


def _reader(fmt: str, files: Iterable[Path], rows: int) -> str:
    listed = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    if fmt == "csv":
        # hive_partitioning off: a dt=... folder is no column of the files (the Spark read adds none)
        options = (
            f"header = true, sample_size = {rows}, ignore_errors = true, union_by_name = true, "
            "hive_partitioning = false"
        )
        return f"read_csv({listed}, {options})"
    if fmt == "json":
        return (
            f"read_json_auto({listed}, sample_size = {rows}, ignore_errors = true, union_by_name = true, "
            "hive_partitioning = false)"
        )
    return f"read_parquet({listed}, union_by_name = true, hive_partitioning = false)"


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


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{8}$")
_ISO_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?$"
)


def _iso_text(con: Any, quoted: str, kind: str) -> bool:
    """Every sampled text of a column DuckDB read as a date/timestamp is ISO 8601 (or YYYYMMDD)."""
    pattern = _ISO_DATE if kind == "date" else _ISO_TIMESTAMP
    texts = con.execute(
        f"SELECT DISTINCT trim({quoted}) FROM raw WHERE {quoted} IS NOT NULL LIMIT 1000"
    ).fetchall()
    return all(pattern.match(str(t[0])) for t in texts if t[0] not in ("", None))


def csv_options(entity: Entity) -> dict[str, Any]:
    """The CSV dialect DuckDB sniffs from the entity's first file, when it is not the default."""
    import duckdb

    con = duckdb.connect()
    try:
        first = str(entity.files[0]).replace("'", "''")
        delimiter, quote = con.execute(f"SELECT Delimiter, Quote FROM sniff_csv('{first}')").fetchone() or (
            ",",
            '"',
        )
    except duckdb.Error:
        return {}
    finally:
        con.close()
    options: dict[str, Any] = {}
    if delimiter and delimiter != ",":
        options["delimiter"] = delimiter
    if quote and quote not in ('"', "\x00", "", "(empty)"):  # DuckDB says (empty) for no quoting
        options["quote"] = quote
    return options


def sample_columns(entity: Entity, fmt: str, rows: int) -> list[Column]:
    """The columns of a sample of ``rows`` rows of the entity's files, with simple statistics."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE sample AS SELECT * FROM {_reader(fmt, entity.files, rows)} LIMIT {rows}")
        if fmt == "csv":  # the text as written, to check that sniffed dates are ISO (what §5.3 casts)
            raw = _reader(fmt, entity.files, rows).replace(
                "ignore_errors = true", "ignore_errors = true, all_varchar = true"
            )
            con.execute(f"CREATE TABLE raw AS SELECT * FROM {raw} LIMIT {rows}")
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
            if kind in ("date", "timestamp") and fmt == "csv" and not _iso_text(con, quoted, kind):
                kind = "string"  # e.g. 01/02/2024: DuckDB guesses a date the strict cast would refuse
            values = None
            plain = str(duck_type).upper() in ("VARCHAR", "TINYINT", "SMALLINT", "INTEGER", "BIGINT")
            if count_distinct and count_distinct <= 10 and plain and kind in ("string", "integer", "bigint"):
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
        if c.distinct is not None and c.type == "string" and c.distinct and not _is_pii(c):
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
    options = csv_options(entity) if fmt == "csv" else {}  # the sniff reads a file: once
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
            **({"options": options} if options else {}),
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


def _entry_paths(entry: dict[str, Any], base: Path) -> list[Path]:
    """The contract files a registry entry names (``contract_path``/``path`` or the ``contracts`` map)."""
    named = [entry.get("contract_path") or entry.get("path")]
    contracts = entry.get("contracts")
    if isinstance(contracts, dict):
        named += list(contracts.values())
    return [(base / str(n)).resolve() for n in named if n]


def _drafted_landing(path: Path) -> bool:
    """A contract ``--sync`` may disable: one that reads a landing zone (not a JDBC or table source)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(doc, dict) and str((doc.get("source") or {}).get("type")) == "landing"


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
    base = registry.parent
    registered = {path: entry for entry in entries for path in _entry_paths(entry, base)}
    drafted: set[Path] = set()
    for entity in entities:
        path = output_dir / f"{layer}_{entity.name}.yaml"
        drafted.add(path.resolve())
        if path.exists() and not sync_overwrite:
            existing = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            if sync_update_schema and _add_columns(
                existing, sample_columns(entity, fmt, sample_rows), detect_pii
            ):
                text = _dump(existing)
                _validated(text, path)
                path.write_text(text, encoding="utf-8")
                result.updated.append(path)
            else:
                result.kept.append(path)
        else:
            doc = draft_contract(
                entity, sample_columns(entity, fmt, sample_rows), fmt=fmt, layer=layer,
                contract_dir=output_dir, suggest_rules=suggest_rules, detect_pii=detect_pii,
            )  # fmt: skip
            text = _dump(doc)
            _validated(text, path)
            path.write_text(text, encoding="utf-8")
            result.written.append(path)
        entry = registered.get(path.resolve())
        if entry is None:
            entry = {"entity": entity.name, "layer": layer, "contract_path": _relative(path, base)}
            entries.append(entry)
            registered[path.resolve()] = entry
        elif sync and entry.get("enabled") is False:
            entry.pop("enabled")  # the entity is back
    if sync:
        prefix = f"{layer}_"
        for entry in entries:
            paths = _entry_paths(entry, base)
            mine = (
                len(paths) == 1
                and paths[0].parent == output_dir.resolve()
                and paths[0].name.startswith(prefix)
                and paths[0] not in drafted
                and _drafted_landing(paths[0])
            )
            if mine and entry.get("enabled", True) is not False:
                entry["enabled"] = False
                result.disabled.append(str(entry.get("entity")))
    reg["entries"] = sorted(entries, key=lambda e: (str(e.get("layer", "")), str(e.get("entity", ""))))
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(_dump(reg), encoding="utf-8")
    return result
