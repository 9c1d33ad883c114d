"""Steps that touch the outside world: read the source, load links, extraction, external logic, write.

The compiler only records intent here (paths resolved against the contract file, defaults settled);
sources, engines and table adapters do the I/O.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.access import as_list, opt, plain, text
from lakelogic.plan.sqlutil import parse_sql
from lakelogic.plan.steps import CleanupSource, ExternalLogic, Extract, LoadLink, Materialize, ReadSource

_EXTENSION_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "ndjson",
    ".parquet": "parquet",
    ".avro": "avro",
    ".orc": "orc",
    ".xml": "xml",
    ".xlsx": "excel",
    ".xls": "excel",
}
_LINK_TYPES_BY_EXTENSION = {
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
_FILE_SOURCE_TYPES = {"landing", "sftp"}
_FORBIDDEN_ARGS = ("links", "engine", "contract")


def format_from_path(path: str | None, table: dict[str, str] = _EXTENSION_FORMATS) -> str | None:
    if not path:
        return None
    suffix = Path(path.rstrip("/")).suffix.lower()
    return table.get(suffix)


def _looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or "://" in value or Path(value).suffix.lower() in _EXTENSION_FORMATS


def resolve_local(contract: Any, path: str) -> str:
    """Resolve a contract-relative path; URIs, absolute paths and ``table:`` names stay as written."""
    if "://" in path or path.startswith("table:"):
        return path
    resolver = getattr(contract, "resolve_path", None)
    if callable(resolver):
        resolved = str(resolver(path))
    elif Path(path).is_absolute():
        resolved = path
    else:
        resolved = str(Path(getattr(contract, "contract_dir", None) or Path.cwd()) / path)
    # `a/b/../../c` -> `c`: plans and reports show the real location (globs are untouched by normpath).
    return os.path.normpath(resolved)


def read_source(contract: Any) -> ReadSource:
    source = opt(contract, "source")
    source_type = str(text(opt(source, "type")))
    load_mode = str(text(opt(source, "load_mode", "full")))
    path = opt(source, "path")
    if path is not None and (
        source_type in _FILE_SOURCE_TYPES or (source_type != "database" and _looks_like_path(path))
    ):
        path = resolve_local(contract, str(path))
    fmt = text(opt(source, "format")) or format_from_path(path)
    empty = text(opt(source, "empty_behavior")) or ("skip" if load_mode in {"incremental", "cdc"} else "fail")
    flatten = opt(source, "flatten_nested", False)
    # `source.query` is the database's own SQL (with :watermark binds), so it is not parsed as Spark SQL.
    query = opt(source, "query")
    settings = plain(source) if source is not None else {}
    return ReadSource(
        yaml_path="source",
        source_type=source_type,
        path=path,
        format=fmt,
        options=dict(plain(opt(source, "options", {}))),
        pattern=opt(source, "pattern"),
        load_mode=load_mode,
        empty_behavior="skip" if empty == "skip" else "fail",
        flatten_nested=tuple(flatten) if isinstance(flatten, (list, tuple)) else bool(flatten),
        partition_filters=dict(plain(opt(source, "partition_filters", {}))),
        query=query,
        watermark_field=opt(source, "watermark_field"),
        settings=settings,
        reprocess_date_column=_date_column(opt(contract, "materialization")),
    )


def _date_column(materialization: Any) -> str | None:
    """DRIVER §8's date column of explicit windows, as the write's replace-where takes it."""
    column = opt(materialization, "reprocess_date_column")
    partitions = as_list(opt(materialization, "partition_by"))
    return str(column) if column else (str(partitions[0]) if partitions else None)


def load_links(contract: Any) -> tuple[LoadLink, ...]:
    steps = []
    for i, link in enumerate(as_list(opt(contract, "links"))):
        path_yaml = f"links[{i}]"
        name = str(opt(link, "name"))
        if name.lower() == "source":
            raise PlanError(
                "a link cannot be called 'source' (that name is the current frame)",
                yaml_path=f"{path_yaml}.name",
            )
        raw_path, table = opt(link, "path"), opt(link, "table")
        if raw_path is None and table is None:
            raise PlanError(f"link {name!r} needs 'path' or 'table'", yaml_path=path_yaml)
        link_type = (
            text(opt(link, "type")) or format_from_path(raw_path, _LINK_TYPES_BY_EXTENSION) or "parquet"
        )
        path = raw_path
        if raw_path is not None and (
            link_type in {"parquet", "csv", "json", "jsonl"} or _looks_like_path(raw_path)
        ):
            path = resolve_local(contract, str(raw_path))
        flt, query = opt(link, "filter"), opt(link, "query")
        if flt is not None:
            parse_sql(str(flt), what=f"link {name!r} filter", yaml_path=f"{path_yaml}.filter")
        if query is not None:
            parse_sql(
                str(query).replace("{link}", name),
                what=f"link {name!r} query",
                yaml_path=f"{path_yaml}.query",
            )
        steps.append(
            LoadLink(
                yaml_path=path_yaml,
                name=name,
                path=path,
                table=table,
                type=link_type,
                columns=tuple(as_list(opt(link, "columns"))),
                filter=flt,
                query=query,
                broadcast=bool(opt(link, "broadcast", False)),
            )
        )
    return tuple(steps)


def extract(contract: Any) -> Extract:
    block = opt(contract, "extraction")
    settings = plain(block)
    for key in ("provider", "text_column", "patterns"):
        settings.pop(key, None)
    return Extract(
        yaml_path="extraction",
        provider=str(opt(block, "provider")),
        text_column=opt(block, "text_column"),
        patterns=dict(plain(opt(block, "patterns", {}))),
        settings=settings,
    )


def extraction_outputs(contract: Any) -> tuple[str, ...]:
    """Columns extraction writes (regex patterns, LLM output schema, preprocessing text column)."""
    block = opt(contract, "extraction")
    if block is None:
        return ()
    cols = list(opt(block, "patterns", {}) or {})
    cols += [str(opt(f, "name")) for f in as_list(opt(block, "output_schema"))]
    pre = opt(block, "preprocessing")
    if pre is not None:
        cols.append(str(opt(pre, "text_output_column", "_extracted_text")))
    confidence = opt(block, "confidence")
    if confidence is not None and opt(confidence, "enabled", True):
        cols.append(str(opt(confidence, "column", "_lakelogic_extraction_confidence")))
    return tuple(dict.fromkeys(cols))


def external_logic(contract: Any, *, engine: str, override_engine: bool) -> ExternalLogic:
    block = opt(contract, "external_logic")
    declared = str(opt(block, "engine"))
    if declared.lower() != engine.lower() and not override_engine:
        raise PlanError(
            f"external_logic runs on engine {declared!r}, but this run uses {engine!r}",
            yaml_path="external_logic.engine",
            hint=f"set external_logic.engine: {engine}, or run the contract with engine {declared!r}",
        )
    args = dict(plain(opt(block, "args", {})))
    reserved = [k for k in _FORBIDDEN_ARGS if k in args]
    if reserved:
        raise PlanError(
            f"external_logic.args cannot use the reserved key(s) {', '.join(reserved)}",
            yaml_path="external_logic.args",
            hint="links, engine and contract are passed by the runtime",
        )
    kind = str(text(opt(block, "type")))
    handles_output = bool(opt(block, "handles_output", False))
    output_path = opt(block, "output_path")
    if (handles_output or kind == "notebook") and not output_path:
        raise PlanError(
            "external_logic needs 'output_path' when it writes its own output",
            yaml_path="external_logic.output_path",
        )
    return ExternalLogic(
        yaml_path="external_logic",
        type=kind,
        path=str(Path(resolve_local(contract, str(opt(block, "path")))).resolve()),
        engine=engine,
        entrypoint=str(opt(block, "entrypoint", "run")),
        args=args,
        handles_output=handles_output,
        output_path=resolve_local(contract, str(output_path)) if output_path else None,
        output_format=opt(block, "output_format"),
    )


def cleanup_source(contract: Any) -> CleanupSource | None:
    """§17 ``post_ingestion`` (on ``source``, else ``server``): only file sources; ``retain`` is no step."""
    source = opt(contract, "source")
    settings = opt(source, "post_ingestion") or opt(opt(contract, "server"), "post_ingestion")
    action = str(text(opt(settings, "action", "retain")) or "retain").lower()
    if settings is None or action == "retain":
        return None
    yaml_path = (
        "source.post_ingestion" if opt(source, "post_ingestion") is not None else "server.post_ingestion"
    )
    path = opt(source, "path")
    if str(text(opt(source, "type"))) not in _FILE_SOURCE_TYPES:
        raise PlanError(
            "post_ingestion cleans up files, so it needs a file source (type landing or sftp)",
            yaml_path=yaml_path,
        )
    root = resolve_local(contract, str(path)) if path is not None else None  # else: the path run() gets
    archive = (
        resolve_local(contract, str(opt(settings, "archive_path"))) if opt(settings, "archive_path") else None
    )
    if archive is not None and root is not None and _inside(archive, root):
        raise PlanError(
            f"archive_path {archive} is inside the source location {root}: "
            "archived files would be read again",
            yaml_path=f"{yaml_path}.archive_path",
        )
    return CleanupSource(
        yaml_path=yaml_path,
        action="delete" if action == "delete" else "archive",
        root=root,
        archive_path=archive,
        blocking=bool(opt(settings, "cleanup_is_blocking", False)),
    )


def _inside(path: str, root: str) -> bool:
    if "://" in path or "://" in root:
        return path.rstrip("/").startswith(root.rstrip("/") + "/")
    base = root[: min((root.index(c) for c in "*?[" if c in root), default=len(root))]
    base_path = Path(base if base.endswith("/") or not Path(base).suffix else os.path.dirname(base))
    return Path(path) == base_path or base_path in Path(path).parents


def materialize(contract: Any) -> Materialize:
    mat = opt(contract, "materialization")
    server = opt(contract, "server")
    quarantine = opt(contract, "quarantine")
    target = opt(mat, "target_path") or opt(mat, "location") or opt(server, "path")
    fmt = text(opt(mat, "format")) or (text(opt(server, "format")) if server is not None else None)
    q_target = opt(quarantine, "target") or opt(quarantine, "table") or opt(quarantine, "location")
    return Materialize(
        yaml_path="materialization",
        target=target,
        format=fmt,
        strategy=str(text(opt(mat, "strategy", "append"))),
        quarantine_target=q_target,
        settings=plain(mat),
    )
