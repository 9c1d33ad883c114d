"""Several commits that land on ``main`` as one: a run-private Iceberg branch published by a fast-forward.

A row-level change that needs more than one statement (update matched rows, then insert new ones) is
committed to the branch ``lakelogic_<run id>`` and then published with one ``system.fast_forward`` of
``main``. Readers and the exactly-once check (which only counts snapshots in main's ancestry) see all of
the statements or none:

* a crash before the fast-forward leaves ``main`` untouched; the re-run drops the stale branch first;
* a concurrent commit to ``main`` after the write first read the table (the branch starts at that
  snapshot, ``IcebergTable.read_snapshot``) makes the fast-forward fail (main is no longer an ancestor of
  the branch): nothing is changed and the write fails with ``CommitConflictError`` (tables.conflicts),
  which the driver retries;
* a branch whose commits changed nothing is dropped, not published (no empty snapshot in main's history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lakelogic.plan.sqlutil import sql_string
from lakelogic.tables.stamp import PREFIX, CommitStamp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakelogic.tables.spark_iceberg import IcebergTable


Commits = list[tuple[str, dict[str, str]]]
"""(snapshot id, summary) of Iceberg commits, newest first."""


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def branch_name(stamp: CommitStamp) -> str:
    """The run-private branch: derived from the run id, so a re-run finds what a crashed try left."""
    return f"lakelogic_{''.join(ch for ch in stamp.run_id if ch.isalnum())[:32]}"


def publish(table: IcebergTable, branch: str) -> None:
    """Move ``main`` to the head of ``branch`` (one metadata commit; fails if ``main`` moved meanwhile)."""
    catalog, _, identifier = table.name.partition(".")
    table.spark.sql(
        f"CALL {_quote(catalog)}.system.fast_forward(table => {sql_string(identifier)}, "
        f"branch => 'main', to => {sql_string(branch)})"
    )


_CHANGE_KEYS = (
    "added-records",
    "deleted-records",
    "added-data-files",
    "deleted-data-files",
    "added-delete-files",
    "added-position-deletes",
    "added-equality-deletes",
)


def branch_commits(table: IcebergTable, stamp: CommitStamp, branch: str) -> Commits:
    """(snapshot id, summary) of this write's commits on ``branch``, newest first: the branch's lineage from
    its head down to its base (the snapshot the write read), stamped by ``stamp``. A snapshot of an
    earlier try on a dropped branch (a crash, or a fast path that gave up) carries the same run id but is
    not in that lineage; the run's other writes to the table (another role) are before the base or
    stamped otherwise."""
    head = table.spark.sql(
        f"SELECT snapshot_id FROM {table.sql_name}.refs WHERE name = {sql_string(branch)}"
    ).collect()
    if not head:
        return []
    rows = table.spark.sql(
        f"SELECT snapshot_id, parent_id, summary FROM {table.sql_name}.snapshots "
        f"WHERE summary['{PREFIX}run_id'] = {sql_string(stamp.run_id)}"
    ).collect()
    by_id = {int(r["snapshot_id"]): r for r in rows}
    commits: Commits = []
    snapshot: int | None = int(head[0]["snapshot_id"])
    while snapshot is not None and snapshot in by_id and snapshot != table.read_snapshot:
        row = by_id.pop(snapshot)
        summary = dict(row["summary"] or {})
        if stamp.matches(summary):
            commits.append((str(snapshot), summary))
        snapshot = int(row["parent_id"]) if row["parent_id"] is not None else None
    return commits


def changes_rows(commits: Commits) -> bool:
    """True when any of the commits changed a row: added or removed records, data files or delete files
    (a copy-on-write delete of a whole file adds no record, a merge-on-read one adds a delete file)."""
    return any(int(summary.get(key, 0) or 0) > 0 for _, summary in commits for key in _CHANGE_KEYS)


def commit_on_branch(
    table: IcebergTable,
    stamp: CommitStamp,
    statements: Callable[[str], Sequence[str | None]],
    *,
    before_publish: Callable[[], None] | None = None,
    results: list[DataFrame] | None = None,
) -> Commits:
    """Run ``statements(branch_table_sql)`` (None entries skipped) on the run's branch, each stamped, then
    publish them together. Returns the published commits as (snapshot id, summary), newest first: the
    head is main's new snapshot. Empty when nothing changed and nothing was published.

    ``results`` receives each executed statement. ``before_publish`` runs after the statements: the
    place to check them (raising drops the branch unpublished) and to release cached frames that read the
    table. Publishing refreshes the table in Spark's cache manager, which plans every cached query over
    the table again (0.5-0.8 s for an SCD2 change set), although nothing reads those caches any more."""
    spark = table.spark
    branch = branch_name(stamp)
    spark.sql(f"ALTER TABLE {table.sql_name} DROP BRANCH IF EXISTS {_quote(branch)}")  # a crashed try
    # from the snapshot the write read, not main's head: a commit by another writer since then makes the
    # fast-forward fail (main is no ancestor of the branch), as one during the statements does
    base = f" AS OF VERSION {table.read_snapshot}" if table.read_snapshot is not None else ""
    spark.sql(f"ALTER TABLE {table.sql_name} CREATE BRANCH {_quote(branch)}{base}")
    try:
        for statement in statements(f"{table.sql_name}.{_quote('branch_' + branch)}"):
            if statement is not None:
                executed = table.commit_sql(statement, stamp)
                if results is not None:
                    results.append(executed)
        if before_publish is not None:
            before_publish()
        commits = branch_commits(table, stamp, branch)
        if not changes_rows(commits):
            return []
        publish(table, branch)
        return commits
    finally:
        spark.sql(f"ALTER TABLE {table.sql_name} DROP BRANCH IF EXISTS {_quote(branch)}")
