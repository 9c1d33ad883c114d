"""File sources on Spark (SEMANTICS §3): csv/tsv/json/jsonl/ndjson/parquet/orc/avro files, dirs and globs.

Everything is read as its *raw* type (CSV as text, JSON with its own scalar types) so casting to the
model stays strict and happens in one place (the engine). Unparseable records are kept, not dropped:
Spark's PERMISSIVE mode puts their raw text in :data:`CORRUPT_COLUMN`, and the engine quarantines them
as ``malformed_record`` (JSON records repeating a key too, see :mod:`.json_duplicate_keys`). Local paths
are listed in Python (file count, names, newest mtime for the report); remote URLs are handed to Spark
as they are.
"""

from __future__ import annotations

import glob as globlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakelogic.errors import ContractError, MissingDependencyError, Problem, SourceError, UnsupportedError
from lakelogic.report import SourceInfo
from lakelogic.sources.columns import CORRUPT_COLUMN, CORRUPT_REASON_COLUMN, SOURCE_FILE_COLUMN
from lakelogic.sources.csv_quotes import broken_quoting
from lakelogic.sources.json_duplicate_keys import is_duplicate_column_error, read_json_with_duplicate_keys
from lakelogic.sources.json_trailing import trailing_records
from lakelogic.sources.strict_read import source_reader
from lakelogic.sources.unreadable import check_compressed, unreadable_source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakelogic.types import LogicalType

FILE_FORMATS = ("csv", "tsv", "json", "jsonl", "ndjson", "parquet", "orc", "avro")
_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "csv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "ndjson",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".orc": "orc",
    ".avro": "avro",
}
_COMMON_OPTIONS = {"engine_options", "date_formats", "timestamp_formats"}
_OPTIONS = {
    "csv": {
        "delimiter",
        "has_header",
        "quote_char",
        "escape_char",
        "encoding",
        "null_values",
        "skip_rows",
        "comment_prefix",
    },
    "json": {"multiline", "encoding"},
    "parquet": set(),
    "orc": set(),
    "avro": set(),
}
_REMOTE = ("s3://", "s3a://", "abfss://", "abfs://", "gs://", "wasbs://", "hdfs://", "dbfs:/")
LISTED_FILES = 100


@dataclass
class SourceRead:
    """A read source: ``frame`` is None when no file qualified (zero rows, nothing to scan)."""

    frame: DataFrame | None
    info: SourceInfo
    format: str
    files: list[str] = field(default_factory=list)  # the non-empty files scanned
    selected: list[str] = field(default_factory=list)  # every local file the run took, empty ones too
    warnings: list[str] = field(default_factory=list)  # for the run report (a file quarantined whole)


def canonical_format(fmt: str | None, path: str | None, *, files: Sequence[str] = ()) -> str:
    """The reader for a declared format, else the path's extension, else the one extension every listed
    file shares (a directory of ``.csv`` files) (SEMANTICS §3.1)."""
    if fmt:
        return _reader_of(fmt.lower())
    by_path = _format_of(path) if path else None
    if by_path is not None:
        return by_path
    kinds = {_format_of(f) for f in files}
    if len(kinds) == 1 and None not in kinds:
        return str(kinds.pop())
    found = ", ".join(sorted({Path(f).suffix or "(none)" for f in files})) or "no files"
    raise SourceError(
        f"cannot tell the format of source {path!r} (file extensions: {found})", hint="set source.format"
    )


def _format_of(path: str) -> str | None:
    suffix = Path(path.split("?")[0].rstrip("/*")).suffix.lower()
    return _reader_of(_EXTENSIONS[suffix]) if suffix in _EXTENSIONS else None


def _reader_of(fmt: str) -> str:
    """JSON lines are read by the JSON reader; every other format by its own."""
    return "json" if fmt in ("jsonl", "ndjson") else fmt


# formats SEMANTICS §3.1 names that this reader does not implement: a clear "not supported" beats an
# "unknown option" error about their required options (row_tag, columns)
_UNSUPPORTED_FORMATS = ("xml", "excel", "xlsx", "xls", "fixed_width")


