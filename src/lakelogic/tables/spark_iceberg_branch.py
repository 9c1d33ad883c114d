"""Several commits that land on ``main`` as one: a run-private Iceberg branch published by a fast-forward.

A row-level change that needs more than one statement (update matched rows, then insert new ones), or
one whose result is checked before it may land (SCD2's one ``MERGE``), is committed to the branch
``lakelogic_<run id>`` and then published by fast-forwarding ``main`` to it, in one metadata commit that
also drops the branch. Refs and snapshots are read and moved through the Iceberg Java API
(:mod:`iceberg_java`): no Spark job per metadata read. Readers and the exactly-once check (which only
counts snapshots in main's ancestry) see all of the statements or none:

* a crash before the fast-forward leaves ``main`` untouched; the re-run replaces the stale branch;
* a concurrent commit to ``main`` after the write first read the table (the branch starts at that
  snapshot, ``IcebergTable.read_snapshot``) makes the fast-forward fail (main is no longer an ancestor of
  the branch): nothing is changed and the write fails with ``CommitConflictError`` (tables.conflicts),
  which the driver retries;
* a branch whose commits changed nothing is dropped, not published (no empty snapshot in main's history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lakelogic.tables.iceberg_java import JavaIcebergTable
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


def publish(refs: JavaIcebergTable, branch: str) -> None:
    """Move ``main`` to the head of ``branch`` and drop the branch (one metadata commit; fails if ``main``
    moved meanwhile)."""
    refs.fast_forward_main(branch)


_CHANGE_KEYS = (
    "added-records",
    "deleted-records",
    "added-data-files",
    "deleted-data-files",
    "added-delete-files",
    "added-position-deletes",
    "added-equality-deletes",
)


def branch_commits(refs: JavaIcebergTable, stamp: CommitStamp, branch: str, base: int | None) -> Commits:
    """(snapshot id, summary) of this write's commits on ``branch``, newest first: the branch's lineage from
    its head down to ``base`` (the snapshot the write read), stamped by ``stamp``. A snapshot of an
    earlier try on a dropped branch (a crash, or a fast path that gave up) carries the same run id but is
    not in that lineage; the run's other writes to the table (another role) are before the base or
    stamped otherwise."""
    commits: Commits = []
    snapshot = refs.head(branch)
    while snapshot is not None and snapshot != base:
        found = refs.snapshot(snapshot)
        if found is None:
            break
        parent, summary = found
        if summary.get(f"{PREFIX}run_id") != stamp.run_id:
            break
        if stamp.matches(summary):
            commits.append((str(snapshot), summary))
        snapshot = parent
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
    branch = branch_name(stamp)
    refs = JavaIcebergTable(table.spark, table.sql_name)
    # from the snapshot the write read, not main's head: a commit by another writer since then makes the
    # fast-forward fail (main is no ancestor of the branch), as one during the statements does; a branch
    # of a crashed try is replaced
    refs.create_branch(branch, table.read_snapshot)
    try:
        for statement in statements(f"{table.sql_name}.{_quote('branch_' + branch)}"):
            if statement is not None:
                executed = table.commit_sql(statement, stamp)
                if results is not None:
                    results.append(executed)
        if before_publish is not None:
            before_publish()
        refs.refresh()  # the statements committed through Spark's instance of the table
        commits = branch_commits(refs, stamp, branch, table.read_snapshot)
        if not changes_rows(commits):
            return []
        publish(refs, branch)
        return commits
    finally:
        refs.drop_branch(branch)
