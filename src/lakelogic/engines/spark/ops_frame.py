"""Frame helpers shared by the Spark op implementations: exact column references, in-place column
replacement, and errors that name the op and its YAML path."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructType, TimestampType

from lakelogic.engines.spark.casting import strict_cast_sql
from lakelogic.errors import PlanError
from lakelogic.plan.ops_common import quote, value_text
from lakelogic.plan.steps import Transform
from lakelogic.types import parse_type


def col(name: str) -> Column:
    """A column by its exact name (dots and spaces are part of the name, not struct access)."""
    return F.col(quote(name))


def op_error(step: Transform, message: str, key: str | None = None, *, hint: str | None = None) -> PlanError:
    """A plan error for a step, e.g. ``transformations[3].trim.fields: op #3 (trim): ...``."""
    path = f"{step.yaml_path}.{step.op}" if step.op != "sql" else f"{step.yaml_path}.sql"
    if key is not None and step.op != "sql":
        path = f"{path}.{key}"
    return PlanError(f"op #{step.index} ({step.op}): {message}", yaml_path=path, hint=hint)


_INTERNAL = ("__ll_", "__lakelogic_")  # the engine's own working columns, never the user's


def require_columns(step: Transform, frame: DataFrame, names: Iterable[str], key: str) -> None:
    """Every named column must exist (exact, case-sensitive names, SEMANTICS §5.1)."""
    present = set(frame.columns)
    missing = [n for n in names if n not in present]
    if missing:
        raise op_error(
            step,
            f"column(s) not in the frame: {', '.join(missing)}",
            key,
            hint=f"available columns: {', '.join(c for c in frame.columns if not c.startswith(_INTERNAL))}",
        )


def with_columns(frame: DataFrame, assignments: Mapping[str, Column]) -> DataFrame:
    """Write columns in one projection: a same-named column is replaced in place, others are appended."""
    existing = frame.columns
    items = [assignments[c].alias(c) if c in assignments else col(c) for c in existing]
    items += [expr.alias(name) for name, expr in assignments.items() if name not in existing]
    return frame.select(*items)


# An op that drops some input rows while adding others may keep the dropped rows with this column TRUE;
# the executor counts them (filtered) and removes them (see PlanExecutor._counted).
NO_OUTPUT_ROW = "__ll_no_output_row"


def hidden_name(step: Transform, frame: DataFrame, purpose: str) -> str:
    """A helper column name that cannot clash with the frame's columns."""
    base = f"__ll_{purpose}_{step.index}"
    name, n = base, 0
    while name in frame.columns:
        n += 1
        name = f"{base}_{n}"
    return name


def safe_identifier(text: str) -> str:
    """``text`` reduced to ``[A-Za-z0-9_]`` for use in view names."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def is_orderable(data_type: DataType) -> bool:
    """Spark cannot sort or group map values (also inside arrays/structs)."""
    if isinstance(data_type, MapType):
        return False
    if isinstance(data_type, ArrayType):
        return is_orderable(data_type.elementType)
    if isinstance(data_type, StructType):
        return all(is_orderable(f.dataType) for f in data_type.fields)
    return True


def comparable(column: Column, data_type: DataType) -> Column:
    """A value Spark can group and sort that is equal when ``column`` is equal: the column itself, or, for a
    map, its entries sorted (entry order carries no meaning); other types holding maps compare as their JSON
    text (equal maps written in another entry order then count as different)."""
    if is_orderable(data_type):
        return column
    if isinstance(data_type, MapType) and is_orderable(data_type.valueType):
        return F.array_sort(F.map_entries(column))
    return F.to_json(column)


def field_type(frame: DataFrame, name: str) -> DataType:
    """The Spark type of column ``name`` (schema metadata; no job)."""
    for f in frame.schema.fields:
        if f.name == name:
            return f.dataType
    raise KeyError(name)


def with_default(value: Column, data_type: DataType, default: Any) -> Column:
    """``COALESCE(value, default)`` (coalesce, lookup, join, pivot). Spark has no common type for text
    and a boolean (or a date and a number), so a non-text default of a text column, as every column is
    before step 5 when the source is CSV, is written as its text (``false`` -> ``'false'``); the model's
    strict cast then reads it like any other value of the column."""
    if isinstance(data_type, StringType) and not isinstance(default, str):
        return F.coalesce(value, F.lit(value_text(default)))
    if isinstance(default, str) and not isinstance(data_type, StringType):
        # text default of a non-text column (`unknown` for a boolean): the result is text, the values
        # written as §5.3 writes them; step 10 casts a model column back (a failure is `<f>_type`)
        return F.coalesce(_as_text(value, data_type), F.lit(default))
    return F.coalesce(value, F.lit(default))


def _as_text(value: Column, data_type: DataType) -> Column:
    if isinstance(data_type, TimestampType):  # ISO 8601 in UTC, as casting._to_string writes it
        return F.concat(F.regexp_replace(value.cast("string"), " ", "T"), F.lit("Z"))
    if isinstance(data_type, ArrayType | MapType | StructType):
        return F.to_json(value)
    return value.cast("string")


def text_of(name: str, data_type: DataType) -> Column:
    """Column ``name`` as §5.3 writes values as text (a timestamp as ``2024-01-15T10:00:00Z``, not Spark's
    ``2024-01-15 10:00:00``): what ops compare as text (map_values keys, lookup/join keys of two types)."""
    if isinstance(data_type, StringType):
        return col(name)
    return F.expr(strict_cast_sql(quote(name), data_type, parse_type("string")))