def require_supported(fmt: str) -> None:
    if fmt in _UNSUPPORTED_FORMATS:
        raise UnsupportedError(
            f"source format {fmt!r} is not supported by the Spark file reader yet",
            hint="convert the files to csv, json or parquet, or read them in external_logic",
        )


def validate_options(fmt: str, options: Mapping[str, Any], *, yaml_path: str = "source.options") -> None:
    """Unknown options are errors (SEMANTICS §3.2), named with the YAML path and the allowed keys."""
    family = "csv" if fmt == "tsv" else _reader_of(fmt)
    allowed = _OPTIONS.get(family, set()) | _COMMON_OPTIONS
    problems = [
        Problem(
            file="<contract>",
            path=f"{yaml_path}.{key}",
            message=f"unknown option for format {fmt!r}",
            allowed=", ".join(sorted(allowed)),
        )
        for key in options
        if key not in allowed
    ]
    if problems:
        raise ContractError(problems)


def resolve_path(path: str, base_dir: Path | None) -> str:
    if path.startswith(_REMOTE) or ("://" in path and not path.startswith("file://")):
        return path
    local = path.removeprefix("file://")
    candidate = Path(os.path.expanduser(local))
    if not candidate.is_absolute() and base_dir is not None:
        candidate = base_dir / candidate
    return str(candidate)


def _visible(p: Path, root: Path | None = None) -> bool:
    """Not hidden: no ``.``/``_`` name, and under a directory root no such folder either (``_temporary/``,
    ``.hive-staging``: a writer's leftovers, never data)."""
    parts = p.relative_to(root).parts if root is not None and root in p.parents else (p.name,)
    return not any(part.startswith((".", "_")) for part in parts)


def list_local_files(path: str, pattern: str | None) -> tuple[list[str], str | None]:
    """Files under a file/dir/glob (hidden ``.``/``_`` names skipped); also the base dir for partitions."""
    has_glob = any(ch in path for ch in "*?[")
    if has_glob:
        found = [Path(p) for p in globlib.glob(path, recursive=True)]
        base = None
    else:
        root = Path(path)
        if root.is_file():
            return [str(root)], None
        if not root.exists():
            raise SourceError(f"source path does not exist: {path}")
        found = list(root.glob(pattern)) if pattern else list(root.rglob("*"))
        base = str(root)
    root_dir = Path(base) if base is not None else None
    files = sorted(str(p) for p in found if p.is_file() and _visible(p, root_dir))
    if has_glob and pattern:
        files = sorted({str(q) for f in files for q in [Path(f)] if q.match(pattern)})
    if base is not None and not _consistent_partitions(files, Path(base)):
        base = None
    return files, base


def _consistent_partitions(files: Sequence[str], root: Path) -> bool:
    """Whether every file sits under the same ``key=value`` directory keys below ``root``.

    Spark's partition discovery with ``basePath`` silently skips files outside the common layout (a file at
    the root next to ``day=1/`` folders is not read at all), so the base is only given when the layout
    is uniform; otherwise every file is read and no partition column is derived.
    """
    layouts = set()
    for name in files:
        try:
            parts = Path(name).parent.relative_to(root).parts
        except ValueError:
            return False
        if not all("=" in part for part in parts):
            return False
        layouts.add(tuple(part.split("=", 1)[0] for part in parts))
    return len(layouts) <= 1


