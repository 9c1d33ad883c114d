"""The interface every table format implements for the Spark engine.

A strategy (append, overwrite, merge, SCD2) never talks to a format directly: it prepares frames and
calls one of these operations, each of which is one commit stamped with the run's :class:`CommitStamp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lakelogic.plan.sqlutil import sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakelogic.tables.spark_evolution import EvolutionPlan
    from lakelogic.tables.spec import WriteSpec
    from lakelogic.tables.stamp import CommitStamp
    from lakelogic.tables.target import ResolvedTarget


def window_sql(column: str, start: object, end: object, *, cast_to: str | None = None) -> str:
    """``start <= column < end`` as SQL (either bound may be None; no bound = ``true``); ``column`` is
    already quoted/qualified and ``cast_to`` is its type, the bounds are cast to it. A text column (or an
    unknown type) is compared as a timestamp, as Spark compares it with the batch guard's timestamp
    bounds: text against text put ``'2026-01-02'`` below ``'2026-01-02 00:00:00+00:00'``, so a reprocess
    of one day deleted the next day's rows as well."""
    if cast_to is None or cast_to.split("(")[0].strip().upper() in ("STRING", "VARCHAR", "CHAR"):
        column, cast_to = f"CAST({column} AS TIMESTAMP_LTZ)", "TIMESTAMP_LTZ"

    def literal(value: object) -> str:
        text = sql_string(str(value))
        return f"CAST({text} AS {cast_to})" if cast_to else text

    bounds = []
    if start is not None:
        bounds.append(f"{column} >= {literal(start)}")
    if end is not None:
        bounds.append(f"{column} < {literal(end)}")
    return " AND ".join(bounds) or "true"


@dataclass(frozen=True)
class CommitResult:
    """What one commit produced: the format's snapshot/version id (None when nothing was committed)."""

    committed: bool
    snapshot: str | None = None
    rows_added: int | None = None  # rows written by an append/overwrite, when the format reports it


@dataclass(frozen=True)
class ReplaceResult(CommitResult):
    """What a ``replace_where`` commit (any format) did besides :class:`CommitResult`: ``rows_deleted``,
    the target rows of the window it removed (None when unknown). A format that rewrites a data file to
    remove some of its rows writes the file's other rows again: those are not deleted rows, and
    ``rows_added`` (the records the commit wrote) counts them too, so it is no count of inserted rows."""

    rows_deleted: int | None = None


class TableAdapter(Protocol):
    """One table (or path) in one format."""

    target: ResolvedTarget

    def exists(self) -> bool: ...

    def schema(self) -> StructType | None: ...

    def read(self) -> DataFrame: ...

    def read_in_range(self, bounds: Mapping[str, tuple[Any, Any]]) -> DataFrame:
        """The table's rows, of which only those whose columns lie within ``bounds`` (column -> inclusive
        [low, high]) are needed: a format that records per-file value ranges leaves out the files that
        hold none. The caller still filters the rows."""
        ...

    def already_committed(self, stamp: CommitStamp) -> bool: ...

    def evolve(self, plan: EvolutionPlan, new_schema: StructType) -> None:
        """Apply additive/widening schema changes before the data commit."""
        ...

    def append(self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec) -> CommitResult: ...

    def overwrite(
        self, frame: DataFrame, stamp: CommitStamp, spec: WriteSpec, *, partitions: bool, replace_schema: bool
    ) -> CommitResult:
        """Replace the whole table, or (``partitions``) only the partitions present in ``frame``."""
        ...

    def replace_where(
        self,
        frame: DataFrame,
        stamp: CommitStamp,
        spec: WriteSpec,
        *,
        column: str,
        start: object,
        end: object,
    ) -> CommitResult:
        """Replace rows with ``start <= column < end`` by ``frame`` in one commit (reprocess windows)."""
        ...

    def apply_changes(
        self,
        changes: DataFrame,
        stamp: CommitStamp,
        spec: WriteSpec,
        *,
        match: tuple[str, ...],
        bounds: Mapping[str, tuple[Any, Any]] | None = None,
        counts: Mapping[str, int] | None = None,
        ranged: tuple[str, ...] = (),
    ) -> CommitResult:
        """Apply a change set (target columns + ``_ll_op``) matched on ``match`` in one commit.

        ``bounds``: per match column, the range holding every updated/deleted key ({} = none); formats may
        use it to prune the target scan. ``counts``: rows per operation when known (lets a format skip
        statements with nothing to do). ``ranged``: match columns a join should check after hashing the
        others (see ``spark_merge._change_set_on``); formats that do not join may ignore it. A format may
        release ``changes``' cache once it has read it."""
        ...

    def empty(self, stamp: CommitStamp) -> bool:
        """Remove every row in one commit, keeping schema and history; False when the table is absent."""
        ...

    def drop(self) -> bool: ...

    def create_ddl(self, schema: StructType, spec: WriteSpec) -> str: ...
