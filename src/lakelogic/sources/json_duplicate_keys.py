"""JSON records that repeat a key or hold text after their value (SEMANTICS §3.3): malformed records, the
rest of the source read as usual.

Spark's JSON reader keeps every key of every record in the schema it infers, so a single record such as
``{"id": 1, "id": 2}`` (or ``{"Id": 1, "id": 2}`` while column names are case-insensitive, Spark's
default) fails the whole read with COLUMN_ALREADY_EXISTS. Which value a repeated key means is ambiguous,
equal values or not, so such a record is malformed. The normal read stays as it is (no cost when no record
repeats a key); only when it fails that way are the files read again as text. Each record's keys are
listed on the executors (``json_object_keys``), records repeating one are marked, the schema is inferred
from the other records and every record is parsed with it (``from_json``, so a broken record stays
malformed as before). Keys repeated inside nested objects are found the same way at the paths where the
inferred schema shows a repeat, at the price of one more inference pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from lakelogic.errors import SourceError
from lakelogic.sources.columns import CORRUPT_COLUMN, CORRUPT_REASON_COLUMN, SOURCE_FILE_COLUMN
from lakelogic.sources.json_trailing import TRAILING_REASON
from lakelogic.sources.strict_read import source_reader

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

KeyPath = tuple[str | None, ...]
"""Where an object sits in a record: field names, None for "each element of the array"; () = the record."""

_RECORD = "__lakelogic_json_record"
_KEYS = "__lakelogic_json_keys"
_REPEATED = "__lakelogic_json_repeated"
_PARSED = "__lakelogic_json_parsed"
_TRAILING = "__lakelogic_json_trailing"
_MARK = "__lakelogic_json_mark"
# Each round is one inference pass and uncovers at least one more nesting level; real data needs one or two.
_MAX_ROUNDS = 4
# Options of the file reader that mean nothing to the parser of one record's text.
_FILE_ONLY = {"multiLine", "multiline", "encoding", "lineSep", "basePath", "wholetext"}


def is_duplicate_column_error(exc: BaseException) -> bool:
    """Whether Spark refused the inferred schema because two of its column names are the same."""
    error_class = getattr(exc, "getErrorClass", None)
    if callable(error_class) and error_class() == "COLUMN_ALREADY_EXISTS":
        return True
    return "COLUMN_ALREADY_EXISTS" in str(exc)


def read_json_with_duplicate_keys(
    spark: SparkSession,
    files: Sequence[str],
    *,
    base: str | None,
    json_opts: Mapping[str, str],
    engine_options: Mapping[str, str],
    with_file_path: bool,
    names: Sequence[str],
    trailing: Collection[str] = (),
) -> DataFrame:
    """The JSON files as the normal read gives them, plus :data:`CORRUPT_COLUMN` holding the raw text of
    every record that repeats a key and :data:`CORRUPT_REASON_COLUMN` naming the keys. ``names`` (the
    model's fields) become NULL columns when no record is good, as in an all-malformed read.

    ``trailing``: record texts with text after their JSON value (:mod:`.json_trailing`), malformed as
    well, with that reason; such a line is not split into the elements of an array it starts with."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    records, carried = _records(spark, files, base, json_opts, engine_options, with_file_path, trailing)
    # a column of its own: the checks below read the keys several times but parse the record once
    records = records.withColumn(_KEYS, F.json_object_keys(F.col(_RECORD)))
    options = {k: v for k, v in {**json_opts, **engine_options}.items() if k not in _FILE_ONLY}
    # from_json knows no DROPMALFORMED: a broken record is kept and quarantined, as §3.3 asks anyway
    options.update(mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT_COLUMN)
    fold = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() != "true"
    checked: set[KeyPath] = {()}
    for _ in range(_MAX_ROUNDS):
        marked = records.withColumn(_REPEATED, _repeated_keys(F.col(_RECORD), F.col(_KEYS), checked, fold))
        clean = (F.size(_REPEATED) == 0) & ~F.col(_TRAILING)
        schema = _inferred(spark, marked.where(clean).select(_RECORD), options)
        found = _repeating_paths(schema, (), fold)
        if not found:
            break
        if found <= checked:  # no record repeats them, so marking more records cannot help
            shown = ", ".join(sorted(_shown(p) or "(top level)" for p in found))
            raise SourceError(f"the JSON source's keys at {shown} give Spark two columns of one name")
        checked |= found
    else:
        raise SourceError("JSON records repeat keys nested deeper than LakeLogic looks for them")
    partitions = {_folded(c, fold) for c in carried if c != SOURCE_FILE_COLUMN}
    # a key that is also a partition directory is the directory's value, as in Spark's own read
    fields = [
        f for f in schema.fields if f.name != CORRUPT_COLUMN and _folded(f.name, fold) not in partitions
    ]
    parse_schema = StructType([*fields, StructField(CORRUPT_COLUMN, StringType(), True)])
    parsed = marked.select("*", F.from_json(F.col(_RECORD), parse_schema, options).alias(_PARSED))
    repeats = F.size(F.col(_REPEATED)) > 0
    quoted = F.transform(F.col(_REPEATED), lambda k: F.concat(F.lit('"'), k, F.lit('"')))
    reason = F.when(F.col(_TRAILING), F.lit(TRAILING_REASON)).when(
        repeats, F.concat(F.lit("duplicate key "), F.array_join(quoted, ", "))
    )
    corrupt = F.when(repeats | F.col(_TRAILING), F.col(_RECORD)).otherwise(
        F.col(_PARSED).getField(CORRUPT_COLUMN)
    )
    data = [F.col(_PARSED).getField(f.name).alias(f.name) for f in fields] or [
        F.lit(None).cast("string").alias(n) for n in names if n != CORRUPT_COLUMN
    ]
    return parsed.select(
        *data,
        corrupt.alias(CORRUPT_COLUMN),
        reason.alias(CORRUPT_REASON_COLUMN),
        *[F.col(_quoted(c)) for c in carried],
    )


# how a file splits into records and decodes: taken from the merged options in _records
_SPLITTING = {"multiline", "linesep", "encoding", "charset"}


def _records(
    spark: SparkSession,
    files: Sequence[str],
    base: str | None,
    json_opts: Mapping[str, str],
    engine_options: Mapping[str, str],
    with_file_path: bool,
    trailing: Collection[str] = (),
) -> tuple[DataFrame, list[str]]:
    """One row per JSON record, as Spark's JSON reader splits them: a line (a whole file when multiline),
    or each element of one holding a top-level array of objects. Blank ones are no records. Also the
    carried columns: partition directories and, when asked, the source file; and :data:`_TRAILING`,
    whether the record is one of ``trailing`` (kept whole)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    # as the JSON read saw them: engine options last, Spark's option names in any case
    merged = {k.lower(): str(v) for k, v in {**json_opts, **engine_options}.items()}
    multiline = merged.get("multiline", "false").lower() == "true"
    reader = source_reader(spark).options(
        **{k: v for k, v in engine_options.items() if k.lower() not in _SPLITTING}
    )
    if base:
        reader = reader.option("basePath", base)
    if not multiline and merged.get("linesep"):
        reader = reader.option("lineSep", merged["linesep"])
    text = reader.text(list(files), wholetext=multiline)
    partitions = [c for c in text.columns if c != "value"]
    value = F.col("value")
    encoding = merged.get("encoding") or merged.get("charset")
    if encoding:
        # the text reader hands over the file's bytes as they are; decode them like the JSON reader does
        value = F.decode(value.cast("binary"), encoding)
    value = F.regexp_replace(value, "^\ufeff", "")  # a byte-order mark is no part of the first record
    source = [F.col("_metadata.file_path").alias(SOURCE_FILE_COLUMN)] if with_file_path else []
    carried = [*partitions, *([SOURCE_FILE_COLUMN] if with_file_path else [])]
    lines = text.select(value.alias(_RECORD), *[F.col(_quoted(c)) for c in partitions], *source)
    record = F.col(_RECORD)
    lines = lines.where(~record.rlike(r"^\s*$"))
    elements = F.when(
        record.rlike(r"^\s*\["),
        F.from_json(record, ArrayType(StringType()), {"allowSingleQuotes": "false"}),
    )
    if trailing:
        # the marked texts (few: lines a scan found) join as a broadcast; a NULL match is no mark
        marks = spark.createDataFrame([(t,) for t in sorted(trailing)], f"{_MARK} string")
        lines = lines.join(F.broadcast(marks), lines[_RECORD] == marks[_MARK], "left")
        lines = lines.withColumn(_TRAILING, F.col(_MARK).isNotNull()).drop(_MARK)
    else:
        lines = lines.withColumn(_TRAILING, F.lit(False))
    of_objects = F.forall(elements, lambda e: e.startswith("{")) & ~F.col(_TRAILING)
    split = F.explode(F.when(of_objects, elements).otherwise(F.array(record)))
    return (
        lines.select(split.alias(_RECORD), *[F.col(_quoted(c)) for c in carried], F.col(_TRAILING)),
        carried,
    )


def _repeated_keys(record: Column, keys: Column, paths: set[KeyPath], fold: bool) -> Column:
    """array<string>: the keys ``record`` (whose top-level ``keys`` are given) repeats in its objects at
    ``paths`` (nested ones shown as ``a.b`` or ``a[].b``); empty, never NULL, when it repeats none or is
    no JSON object."""
    from pyspark.sql import functions as F

    none = F.array().cast("array<string>")
    parts = [
        F.coalesce(_repeats(keys, fold, ""), none) if not path else _repeated_at(record, path, fold, "")
        for path in sorted(paths, key=_shown)
    ]
    return F.array_distinct(F.flatten(F.array(*parts))) if len(parts) > 1 else parts[0]


def _repeated_at(text: Column, path: KeyPath, fold: bool, shown: str) -> Column:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    none = F.array().cast("array<string>")
    if not path:
        return F.coalesce(_bound(F.json_object_keys(text), lambda keys: _repeats(keys, fold, shown)), none)
    head, rest = path[0], path[1:]
    if head is None:
        elements = F.from_json(text, ArrayType(StringType()), {"allowSingleQuotes": "false"})
        inner = shown.removesuffix(".") + "[]."
        return F.coalesce(
            F.flatten(F.transform(elements, lambda e: _repeated_at(e, rest, fold, inner))), none
        )
    # a nested object asked for as a string comes back as its JSON text, repeated keys and all
    child = F.from_json(
        text, StructType([StructField(head, StringType(), True)]), {"allowSingleQuotes": "false"}
    )
    return _repeated_at(child.getField(head), rest, fold, f"{shown}{head}.")


def _repeats(keys: Column, fold: bool, shown: str) -> Column:
    """The repeated ones of ``keys``. The pairwise comparison runs only for records that do repeat one."""
    from pyspark.sql import functions as F

    def same(a: Column, b: Column) -> Column:
        return F.lower(a) == F.lower(b) if fold else a == b

    folded = F.transform(keys, lambda k: F.lower(k)) if fold else keys
    repeated = F.array_distinct(F.filter(keys, lambda k: F.size(F.filter(keys, lambda o: same(o, k))) > 1))
    named = F.transform(repeated, lambda k: F.concat(F.lit(shown), k))
    return F.when(F.size(F.array_distinct(folded)) < F.size(keys), named).otherwise(
        F.array().cast("array<string>")
    )


def _bound(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(value)`` with ``value`` computed once: bound to a lambda variable instead of repeated as an
    expression (a repeated ``json_object_keys`` would parse the record once per key)."""
    from pyspark.sql import functions as F

    return F.element_at(F.transform(F.array(value), body), 1)


def _repeating_paths(dtype: DataType, path: KeyPath, fold: bool) -> set[KeyPath]:
    """Paths of the objects whose inferred fields repeat a name."""
    from pyspark.sql.types import ArrayType, StructType

    found: set[KeyPath] = set()
    if isinstance(dtype, StructType):
        names = [_folded(f.name, fold) for f in dtype.fields]
        if len(set(names)) < len(names):
            found.add(path)
        for f in dtype.fields:
            found |= _repeating_paths(f.dataType, (*path, f.name), fold)
    elif isinstance(dtype, ArrayType):
        found |= _repeating_paths(dtype.elementType, (*path, None), fold)
    return found


def _inferred(spark: SparkSession, records: DataFrame, options: Mapping[str, str]) -> StructType:
    """The schema Spark's JSON reader infers for ``records`` (one JSON text each), inferred on the
    executors. PySpark takes JSON text only as an RDD, which would ship every record through Python; the
    JVM reader takes the Dataset of strings as it is."""
    from pyspark.sql.types import StructType

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    reader = spark._jsparkSession.read()
    for key, value in options.items():
        reader = reader.option(key, value)
    strings = getattr(records._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())
    return StructType.fromJson(json.loads(reader.json(strings).schema().json()))


def _shown(path: KeyPath) -> str:
    return ".".join("[]" if p is None else p for p in path).replace(".[]", "[]")


def _folded(name: str, fold: bool) -> str:
    return name.lower() if fold else name


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