def read_files(
    spark: SparkSession,
    *,
    path: str,
    fmt: str | None,
    options: Mapping[str, Any] | None = None,
    pattern: str | None = None,
    base_dir: Path | None = None,
    with_file_path: bool = False,
    source_type: str = "landing",
    select: Callable[[list[str]], list[str]] | None = None,
    headerless_names: Sequence[str] = (),
    model_types: Mapping[str, LogicalType] | None = None,
) -> SourceRead:
    """Read file(s) as raw-typed rows. Zero qualifying non-empty files -> ``frame`` None.

    ``select`` narrows the listed local files before anything is read (a processing window,
    :mod:`lakelogic.sources.windows`); remote paths are not listed here, so it does not apply to them.
    """
    options = dict(options or {})
    resolved = resolve_path(path, base_dir)
    declared = fmt.lower() if fmt else None
    if declared is not None:
        require_supported(declared)
    remote = resolved.startswith(_REMOTE) or ("://" in resolved and not resolved.startswith("file://"))
    listed = None if remote else list_local_files(resolved, pattern)
    fmt_family = canonical_format(
        declared, pattern if pattern else resolved, files=listed[0] if listed is not None else ()
    )
    validate_options(declared or fmt_family, options)
    info = SourceInfo(type=source_type, path=resolved)
    selected: list[str] = []
    if listed is None:
        targets, base = [resolved if not pattern else resolved.rstrip("/") + "/" + pattern], None
    else:
        targets, base = listed
        if select is not None:
            targets = select(targets)
        selected = list(targets)
        sizes = [(f, os.stat(f)) for f in targets]
        info.files_count = len(targets)
        info.files = targets[:LISTED_FILES]
        if sizes:
            newest = max(st.st_mtime for _, st in sizes)
            info.max_source_mtime = datetime.fromtimestamp(newest, tz=UTC)
        targets = [f for f, st in sizes if st.st_size > 0]  # empty files add zero rows
        if not targets:
            return SourceRead(None, info, fmt_family, selected=selected)
    warnings: list[str] = []
    frame = _read(
        spark,
        fmt_family,
        declared,
        targets,
        base,
        options,
        headerless_names,
        with_file_path,
        model_types,
        warnings,
    )
    if frame is None:
        return SourceRead(None, info, fmt_family, targets, selected, warnings)
    if with_file_path and SOURCE_FILE_COLUMN not in frame.columns:
        from pyspark.sql import functions as F

        frame = frame.withColumn(SOURCE_FILE_COLUMN, F.col("_metadata.file_path"))
    if remote:
        read = frame.inputFiles()
        info.files = read[:LISTED_FILES]
        info.files_count = len(read)  # §22: the count is every file; the list, the first ones
    return SourceRead(frame, info, fmt_family, targets, selected, warnings)


def _read(
    spark: SparkSession,
    family: str,
    declared: str | None,
    files: Sequence[str],
    base: str | None,
    options: Mapping[str, Any],
    headerless_names: Sequence[str] = (),
    with_file_path: bool = False,
    model_types: Mapping[str, LogicalType] | None = None,
    warnings: list[str] | None = None,
) -> DataFrame | None:
    engine_options = {str(k): str(v) for k, v in dict(options.get("engine_options") or {}).items()}
    reader = source_reader(spark)
    if base:
        reader = reader.option("basePath", base)
    if family in ("csv", "tsv"):
        return _read_csv(
            spark,
            files,
            base,
            options,
            engine_options,
            tab=family == "tsv" or declared == "tsv",
            headerless_names=headerless_names,
            with_file_path=with_file_path,
            warnings=warnings if warnings is not None else [],
        )
    if family == "json":
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        json_opts = _json_options(spark, options)
        check_compressed(files)
        # records with a second value or text after their value: Spark would keep the first value alone
        trailing = trailing_records(files, {**json_opts, **engine_options})
        if trailing and warnings is not None:
            warnings.append(
                f"{len(trailing)} JSON record(s) hold text after their value (a second value on one "
                "line, or a second document in a multiLine file): quarantined as malformed records"
            )

        def record_by_record() -> DataFrame:
            return read_json_with_duplicate_keys(
                spark,
                files,
                base=base,
                json_opts=json_opts,
                engine_options=engine_options,
                with_file_path=with_file_path,
                names=headerless_names,
                trailing=trailing,
            )

        if trailing:
            return record_by_record()
        try:
            frame = reader.options(**json_opts).options(**engine_options).json(list(files))
        except Exception as exc:  # converted: a record repeating a key is malformed, not a failed read
            if not is_duplicate_column_error(exc):
                unreadable = unreadable_source(exc, what="json source files")
                if unreadable is not None:
                    raise unreadable from exc
                raise
            return record_by_record()
        if frame.columns == [CORRUPT_COLUMN]:
            return _all_malformed_json(spark, files, json_opts, headerless_names)
        exactly = _read_as_declared(frame.schema, model_types)
        if exactly is not None:
            frame = reader.options(**json_opts).options(**engine_options).schema(exactly).json(list(files))
        return frame if frame.columns else None
    if family in ("parquet", "orc", "avro"):
        if family != "avro" and not any(k.lower() == "mergeschema" for k in engine_options):
            # Spark takes the schema of one file: a column that only later files have (an export that
            # gained a column) was dropped from every file, silently, depending on file name order. The
            # union of the files' schemas keeps it (NULL where a file lacks it, §7.1); files whose
            # types conflict fail the read instead. Set mergeSchema: false to read one footer only.
            reader = reader.option("mergeSchema", "true")
        try:
            frame = reader.options(**engine_options).format(family).load(list(files))
            as_text = _partitions_as_text(frame.schema, files, base, model_types)
            if as_text is not None:
                frame = reader.options(**engine_options).schema(as_text).format(family).load(list(files))
            return frame
        except Exception as exc:  # converted: a missing reader plugin is a dependency problem
            if family == "avro" and "avro" in str(exc).lower():
                raise MissingDependencyError(
                    "reading Avro needs the spark-avro package",
                    hint="add org.apache.spark:spark-avro_2.12:3.5.x to spark.jars.packages",
                ) from exc
            unreadable = unreadable_source(exc, what=f"{family} source files")
            if unreadable is None:
                raise  # not about the files' content (a network error stays retryable for the driver)
            raise unreadable from exc
    raise UnsupportedError(f"source format {family!r} is not supported by the Spark file reader")


