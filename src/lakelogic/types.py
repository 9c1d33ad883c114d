"""Shared value types: logical column types, layers, phases, severities, statuses.

Pure Python; imported by every package, imports nothing from lakelogic but ``errors``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    PRE = "pre"
    POST = "post"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class RunStatus(StrEnum):
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    NO_NEW_DATA = "no_new_data"
    AWAITING_APPROVAL = "awaiting_approval"
    REJECTED = "rejected"  # a staged batch an approver dropped (DRIVER §11)
    SKIPPED = "skipped"  # driver only: the contract did not run


LAYERS: tuple[str, ...] = ("reference", "bronze", "silver", "gold")

_LAYER_ALIASES = {
    "raw": "bronze",
    "landing": "bronze",
    "ingest": "bronze",
    "stage": "silver",
    "staging": "silver",
    "cleansed": "silver",
    "curated": "gold",
    "mart": "gold",
    "presentation": "gold",
    "consumption": "gold",
    "ref": "reference",
    "seed": "reference",
    "lookup": "reference",
    "masterdata": "reference",
}


def normalize_layer(value: str | None) -> str | None:
    """Map layer synonyms to the four canonical layers (SEMANTICS §2); others are lower-cased."""
    if value is None:
        return None
    low = value.strip().lower()
    return _LAYER_ALIASES.get(low, low)


def slugify(text: str) -> str:
    """Lower case, every run of non-alphanumerics becomes ``_`` (SEMANTICS §2 table_name default)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# --- logical types ---------------------------------------------------------------------------

_SCALAR_ALIASES: dict[str, str] = {
    "string": "string",
    "text": "string",
    "str": "string",
    "varchar": "string",
    "char": "string",
    "integer": "integer",
    "int": "integer",
    "int32": "integer",
    "short": "integer",
    "smallint": "integer",
    "tinyint": "integer",
    "byte": "integer",
    "bigint": "bigint",
    "long": "bigint",
    "int64": "bigint",
    "float": "float",
    "float32": "float",
    "real": "float",
    "double": "double",
    "float64": "double",
    "number": "double",
    "numeric": "double",
    "decimal": "double",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "datetime": "timestamp",
    "timestamp_tz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
    "bytes": "binary",
    "json": "json",
    "array": "array",
}

TYPE_NAMES: tuple[str, ...] = (*sorted(_SCALAR_ALIASES), "decimal(p,s)", "varchar(n)", "array<T>")

_DECIMAL_RE = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_VARCHAR_RE = re.compile(r"^(?:varchar|char)\s*\(\s*\d+\s*\)$")
_ARRAY_RE = re.compile(r"^array\s*<\s*(.+)\s*>$")


@dataclass(frozen=True)
class LogicalType:
    """A parsed model type. ``kind`` is canonical (string, integer, bigint, float, double, decimal,
    boolean, date, timestamp, timestamp_ntz, binary, json, array)."""

    kind: str
    precision: int | None = None
    scale: int | None = None
    element: LogicalType | None = None

    @property
    def is_numeric(self) -> bool:
        return self.kind in {"integer", "bigint", "float", "double", "decimal"}

    @property
    def is_textual(self) -> bool:
        return self.kind in {"string", "json"}

    def spark_sql(self) -> str:
        """Spark SQL type name, usable in ``CAST(x AS <type>)``."""
        simple = {
            "string": "STRING",
            "json": "STRING",
            "integer": "INT",
            "bigint": "BIGINT",
            "float": "FLOAT",
            "double": "DOUBLE",
            "boolean": "BOOLEAN",
            "date": "DATE",
            "timestamp": "TIMESTAMP",
            "timestamp_ntz": "TIMESTAMP_NTZ",
            "binary": "BINARY",
        }
        if self.kind == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.kind == "array":
            inner = self.element.spark_sql() if self.element else "STRING"
            return f"ARRAY<{inner}>"
        return simple[self.kind]

    def __str__(self) -> str:
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "array":
            return f"array<{self.element}>" if self.element else "array<string>"
        return self.kind


class TypeParseError(ValueError):
    """Raised by :func:`parse_type`; carries the closest allowed name."""

    def __init__(self, value: str, suggestion: str | None) -> None:
        self.value = value
        self.suggestion = suggestion
        super().__init__(f"unknown type {value!r}")


def parse_type(text: str) -> LogicalType:
    """Parse a model type name (case-insensitive, SEMANTICS §5.2)."""
    raw = text.strip().lower()
    if raw in _SCALAR_ALIASES:
        kind = _SCALAR_ALIASES[raw]
        if kind == "array":
            return LogicalType("array", element=LogicalType("string"))
        return LogicalType(kind)
    if m := _DECIMAL_RE.match(raw):
        p, s = int(m.group(1)), int(m.group(2))
        if not (1 <= p <= 38 and 0 <= s <= p):
            raise TypeParseError(text, "decimal(p,s) with 1<=p<=38 and 0<=s<=p")
        return LogicalType("decimal", precision=p, scale=s)
    if _VARCHAR_RE.match(raw):
        return LogicalType("string")
    if m := _ARRAY_RE.match(raw):
        return LogicalType("array", element=parse_type(m.group(1)))
    close = difflib.get_close_matches(raw, list(_SCALAR_ALIASES), n=1, cutoff=0.6)
    raise TypeParseError(text, close[0] if close else None)
