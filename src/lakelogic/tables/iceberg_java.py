"""Refs and snapshots of an Iceberg table through the Java ``Table`` its Spark catalog holds.

A keyed write reads and moves refs several times (pin ``main``, create the run branch, read the branch's
commits, fast-forward ``main``, drop the branch). Through Spark SQL each of those is a statement, and the
reads (``.refs``, ``.snapshots``) plan and run a Spark job: 30-50 ms each warm, ~0.2 s per write. The
Java table answers the reads from the metadata it already holds, and the publish and the branch's removal
are one metadata commit. Keyed Iceberg writes already need the Py4J gateway for their commit properties
(:mod:`spark_commit`), so this adds no requirement on the session.

The table is the catalog's own instance (Spark's caching catalog hands out the one its statements use),
refreshed before each read that must see a statement's commit, so a catalog without caching works too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from loguru import logger
from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession

from lakelogic.errors import CommitError
from lakelogic.tables.key_range import FileBounds, comparable_bound

MAIN = "main"


def java_class(spark: SparkSession, name: str) -> Any:
    """The JVM class ``name`` (fully qualified) for static calls and constructors. ``spark._jvm.a.b.C``
    resolves each dotted part with a gateway round trip (a failed class lookup in the JVM for every
    package part, ~0.5 ms in all); this names the class at once and costs nothing until it is called."""
    context: Any = spark.sparkContext
    return JavaClass(name, context._gateway._gateway_client)


class JavaIcebergTable:
    """One Iceberg table's refs and snapshots, read and changed through the Java API."""

    def __init__(self, spark: SparkSession, name: str) -> None:
        """``name``: the table as Spark SQL names it (``catalog.namespace.table``, parts may be quoted)."""
        self._spark = spark
        self.name = name
        try:
            self._table = java_class(spark, "org.apache.iceberg.spark.Spark3Util").loadIcebergTable(
                spark._jsparkSession, name
            )
        except (Py4JError, CapturedException) as exc:  # PySpark converts the Java exceptions it knows
            raise CommitError(f"cannot load the Iceberg table {name} through the catalog: {exc}") from exc

    def refresh(self) -> None:
        """Read the table's current metadata (a statement's commit through another instance)."""
        self._table.refresh()

    def head(self, ref: str) -> int | None:
        """The snapshot id ``ref`` (a branch or tag) points at; None when there is no such ref."""
        found = self._table.refs().get(ref)
        return None if found is None else int(found.snapshotId())

    def snapshot(self, snapshot_id: int) -> tuple[int | None, dict[str, str]] | None:
        """(parent id, summary) of a snapshot, or None when the table has no such snapshot. The summary is
        the ``summary`` column of the ``snapshots`` metadata table (the operation is not in it)."""
        found = self._table.snapshot(snapshot_id)
        if found is None:
            return None
        # one gateway call for the whole snapshot, where reading the Java map costs one per entry
        parsed = json.loads(java_class(self._spark, "org.apache.iceberg.SnapshotParser").toJson(found))
        summary = {k: str(v) for k, v in (parsed.get("summary") or {}).items() if k != "operation"}
        parent = parsed.get("parent-snapshot-id")
        return (int(parent) if parent is not None else None), summary

    def create_branch(self, branch: str, at: int | None) -> None:
        """Create ``branch`` at snapshot ``at`` (main's current snapshot when None), replacing a branch of
        that name (a crashed try's) in the same metadata commit."""
        manage = self._table.manageSnapshots()
        if self.head(branch) is not None:
            manage = manage.removeBranch(branch)
        manage = manage.createBranch(branch) if at is None else manage.createBranch(branch, at)
        manage.commit()

    def drop_branch(self, branch: str) -> None:
        """Remove ``branch`` when it exists (nothing to commit otherwise)."""
        if self.head(branch) is not None:
            self._table.manageSnapshots().removeBranch(branch).commit()

    def fast_forward_main(self, branch: str) -> None:
        """Move ``main`` to the head of ``branch`` and remove the branch, in one metadata commit; fails
        with Iceberg's "Cannot fast-forward" when ``main`` is no ancestor of the branch's head (another
        writer committed). Spark's cached queries over the table are then planned again, as Iceberg's
        ``fast_forward`` procedure does."""
        self._table.manageSnapshots().fastForwardBranch(MAIN, branch).removeBranch(branch).commit()
        self._spark.catalog.refreshTable(self.name)

    def files_in_key_range(
        self, snapshot_id: int, bounds: Mapping[str, tuple[Any, Any]], *, limit: int
    ) -> list[FileBounds] | None:
        """Record count and key bounds (:func:`key_range.comparable_bound` form) of the data files at
        ``snapshot_id`` whose metrics overlap ``bounds``, from Iceberg's own scan planning (manifests only,
        files pruned by the same metrics and by partition); None when more than ``limit`` files overlap,
        or when a bound is no filter literal for its column (Iceberg binds the filter while it reads the
        manifests, so that shows during the iteration). Each file costs a few gateway calls, so a caller
        with many files to measure reads the ``data_files`` metadata table instead (one query, ~0.1 s).

        Unlike that table, planning leaves out files that cannot hold a key in range (a key column that is
        all NULL, a partition outside the range): their rows cannot match, so the share is the better
        for it."""
        ranged = self._range_filter(bounds)
        if ranged is None:
            return None
        condition, fields = ranged
        conversions = java_class(self._spark, "org.apache.iceberg.types.Conversions")
        files: list[FileBounds] = []
        planned = None
        try:
            planned = (
                self._table.newScan()
                .useSnapshot(snapshot_id)
                .filter(condition)
                .includeColumnStats()
                .planFiles()
            )
            tasks = planned.iterator()
            while tasks.hasNext():
                if len(files) == limit:
                    return None
                # py4j's iterator turns a failed next() into StopIteration: caught below, not a short list
                data_file = tasks.next().file()
                lower, upper = data_file.lowerBounds(), data_file.upperBounds()
                found: dict[str, tuple[Any, Any]] = {}
                for column, (field_id, field_type) in fields.items():
                    low, high = (
                        None
                        if side is None or (raw := side.get(field_id)) is None
                        else _python_value(conversions.fromByteBuffer(field_type, raw))
                        for side in (lower, upper)
                    )
                    found[column] = (low, high)
                files.append((int(data_file.recordCount()), found))
        except (Py4JError, CapturedException, StopIteration) as exc:
            logger.debug(f"{self.name}: key bounds through the scan planning failed ({exc}); using the query")
            return None
        finally:
            if planned is not None:
                planned.close()
        return files

    def _range_filter(
        self, bounds: Mapping[str, tuple[Any, Any]]
    ) -> tuple[Any, dict[str, tuple[int, Any]]] | None:
        """The Iceberg filter ``low <= column <= high`` for every bound, with each column's field id and
        type; None when a column is unknown or a bound would not bind. py4j sends a Python int that fits
        in 32 bits as an ``Integer``, and Iceberg takes no ``Integer`` literal for a timestamp (bounds
        within ~36 minutes of the epoch)."""
        schema = self._table.schema()
        expressions = java_class(self._spark, "org.apache.iceberg.expressions.Expressions")
        both = getattr(expressions, "and")  # ``and`` is a Python keyword
        condition = expressions.alwaysTrue()
        fields: dict[str, tuple[int, Any]] = {}
        for column, (low, high) in bounds.items():
            field = schema.findField(column)
            if field is None:
                return None
            field_type = field.type()
            values = (comparable_bound(low), comparable_bound(high))
            if str(field_type.typeId().name()) == "TIMESTAMP" and any(
                isinstance(v, int) and -(2**31) <= v < 2**31 for v in values
            ):
                return None
            fields[column] = (int(field.fieldId()), field_type)
            condition = both(
                condition,
                both(
                    expressions.greaterThanOrEqual(column, values[0]),
                    expressions.lessThanOrEqual(column, values[1]),
                ),
            )
        return condition, fields


def _python_value(value: Any) -> Any:
    """A converted bound as Python compares it: numbers and decimals arrive converted by the gateway; a
    string arrives as a Java ``CharSequence``."""
    if value is None or isinstance(value, (int, float, str, Decimal)):
        return value
    return str(value.toString())