def _partitions_as_text(
    schema: StructType,
    files: Sequence[str],
    base: str | None,
    model_types: Mapping[str, LogicalType] | None,
) -> StructType | None:
    """The read schema with the ``key=value`` folder columns the model declares as text read as text, or
    None when none was inferred otherwise. Spark infers a folder value's type (``region=001`` became the
    integer 1, so the text field held ``'1'``); CSV and JSON sources read the folders as text already.
    The schema comes from the read just made, so the re-read reads no footer again."""
    from pyspark.sql.types import StringType, StructField, StructType

    declared = model_types or {}
    keys = {
        part.split("=", 1)[0] for f in files for part in Path(_relative(f, base)).parent.parts if "=" in part
    }
    changed = [
        f.name
        for f in schema.fields
        if f.name in keys
        and declared.get(f.name) is not None
        and declared[f.name].kind in ("string", "json")
        and not isinstance(f.dataType, StringType)
    ]
    if not changed:
        return None
    return StructType(
        [StructField(f.name, StringType(), True) if f.name in changed else f for f in schema.fields]
    )


def _relative(path: str, base: str | None) -> str:
    """``path`` below ``base`` (the folders that are partitions), or the whole path without a base."""
    plain = path.removeprefix("file:")
    if base:
        root = base.removeprefix("file:").rstrip("/") + "/"
        if plain.startswith(root):
            return plain[len(root) :]
    return plain


def _read_as_declared(schema: StructType, model_types: Mapping[str, LogicalType] | None) -> StructType | None:
    """The inferred JSON schema with the fields whose inferred type would change their values read as
    their model type asks, or None when there is none. The schema comes from the inference already done,
    so the re-read costs no extra pass.

    * A decimal field inferred as floating point is read as a decimal: Spark infers a number with a
      fraction as a double, so 12345678901234567.89 into a decimal(20,2) field was 12345678901234568.00,
      silently. The read type keeps every integer digit the field can hold and as many fraction digits
      as fit in 38; the strict cast to the field's type follows as for any value.
    * A ``json`` or ``string`` field inferred as anything but text is read as text: Spark keeps an
      object's or array's own JSON (every key, ``null`` values included), where the inferred type had
      merged the records' shapes (an array in one record and a number in another both became strings
      inside the object, ``3`` became ``3.0`` next to a ``1.5``, a ``null`` key was dropped).
      Fractional numbers still take Spark's double text.

    The corrupt-record column joins the schema, so a value that does not fit its read type (a number
    too large for the decimal) makes its record malformed (§3.3) instead of NULL."""
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, StringType, StructField, StructType

    def read_as(field: StructField) -> DecimalType | StringType | None:
        declared = (model_types or {}).get(field.name)
        if declared is None:
            return None
        if declared.kind == "decimal" and isinstance(field.dataType, (DoubleType, FloatType)):
            whole = (declared.precision or 38) - (declared.scale or 0)
            return DecimalType(38, 38 - min(whole, 38))
        if declared.kind in ("json", "string") and not isinstance(field.dataType, StringType):
            return StringType()
        return None

    chosen = {f.name: read_as(f) for f in schema.fields}
    if not any(chosen.values()):
        return None
    fields = [StructField(f.name, chosen[f.name] or f.dataType, True) for f in schema.fields]
    if CORRUPT_COLUMN not in schema.fieldNames():
        fields.append(StructField(CORRUPT_COLUMN, StringType(), True))
    return StructType(fields)


