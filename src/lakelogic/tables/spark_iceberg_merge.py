"""Merge into a merge-on-read Iceberg table without joining the whole target (SEMANTICS §13.2), the fast
path of ``merge``.

The general path (:func:`lakelogic.tables.spark_merge.merge_changes`) first computes the change set by
joining the batch with the target, counts it, then applies it with ``MERGE INTO``. A single ``MERGE`` with a
``WHEN NOT MATCHED`` clause is no better: it is a right outer join that keeps every batch row, so Spark
cannot broadcast the (small) batch and shuffles the target's keys instead. Here the work is split so every
join broadcasts the batch:

1. ``MERGE INTO`` with only ``WHEN MATCHED AND (<NULL-safe differs>) THEN UPDATE`` (an inner join);
2. ``INSERT`` of the batch rows whose key is not in the target (anti-join against the target's keys found
   by a semi-join with the broadcast batch keys).

When the target rows in the batch's key range are few (``WriteSpec.one_statement_merge_max_bytes``, by
Spark's estimate after Iceberg's file pruning), one ``MERGE`` with both clauses is cheaper: it scans that
range once and shuffles it, where the two statements scan it twice and run twice the fixed work. A batch of
recent keys into a large table is this case; a batch spread over the whole table is the other.

Both commits go to a run-private Iceberg branch that is then fast-forwarded onto ``main`` in one step
(:mod:`lakelogic.tables.spark_iceberg_branch`), so readers and the exactly-once check see both or neither.
Counts come from the snapshot summaries: every updated row deletes one position and adds one record
(merge-on-read), every inserted row adds one record (:func:`rows_deleted`). Batches that may carry CDC
deletes, soft-delete targets, copy-on-write tables and tables whose ``MERGE`` does not cluster its deletes by
data file (:func:`deletes_clustered_by_file`) keep the general path.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pyspark.sql import DataFrame

from lakelogic.tables.key_range import BatchKeys
from lakelogic.tables.spark_iceberg import IcebergTable, quote_ident
from lakelogic.tables.spark_iceberg_branch import Commits, commit_on_branch
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp

MERGE_ON_READ = "merge-on-read"
SESSION_DISTRIBUTION_MODE = "spark.sql.iceberg.distribution-mode"  # Iceberg's session-wide override


@dataclass
class SingleScanResult:
    snapshot: str | None
    inserted: int
    updated: int


def may_delete(batch_columns: set[str], spec: WriteSpec) -> bool:
    """True when the batch can carry CDC delete events (the same test as ``delete_flag``)."""
    return bool(spec.cdc_op_field and spec.cdc_op_field in batch_columns and spec.cdc_delete_values)


def single_scan_applies(table: object, spec: WriteSpec, batch_columns: set[str]) -> bool:
    """The fast path needs an existing merge-on-read Iceberg table whose ``MERGE`` writes each data file's
    deletes from one task (:func:`deletes_clustered_by_file`), and a batch that deletes nothing."""
    if not isinstance(table, IcebergTable) or spec.soft_delete_column or may_delete(batch_columns, spec):
        return False
    if not table.exists():
        return False
    rows = table.spark.sql(f"SHOW TBLPROPERTIES {table.sql_name}").collect()
    properties = {str(r["key"]): str(r["value"]) for r in rows}
    return properties.get("write.merge.mode") == MERGE_ON_READ and deletes_clustered_by_file(
        table.spark.conf.get(SESSION_DISTRIBUTION_MODE, None), properties
    )


def deletes_clustered_by_file(session_mode: str | None, properties: dict[str, str]) -> bool:
    """True when a ``MERGE``'s position deletes reach the writers clustered by data file: Iceberg's ``hash``
    distribution, its default for a merge-on-read ``MERGE``.

    The fast paths count updated rows from the snapshot summary (:func:`rows_deleted`), which is exact only
    then. A file-scoped delete file (Iceberg ≥ 1.8) carries the data file's earlier deletes along, and
    under ``none`` several tasks can each write one for the same data file, each carrying them: a merge of
    100 keys into a file with 100 earlier deletes reported 400 updated rows and -300 inserted
    (docs/decisions.md "Session 25 decisions"). ``range`` may split a file's deletes at a range boundary;
    it is treated the same, not measured. Such tables take the change-set path, which counts its change
    set. The session setting wins over the table property, as in Iceberg; the table-wide
    ``write.distribution-mode`` does not apply to a ``MERGE``."""
    mode = session_mode or properties.get("write.merge.distribution-mode") or "hash"
    return mode.strip().lower() == "hash"


def rows_deleted(commits: Commits) -> int:
    """Rows the commits deleted through position deletes (merge-on-read: one per updated or deleted row,
    when each data file's deletes come from one task: :func:`deletes_clustered_by_file`).

    Not ``added-position-deletes`` alone: a delete file that covers one data file (file-scoped deletes,
    Iceberg's default since 1.8, and every format-v3 deletion vector) replaces the file's earlier delete
    file and carries its positions too, which the summary then counts as ``removed-position-deletes``."""
    return sum(
        int(summary.get("added-position-deletes", 0) or 0)
        - int(summary.get("removed-position-deletes", 0) or 0)
        for _, summary in commits
    )


def small_key_range(table: IcebergTable, batch_keys: BatchKeys, spec: WriteSpec) -> bool:
    """True when the target's rows in the batch's key range are estimated at most
    ``spec.one_statement_merge_max_bytes``: the rows a ``MERGE`` with a ``NOT MATCHED`` clause shuffles.

    Spark's size estimate of the range-restricted scan (Iceberg prunes files by their metrics; no job) is
    file-granular: a file overlapping the range counts whole, so a batch of the most recent keys that
    touches the end of one large file counts that file's every row. Only when that estimate is above the
    limit is it scaled by the share of those files' rows inside the range, estimated from each file's key
    bounds (one metadata query; a batch spread over the whole table keeps its share of 1)."""
    limit = spec.one_statement_merge_max_bytes
    estimate = table.estimated_scan_bytes(batch_keys.predicate())
    if estimate <= limit or not batch_keys.bounds:
        return estimate <= limit
    return estimate * table.share_in_key_range(batch_keys.bounds) <= limit


def _keys_on(keys: tuple[str, ...], left: str, right: str) -> str:
    return " AND ".join(f"{left}.{quote_ident(k)} = {right}.{quote_ident(k)}" for k in keys)


def update_statement(
    table_sql: str,
    view: str,
    columns: list[str],
    *,
    keys: tuple[str, ...],
    batch_columns: set[str],
    spec: WriteSpec,
    key_range: str | None = None,
    insert_unmatched: bool = False,
) -> str | None:
    """``MERGE INTO`` that updates only rows whose compared columns differ (NULL-safe); None when no
    column can change. Columns the batch did not bring and ``created_columns`` keep the target's value.
    ``key_range``: a predicate over ``t`` that every matching target row satisfies (key_range.py).
    ``insert_unmatched``: also insert the batch rows whose key the target does not hold, in the same
    statement (a right outer join: the target's rows in ``key_range`` are shuffled)."""
    ignored = spec.ignored_in_compare() | set(keys)
    compared = [c for c in columns if c in batch_columns and c not in ignored]
    updated = [c for c in columns if c in batch_columns and c not in keys and c not in spec.created_columns]
    if not compared or not updated:
        return None
    differs = " OR ".join(f"NOT (t.{quote_ident(c)} <=> s.{quote_ident(c)})" for c in compared)
    set_clause = ", ".join(f"t.{quote_ident(c)} = s.{quote_ident(c)}" for c in updated)
    on = _keys_on(keys, "t", "s") + (f" AND {key_range}" if key_range else "")
    statement = (
        f"MERGE INTO {table_sql} t USING (SELECT * FROM {view}) s ON {on} "
        f"WHEN MATCHED AND ({differs}) THEN UPDATE SET {set_clause}"
    )
    if insert_unmatched:
        col_list = ", ".join(quote_ident(c) for c in columns)
        values = ", ".join(f"s.{quote_ident(c)}" for c in columns)
        statement += f" WHEN NOT MATCHED THEN INSERT ({col_list}) VALUES ({values})"
    return statement


def insert_statement(
    table_sql: str,
    main_sql: str,
    view: str,
    columns: list[str],
    *,
    keys: tuple[str, ...],
    broadcast: bool = True,
    key_range: str | None = None,
) -> str:
    """Insert the batch rows whose key the target does not hold (``=`` never matches NULL keys, as in a
    ``MERGE``'s ON). The target's matching keys come from a semi-join with the batch keys.

    ``broadcast`` (a batch small enough to broadcast its keys): the semi-join broadcasts the batch keys and
    the anti-join the matching keys it found (at most the batch's), so neither the target nor the batch is
    shuffled. Without the second hint Spark sizes that semi-join like the whole target and shuffles both
    sides of a sort-merge anti-join (10M-row target, 100k batch: 1.3-1.9 s -> 0.7 s).
    ``key_range``: a predicate over ``x`` that every target row holding a batch key satisfies."""
    key_list = ", ".join(quote_ident(k) for k in keys)
    keys_hint, existing_hint = ("/*+ BROADCAST */ ", "/*+ BROADCAST(e) */ ") if broadcast else ("", "")
    existing = (
        f"SELECT {', '.join(f'x.{quote_ident(k)}' for k in keys)} FROM {main_sql} x "
        f"LEFT SEMI JOIN (SELECT {keys_hint}{key_list} FROM {view}) k ON {_keys_on(keys, 'x', 'k')}"
        + (f" WHERE {key_range}" if key_range else "")
    )
    col_list = ", ".join(quote_ident(c) for c in columns)
    values = ", ".join(f"s.{quote_ident(c)}" for c in columns)
    return (
        f"INSERT INTO {table_sql} ({col_list}) SELECT {existing_hint}{values} FROM {view} s "
        f"LEFT ANTI JOIN ({existing}) e ON {_keys_on(keys, 's', 'e')}"
    )


def single_scan_merge(
    table: IcebergTable,
    aligned: DataFrame,
    columns: list[str],
    stamp: CommitStamp,
    spec: WriteSpec,
    *,
    batch_columns: set[str],
    batch_keys: BatchKeys,
) -> SingleScanResult:
    """Update and insert on a run-private branch, then publish with one fast-forward of ``main``: one
    ``MERGE`` when the target's rows in the batch's key range are estimated small, else two statements
    (see the module docstring). Every target scan is restricted to the batch's key range, and a batch small
    enough to broadcast gets its keys broadcast (see :func:`insert_statement`)."""
    broadcast = batch_keys.rows <= spec.broadcast_keys_max_rows
    one_statement = small_key_range(table, batch_keys, spec)
    view = f"_ll_batch_{uuid.uuid4().hex[:12]}"
    aligned.select(*[aligned[quote_ident(c)] for c in columns]).createOrReplaceTempView(view)

    def statements(branch_sql: str) -> list[str | None]:
        update = update_statement(
            branch_sql,
            view,
            columns,
            keys=spec.primary_key,
            batch_columns=batch_columns,
            spec=spec,
            key_range=batch_keys.predicate("t"),
            insert_unmatched=one_statement,
        )
        if one_statement and update is not None:
            return [update]
        return [
            update,
            insert_statement(
                branch_sql,
                table.sql_name,
                view,
                columns,
                keys=spec.primary_key,
                broadcast=broadcast,
                key_range=batch_keys.predicate("x"),
            ),
        ]

    try:
        snapshots = commit_on_branch(table, stamp, statements)  # newest first; empty: nothing changed
    finally:
        table.spark.catalog.dropTempView(view)
    added = sum(int(summary.get("added-records", 0)) for _, summary in snapshots)
    updated = rows_deleted(snapshots)
    return SingleScanResult(
        snapshot=snapshots[0][0] if snapshots else None, inserted=added - updated, updated=updated
    )
