"""The placeholder ("unknown") member of a dimension (SEMANTICS §13.3 ``scd2.unknown_member``, §13.6
``materialization.unknown_member``): one row inserted once, so facts can point at it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakelogic.errors import MergeKeyError
from lakelogic.tables.base import TableAdapter
from lakelogic.tables.spark_batch import q


@dataclass(frozen=True)
class UnknownMember:
    """Column values of the member (``default_values`` plus the surrogate key) and the ones that
    identify it in the table."""

    values: dict[str, Any]
    identity: dict[str, Any]


def unknown_member(
    settings: Mapping[str, Any] | None,
    *,
    key_columns: Sequence[str],
    surrogate_key: str | None = None,
    where: str,
    whole_key: bool = False,
) -> UnknownMember | None:
    """The configured member, or None when absent or ``enabled: false``. ``whole_key``: every key column
    needs a default value (a merge matches on all of them)."""
    member = dict(settings or {})
    if not member or not member.get("enabled", True):
        return None
    values = dict(member.get("default_values") or {})
    if surrogate_key:
        values[surrogate_key] = str(member.get("surrogate_key_value", "-1"))
    identity = {k: v for k, v in values.items() if k and k in (surrogate_key, *key_columns)}
    missing = [k for k in key_columns if k not in values]
    if not identity or (whole_key and missing):
        raise MergeKeyError(
            f"{where} needs default_values for the key column(s) {', '.join(missing or key_columns)}"
            + ("" if whole_key else " or a surrogate_key")
        )
    return UnknownMember(values=values, identity=identity)


def stored_member(adapter: TableAdapter, member: UnknownMember, schema: StructType) -> bool:
    """Whether the table already holds the member (one small filtered scan)."""
    if not adapter.exists():
        return False
    stored = adapter.read()
    if not all(c in stored.columns for c in member.identity):
        return False
    condition = F.lit(True)
    for column, value in member.identity.items():
        condition = condition & (q(column) == F.lit(value).cast(schema[column].dataType))
    return stored.where(condition).limit(1).count() > 0