def _all_malformed_json(
    spark: SparkSession, files: Sequence[str], json_opts: Mapping[str, str], names: Sequence[str]
) -> DataFrame:
    """Every record failed to parse, so Spark inferred nothing but the corrupt-record column, and it
    refuses queries that read only that column. Read the records as text instead (one per line, or one
    per file for multiline JSON), each a malformed record (§3.3), with the model's columns as NULL."""
    from pyspark.sql import functions as F

    multiline = str(json_opts.get("multiLine", json_opts.get("multiline", "false"))).lower() == "true"
    text = source_reader(spark).text(list(files), wholetext=multiline)
    records = text.where(F.trim(F.col("value")) != "")
    columns = [F.lit(None).cast("string").alias(n) for n in names if n != CORRUPT_COLUMN]
    return records.select(*columns, F.col("value").alias(CORRUPT_COLUMN))


def _json_options(spark: SparkSession, options: Mapping[str, Any]) -> dict[str, str]:
    """Reader options for ``multiline`` and ``encoding``. JSON lines in another encoding than UTF-8 need
    an explicit line separator (Spark's rule; a CR before it is whitespace to the JSON parser), and
    UTF-16/32 JSON lines cannot be split at all."""
    multiline = bool(options.get("multiline"))
    # JSON strings are double-quoted: a single-quoted record is malformed (§3.3), not a good row
    out = {"allowSingleQuotes": "false"}
    if multiline:
        out["multiLine"] = "true"
    if not options.get("encoding"):
        return out
    charset = java_charset(spark, str(options["encoding"]))
    if not multiline and charset.lower().replace("-", "").startswith(("utf16", "utf32")):
        raise UnsupportedError(
            f"JSON lines in {options['encoding']} cannot be read by Spark (one JSON value per line needs "
            "an ASCII-compatible encoding)",
            hint="convert the files to UTF-8, or set options.multiline for one document per file",
        )
    out["encoding"] = charset
    if not multiline:
        out["lineSep"] = "\n"
    return out


