"""Single-scan merge into a merge-on-read Iceberg table (SEMANTICS §13.2), the fast path of ``merge``.

The general path (:func:`lakelogic.tables.spark_merge.merge_changes`) first computes the change set by
joining the batch with the target, counts it, then applies it with ``MERGE INTO``: the target is scanned
twice. Here the NULL-safe "differs" test is the ``WHEN MATCHED AND (...)`` condition of one ``MERGE INTO``,
so the target is scanned once, and the counts come from the commit's snapshot summary: under
merge-on-read every updated row adds one position delete and one new record, every inserted row one
record. That holds only when nothing is deleted, so batches that may carry CDC deletes, soft-delete
targets and copy-on-write tables keep the general path.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pyspark.sql import DataFrame

from lakelogic.tables import spark_iceberg
from lakelogic.tables.spark_iceberg import IcebergTable, quote_ident
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp

MERGE_ON_READ = "merge-on-read"


@dataclass
class SingleScanResult:
    snapshot: str | None
    inserted: int
    updated: int


def may_delete(batch_columns: set[str], spec: WriteSpec) -> bool:
    """True when the batch can carry CDC delete events (the same test as ``delete_flag``)."""
    return bool(spec.cdc_op_field and spec.cdc_op_field in batch_columns and spec.cdc_delete_values)


def single_scan_applies(table: object, spec: WriteSpec, batch_columns: set[str]) -> bool:
    """The fast path needs an existing merge-on-read Iceberg table and a batch that deletes nothing."""
    if not isinstance(table, IcebergTable) or spec.soft_delete_column or may_delete(batch_columns, spec):
        return False
    if not table.exists():
        return False
    rows = table.spark.sql(f"SHOW TBLPROPERTIES {table.sql_name}").collect()
    properties = {str(r["key"]): str(r["value"]) for r in rows}
    return properties.get("write.merge.mode") == MERGE_ON_READ


def merge_statement(
    table_sql: str,
    view: str,
    columns: list[str],
    *,
    keys: tuple[str, ...],
    batch_columns: set[str],
    spec: WriteSpec,
) -> str:
    """``MERGE INTO`` that updates only rows whose compared columns differ (NULL-safe) and inserts new keys.

    ``columns`` are the target schema's columns (all present in the aligned batch). Columns the batch did
    not bring and ``created_columns`` keep the target's value on update.
    """
    ignored = spec.ignored_in_compare() | set(keys)
    compared = [c for c in columns if c in batch_columns and c not in ignored]
    updated = [c for c in columns if c in batch_columns and c not in keys and c not in spec.created_columns]
    on = " AND ".join(f"t.{quote_ident(k)} = s.{quote_ident(k)}" for k in keys)
    differs = " OR ".join(f"NOT (t.{quote_ident(c)} <=> s.{quote_ident(c)})" for c in compared)
    statement = f"MERGE INTO {table_sql} t USING (SELECT * FROM {view}) s ON {on} "
    if compared and updated:
        set_clause = ", ".join(f"t.{quote_ident(c)} = s.{quote_ident(c)}" for c in updated)
        statement += f"WHEN MATCHED AND ({differs}) THEN UPDATE SET {set_clause} "
    col_list = ", ".join(quote_ident(c) for c in columns)
    values = ", ".join(f"s.{quote_ident(c)}" for c in columns)
    return statement + f"WHEN NOT MATCHED THEN INSERT ({col_list}) VALUES ({values})"


def single_scan_merge(
    table: IcebergTable,
    aligned: DataFrame,
    columns: list[str],
    stamp: CommitStamp,
    spec: WriteSpec,
    *,
    batch_columns: set[str],
) -> SingleScanResult:
    """Run the one ``MERGE INTO`` (one snapshot) and read inserted/updated counts from its summary."""
    view = f"_ll_batch_{uuid.uuid4().hex[:12]}"
    aligned.select(*[aligned[quote_ident(c)] for c in columns]).createOrReplaceTempView(view)
    statement = merge_statement(
        table.sql_name, view, columns, keys=spec.primary_key, batch_columns=batch_columns, spec=spec
    )

    def run_merge() -> None:
        table.spark.sql(statement)

    try:  # the Iceberg adapter's commit entry point (module attribute: one place to stamp or intercept)
        spark_iceberg.run_with_commit_properties(table.spark, stamp.properties(), run_merge)
    finally:
        table.spark.catalog.dropTempView(view)
    snapshot = table.snapshot_of(stamp)
    summary = table.summary_of(snapshot)
    added = int(summary.get("added-records", 0))
    updated = int(summary.get("added-position-deletes", 0))
    return SingleScanResult(snapshot=snapshot, inserted=added - updated, updated=updated)
