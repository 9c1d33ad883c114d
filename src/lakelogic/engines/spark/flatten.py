"""``source.flatten_nested`` (SEMANTICS §3.1): struct columns of the source become ``parent_child`` columns.

``true`` flattens every struct, at any depth. A list names struct paths (``address``, ``customer.address``):
each named struct and every struct inside it is flattened; the structs on the way to a named one are
flattened too (a nested struct cannot become a column while its parent stays a struct), and any other
struct stays as it is. Arrays are never flattened (their elements are rows of their own). Flattening is
one projection of field accesses: no data is moved.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from lakelogic.errors import PlanError

YAML_PATH = "source.flatten_nested"


def flatten_nested(frame: DataFrame, setting: bool | tuple[str, ...]) -> DataFrame:
    if not setting:
        return frame
    named = None if isinstance(setting, bool) else [tuple(p.split(".")) for p in setting]
    if named is not None:
        _require_struct_paths(frame.schema, named)
    columns: list[tuple[str, Column]] = []

    def flattened(path: tuple[str, ...]) -> bool:
        if named is None:
            return True
        # on the way to a named struct, the named struct itself, or inside it
        return any(n[: len(path)] == path or path[: len(n)] == n for n in named)

    def visit(path: tuple[str, ...], dtype: DataType, column: Column) -> None:
        if isinstance(dtype, StructType) and flattened(path):
            for f in dtype.fields:
                visit((*path, f.name), f.dataType, column.getField(f.name))
        else:
            columns.append(("_".join(path), column))

    for f in frame.schema.fields:
        visit((f.name,), f.dataType, F.col("`" + f.name.replace("`", "``") + "`"))
    names = [name for name, _ in columns]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise PlanError(
            f"flattening gives several columns the name(s) {', '.join(clashes)}",
            yaml_path=YAML_PATH,
            hint="rename the clashing source column, or list only the struct paths to flatten",
        )
    return frame.select(*[column.alias(name) for name, column in columns])


def _require_struct_paths(schema: StructType, named: list[tuple[str, ...]]) -> None:
    for path in named:
        if _struct_at(schema, path) is None:
            structs = ", ".join(_struct_paths(schema)) or "none"
            raise PlanError(
                f"{'.'.join(path)!r} is not a struct column of the source; struct columns: {structs}",
                yaml_path=YAML_PATH,
            )


def _struct_at(schema: StructType, path: tuple[str, ...]) -> StructType | None:
    dtype: DataType = schema
    for part in path:
        if not isinstance(dtype, StructType) or part not in dtype.fieldNames():
            return None
        dtype = dtype[part].dataType
    return dtype if isinstance(dtype, StructType) else None


def _struct_paths(dtype: DataType, prefix: tuple[str, ...] = ()) -> list[str]:
    found: list[str] = []
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            if isinstance(f.dataType, StructType):
                found.append(".".join((*prefix, f.name)))
                found.extend(_struct_paths(f.dataType, (*prefix, f.name)))
    return found