def _read_csv(
    spark: SparkSession,
    files: Sequence[str],
    base: str | None,
    options: Mapping[str, Any],
    engine_options: dict[str, str],
    *,
    tab: bool,
    headerless_names: Sequence[str] = (),
    with_file_path: bool = False,
    warnings: list[str],
) -> DataFrame | None:
    from functools import reduce

    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    from lakelogic.sources.csv_headers import files_by_header

    if int(options.get("skip_rows") or 0) > 0:
        raise UnsupportedError(
            "csv option skip_rows is not supported on Spark yet", hint="remove the leading rows"
        )
    null_values = [str(v) for v in (options.get("null_values") or [""])]
    csv_opts: dict[str, str] = {
        "sep": "\t" if tab else str(options.get("delimiter", ",")),
        "header": "true" if options.get("has_header", True) else "false",
        "quote": str(options.get("quote_char", '"')),
        "escape": str(options.get("escape_char", "\\")),
        "encoding": java_charset(spark, str(options.get("encoding", "utf-8"))),
        # RFC 4180: a quoted field may hold line breaks; without this Spark cuts such a record in two
        # (a truncated good row and a malformed tail). Costs file splitting: one task per file.
        "multiLine": "true",
        "nullValue": null_values[0],
        "mode": "PERMISSIVE",
        "columnNameOfCorruptRecord": CORRUPT_COLUMN,
        "inferSchema": "false",
    }
    if options.get("comment_prefix"):
        prefix = str(options["comment_prefix"])
        if len(prefix) != 1:
            raise UnsupportedError(
                f"csv option comment_prefix {prefix!r}: the Spark CSV reader takes a single character",
                hint="use a one-character prefix such as '#'",
            )
        csv_opts["comment"] = prefix
    if base:
        csv_opts["basePath"] = base
    csv_opts.update(engine_options)
    # Malformed-row detection must not depend on which columns a query reads: with CSV column pruning
    # Spark tokenises only the selected columns and misses wrong field counts.
    spark.conf.set("spark.sql.csv.parser.columnPruning.enabled", "false")
    with_header = csv_opts["header"] == "true"
    python_encoding = str(options.get("encoding", "utf-8"))
    broken = broken_quoting(files, csv_opts, python_encoding)
    readable = [f for f in files if f not in broken]
    groups = (
        files_by_header(readable, python_encoding, csv_opts.get("comment"))
        if with_header and len(readable) > 1
        else [readable]
        if readable
        else []
    )
    frames = []
    for group in groups:
        # The header gives the column names; every column is read as text, plus the corrupt-record column.
        header = source_reader(spark).options(**csv_opts).csv(group).schema
        if not header.fields:
            continue
        names = [f.name for f in header.fields]
        if with_header:
            _refuse_repeated_model_columns(group, headerless_names, csv_opts, python_encoding, spark)
        else:
            # no header: the columns are the model's fields in order (Spark would call them _c0, _c1, ...);
            # columns beyond the model keep Spark's names
            names = [headerless_names[i] if i < len(headerless_names) else n for i, n in enumerate(names)]
        schema = StructType([StructField(n, StringType(), True) for n in names])
        schema.add(StructField(CORRUPT_COLUMN, StringType(), True))
        frame = source_reader(spark).options(**csv_opts).schema(schema).csv(group)
        if with_file_path and (len(groups) > 1 or broken):  # a union has no `_metadata` column later
            frame = frame.withColumn(SOURCE_FILE_COLUMN, F.col("_metadata.file_path"))
        frames.append(frame)
    quarantined = []
    for path, problem in broken.items():
        reason = problem.reason(path)
        warnings.append(f"source file {path} was quarantined line by line: {reason}")
        quarantined.append(_lines_as_malformed(spark, path, reason, csv_opts, with_file_path=with_file_path))
    if quarantined and not frames:  # no readable file: the model's columns, NULL (as for JSON)
        nulls = [F.lit(None).cast("string").alias(n) for n in headerless_names]
        quarantined[0] = quarantined[0].select(*nulls, "*")
    frames += quarantined
    if not frames:
        return None
    # files with other headers: combined by name, a column a file lacks is NULL there (csv_headers.py)
    frame = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    hidden = (CORRUPT_COLUMN, CORRUPT_REASON_COLUMN, SOURCE_FILE_COLUMN)
    names = [c for c in frame.columns if c not in hidden]
    extra_nulls = null_values[1:]
    if extra_nulls:
        frame = frame.select(
            *[
                F.when(F.col(f"`{c}`").isin(extra_nulls), F.lit(None)).otherwise(F.col(f"`{c}`")).alias(c)
                if c in names
                else F.col(f"`{c}`")
                for c in frame.columns
            ]
        )
    return _undecodable_as_malformed(frame, names, csv_opts["sep"])


def _refuse_repeated_model_columns(
    files: Sequence[str],
    model: Sequence[str],
    csv_opts: Mapping[str, str],
    encoding: str,
    spark: SparkSession,
) -> None:
    """A header that names a model field's column twice is ambiguous: a source error. Spark renames every
    copy of a repeated header name to the name plus its position (``name`` at 1 and 3 becomes ``name1``,
    ``name3``), so the field read NULL while the values sat under names the model does not know. The
    header is read from the first local file of the group (every file in it has the same header)."""
    import csv

    from lakelogic.sources.csv_headers import UNKNOWN, header_line

    local = next((f for f in files if os.path.isfile(f)), None)
    line = header_line(local, encoding, csv_opts.get("comment")) if local else None
    if line is None or line == UNKNOWN or len(csv_opts["sep"]) != 1:
        return
    quote = csv_opts.get("quote") or None
    if quote:
        parsed = csv.reader([line], delimiter=csv_opts["sep"], quotechar=quote)
    else:
        parsed = csv.reader([line], delimiter=csv_opts["sep"], quoting=csv.QUOTE_NONE)
    names = next(parsed, [])
    fold = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() != "true"

    def key(name: str) -> str:
        return name.lower() if fold else name

    wanted = {key(n) for n in model}
    positions: dict[str, list[int]] = {}
    for position, name in enumerate(names):
        positions.setdefault(key(name), []).append(position)  # as written: Spark keeps spaces
    for name, where in positions.items():
        if len(where) > 1 and name in wanted:
            shown = ", ".join(str(p + 1) for p in where)
            raise SourceError(
                f"the CSV header of {local} names the column {names[where[0]]!r} more than once "
                f"(columns {shown}): which one the model's field means is ambiguous",
                hint="rename or remove the repeated column in the file",
            )


def _lines_as_malformed(
    spark: SparkSession, path: str, reason: str, csv_opts: Mapping[str, str], *, with_file_path: bool
) -> DataFrame:
    """Every line of a CSV file whose records cannot be delimited (csv_quotes.py) as a malformed record
    (§3.3) with ``reason``: nothing of it is read as data, nothing of it is lost. The header line and
    comment lines are not records; blank lines add nothing, as in a readable file."""
    from pyspark.sql import functions as F

    # One text column: no quoting, a separator no text line holds; a line that holds it anyway has
    # extra fields, so the reader keeps it whole in the corrupt-record column.
    line_opts = {k: v for k, v in csv_opts.items() if k in ("header", "encoding", "comment", "basePath")}
    lines = (
        source_reader(spark)
        .options(**line_opts)
        .options(
            sep="\u0001",
            quote="",
            multiLine="false",
            mode="PERMISSIVE",
            columnNameOfCorruptRecord=CORRUPT_COLUMN,
            ignoreLeadingWhiteSpace="false",
            ignoreTrailingWhiteSpace="false",
        )
        .schema(f"line STRING, {CORRUPT_COLUMN} STRING")
        .csv(path)
    )
    text = F.coalesce(F.col(CORRUPT_COLUMN), F.col("line"))
    columns = [text.alias(CORRUPT_COLUMN), F.lit(reason).alias(CORRUPT_REASON_COLUMN)]
    if with_file_path:
        columns.append(F.col("_metadata.file_path").alias(SOURCE_FILE_COLUMN))
    return lines.where(F.trim(text) != "").select(*columns)


def _undecodable_as_malformed(frame: DataFrame, columns: list[str], sep: str) -> DataFrame:
    """SEMANTICS §3.3 names bad bytes as malformed input. Spark's CSV reader decodes a byte sequence that
    is invalid in the file's encoding to U+FFFD instead of failing, so a record holding U+FFFD is kept as
    malformed with its text as decoded (a file that really contains U+FFFD is treated the same way)."""
    from functools import reduce

    from pyspark.sql import functions as F

    values = [F.col("`" + c.replace("`", "``") + "`") for c in columns]
    replaced = reduce(lambda a, b: a | b, (F.coalesce(v.contains("\ufffd"), F.lit(False)) for v in values))
    record = F.concat_ws(sep, *[F.coalesce(v, F.lit("")) for v in values])
    corrupt = F.coalesce(F.col(CORRUPT_COLUMN), F.when(replaced, record))
    return frame.withColumn(CORRUPT_COLUMN, corrupt)


def java_charset(spark: SparkSession, name: str) -> str:
    """``name`` as a charset the JVM knows: as written when Java accepts it, else Python's canonical name
    for the codec (``latin-1`` -> ``iso8859-1``, ``utf_16_le`` -> ``utf-16le``); an unknown encoding is an
    error naming the option instead of a JVM exception in the middle of the read."""
    import codecs

    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    candidates = [name]
    try:
        python_name = codecs.lookup(name).name
    except LookupError:
        python_name = None
    if python_name:
        candidates += [python_name, python_name.replace("-le", "le").replace("-be", "be")]
    for candidate in candidates:
        try:
            if jvm.java.nio.charset.Charset.isSupported(candidate):
                return candidate
        except Py4JJavaError:  # IllegalCharsetNameException: not a name Java can use; try the next
            continue
    raise SourceError(
        f"source.options.encoding {name!r} is not an encoding Spark can read",
        hint="use a standard name such as utf-8, iso-8859-1, windows-1252 or utf-16",
    )
