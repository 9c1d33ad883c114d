"""Row-level writes on Iceberg through a run-private branch published by one fast-forward: the merge fast
path (update + insert as two statements or, when the target's rows in the key range are estimated small,
one MERGE with a NOT MATCHED clause; tests that matter for both shapes run with both, ``STATEMENTS``) and
change sets (SCD2, general merge: matched-only MERGE + INSERT)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from lakelogic.errors import CommitError
from lakelogic.tables import spark_iceberg_branch
from lakelogic.tables.spark_iceberg import quote_table
from lakelogic.tables.spark_write import adapter_for, write_frame
from lakelogic.tables.spec import Scd2Spec, WriteSpec, scd2_spec_from
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, name string"
SPEC = WriteSpec(strategy="merge", primary_key=("id",))
# one_statement_merge_max_bytes: 0 forces update + insert as two statements; the default takes one MERGE
# for the tiny tables here
STATEMENTS = pytest.mark.parametrize("one_statement_limit", [0, SPEC.one_statement_merge_max_bytes])


def _limited(spec: WriteSpec, one_statement_limit: int) -> WriteSpec:
    return replace(spec, one_statement_merge_max_bytes=one_statement_limit)


def _seeded(spark: Any, make_target: Make) -> ResolvedTarget:
    target = make_target("iceberg")
    seed = spark.createDataFrame([(1, "a"), (2, "b"), (None, "n")], SCHEMA)
    write_frame(spark, seed, target, SPEC, CommitStamp("seed", "o"))
    return target


def _branches(spark: Any, target: ResolvedTarget) -> list[str]:
    return sorted(r["name"] for r in spark.sql(f"SELECT name FROM {quote_table(target.name)}.refs").collect())


@STATEMENTS
def test_updates_and_inserts_land_together_with_exact_counts(
    spark: Any, make_target: Make, one_statement_limit: int
) -> None:
    target = _seeded(spark, make_target)
    batch = spark.createDataFrame([(1, "a"), (2, "B"), (3, "c"), (None, "m")], SCHEMA)
    spec = _limited(SPEC, one_statement_limit)
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    # id 1 unchanged, id 2 updated, id 3 new; a NULL key never matches, so it is inserted (as MERGE's ON)
    assert (out.rows_updated, out.rows_inserted) == (1, 2)
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "a"), (2, "B"), (3, "c"), (None, "n"), (None, "m")], key=str)
    assert _branches(spark, target) == ["main"]
    assert out.snapshot == adapter_for(spark, target).snapshot_of(CommitStamp("run-1", "o"))


@STATEMENTS
def test_counts_stay_exact_when_the_updated_file_already_has_deletes(
    spark: Any, make_target: Make, one_statement_limit: int
) -> None:
    """A second merge into a data file that already has position deletes replaces its delete file with
    one carrying the earlier positions too (file-scoped deletes): the summary's added position deletes
    then include the first merge's. Counted as added minus removed, each merge reports its own rows."""
    target = _seeded(spark, make_target)
    spec = _limited(SPEC, one_statement_limit)
    first = spark.createDataFrame([(1, "A"), (2, "B")], SCHEMA)
    out = write_frame(spark, first, target, spec, CommitStamp("run-1", "o"))
    assert (out.rows_updated, out.rows_inserted) == (2, 0)
    second = spark.createDataFrame([(1, "A2"), (5, "e")], SCHEMA)
    out = write_frame(spark, second, target, spec, CommitStamp("run-2", "o"))
    assert (out.rows_updated, out.rows_inserted) == (1, 1)
    run_2 = adapter_for(spark, target).stamped_snapshots(CommitStamp("run-2", "o"))
    third = spark.createDataFrame([(2, "B3"), (6, "f")], SCHEMA)  # id 2's file had a delete file
    out = write_frame(spark, third, target, spec, CommitStamp("run-3", "o"))
    assert (out.rows_updated, out.rows_inserted) == (1, 1)
    assert sum(int(summary["added-records"]) for _, summary in run_2) == 2
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "A2"), (2, "B3"), (5, "e"), (6, "f"), (None, "n")], key=str)


@STATEMENTS
def test_crash_before_publish_changes_nothing_and_the_rerun_commits(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_statement_limit: int
) -> None:
    target = _seeded(spark, make_target)
    batch = spark.createDataFrame([(2, "B"), (3, "c")], SCHEMA)
    spec = _limited(SPEC, one_statement_limit)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected crash after both branch commits")

    monkeypatch.setattr(spark_iceberg_branch, "publish", boom)
    with pytest.raises(CommitError, match="injected crash"):
        write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    # the branch commits carry the run's stamp, but they are not main's history: not committed
    assert not adapter_for(spark, target).already_committed(CommitStamp("run-1", "o"))
    assert sorted(r["id"] or 0 for r in read_back(spark, target)) == [0, 1, 2]
    assert _branches(spark, target) == ["main"]
    monkeypatch.undo()
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    assert out.committed and (out.rows_updated, out.rows_inserted) == (1, 1)


def test_a_branch_left_by_a_killed_try_is_dropped(spark: Any, make_target: Make) -> None:
    target = _seeded(spark, make_target)
    stamp = CommitStamp("run-9", "o")
    stale = spark_iceberg_branch.branch_name(stamp)
    spark.sql(f"ALTER TABLE {quote_table(target.name)} CREATE BRANCH {stale}")
    out = write_frame(spark, spark.createDataFrame([(4, "d")], SCHEMA), target, SPEC, stamp)
    assert out.committed and out.rows_inserted == 1
    assert _branches(spark, target) == ["main"]


def test_an_identical_batch_publishes_nothing(spark: Any, make_target: Make) -> None:
    target = _seeded(spark, make_target)
    history = f"SELECT count(*) FROM {quote_table(target.name)}.history"
    before = spark.sql(history).first()[0]
    out = write_frame(
        spark, spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA), target, SPEC, CommitStamp("r", "o")
    )
    assert (out.rows_inserted, out.rows_updated, out.snapshot) == (0, 0, None)  # as the general path
    assert spark.sql(history).first()[0] == before  # no empty snapshot in main's history
    assert _branches(spark, target) == ["main"]


SCD2_SCHEMA = "id int, tier string, updated_at string"
SCD2_SPEC = WriteSpec(
    strategy="scd2",
    scd2=scd2_spec_from({"timestamp_field": "updated_at", "track_columns": ["tier"]}, keys=("id",)),
)


# the seeded table after key 1 changes tier and key 3 arrives on 2024-02-01
SCD2_AFTER_RUN_1 = [
    ("1", "free", "False", "2024-02-01"),
    ("1", "pro", "True", "9999-12-31"),
    ("2", "pro", "True", "9999-12-31"),
    ("3", "free", "True", "9999-12-31"),
]


def _scd2_seeded(spark: Any, make_target: Make) -> ResolvedTarget:
    target = make_target("iceberg")
    seed = spark.createDataFrame([(1, "free", "2024-01-01"), (2, "pro", "2024-01-01")], SCD2_SCHEMA)
    write_frame(spark, seed, target, SCD2_SPEC, CommitStamp("seed", "dim"))
    return target


def _scd2_rows(spark: Any, target: ResolvedTarget) -> list[tuple[Any, ...]]:
    cols = ("id", "tier", "is_current", "effective_to")
    return sorted(tuple(str(r[c])[:10] for c in cols) for r in read_back(spark, target))


@pytest.mark.parametrize("one_merge", [True, False])
def test_scd2_change_set_lands_as_one_publish_of_a_closing_update_and_an_insert(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_merge: bool
) -> None:
    """A forward batch lands as one MERGE (spark_scd2_merge); the change-set path, as a matched-only MERGE
    (close) and an INSERT (new versions). Either way one publish, both reachable from main."""
    from lakelogic.tables import spark_scd2

    if not one_merge:
        monkeypatch.setattr(spark_scd2, "one_merge_applies", lambda *a, **k: False)
    target = _scd2_seeded(spark, make_target)
    batch = spark.createDataFrame([(1, "pro", "2024-02-01"), (3, "free", "2024-02-01")], SCD2_SCHEMA)
    stamp = CommitStamp("run-1", "dim")
    out = write_frame(spark, batch, target, SCD2_SPEC, stamp)
    assert (out.rows_inserted, out.rows_updated, out.versions_closed) == (2, 1, 1)
    assert _scd2_rows(spark, target) == SCD2_AFTER_RUN_1
    snapshots = adapter_for(spark, target).stamped_snapshots(stamp)
    assert len(snapshots) == (1 if one_merge else 2) and out.snapshot == snapshots[0][0]
    assert _branches(spark, target) == ["main"]


def test_scd2_crash_before_publish_changes_nothing_and_the_rerun_commits(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _scd2_seeded(spark, make_target)
    before = _scd2_rows(spark, target)
    batch = spark.createDataFrame([(2, "free", "2024-03-01"), (4, "pro", "2024-03-01")], SCD2_SCHEMA)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected crash after the branch commits")

    monkeypatch.setattr(spark_iceberg_branch, "publish", boom)
    with pytest.raises(CommitError, match="injected crash"):
        write_frame(spark, batch, target, SCD2_SPEC, CommitStamp("run-2", "dim"))
    assert _scd2_rows(spark, target) == before
    assert not adapter_for(spark, target).already_committed(CommitStamp("run-2", "dim"))
    assert _branches(spark, target) == ["main"]
    monkeypatch.undo()
    out = write_frame(spark, batch, target, SCD2_SPEC, CommitStamp("run-2", "dim"))
    assert (out.rows_inserted, out.versions_closed) == (2, 1)
    again = write_frame(spark, batch, target, SCD2_SPEC, CommitStamp("run-3", "dim"))
    assert (again.rows_inserted, again.rows_updated, again.snapshot) == (0, 0, None)


class _Refs:
    """The refs of a table whose branch head is snapshot 2 (parent 1, the branch's base); ``orphans`` are
    snapshots of the same run on a dropped branch (parent 1 as well)."""

    def __init__(self, summary: dict[str, str], orphans: list[dict[str, str]] | None = None) -> None:
        run = {"lakelogic.run_id": "r"}
        self.snapshots: dict[int, tuple[int | None, dict[str, str]]] = {
            1: (None, {"added-records": "7"}),
            2: (1, summary | run),
        }
        self.snapshots |= {10 + i: (1, o | run) for i, o in enumerate(orphans or [])}

    def head(self, ref: str) -> int | None:
        return 2 if ref == "b" else None

    def snapshot(self, snapshot_id: int) -> tuple[int | None, dict[str, str]] | None:
        return self.snapshots.get(snapshot_id)


@pytest.mark.parametrize(
    ("summary", "changed"),
    [
        ({"added-records": "0", "added-data-files": "0"}, False),  # an empty MERGE commit
        ({"added-records": "3"}, True),
        ({"added-position-deletes": "1", "added-delete-files": "1"}, True),  # merge-on-read delete
        ({"deleted-records": "2", "deleted-data-files": "1", "added-records": "0"}, True),  # copy-on-write
    ],
)
def test_a_branch_is_published_for_any_row_change(summary: dict[str, str], changed: bool) -> None:
    refs: Any = _Refs(summary)
    commits = spark_iceberg_branch.branch_commits(refs, CommitStamp("r", "o"), "b", base=1)
    assert spark_iceberg_branch.changes_rows(commits) is changed


def test_an_earlier_try_of_the_run_on_a_dropped_branch_does_not_count_as_a_change() -> None:
    refs: Any = _Refs({"added-records": "0"}, orphans=[{"added-records": "5"}])
    commits = spark_iceberg_branch.branch_commits(refs, CommitStamp("r", "o"), "b", base=1)
    assert [c for c, _ in commits] == ["2"] and spark_iceberg_branch.changes_rows(commits) is False


def test_the_change_set_cache_is_released_before_the_publish(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish refreshes the table in Spark's cache manager, which plans every cached query over it
    again: the change set (and its updated-rows cache) must be gone by then, the rows still applied."""
    target = _seeded(spark, make_target)
    changes = spark.createDataFrame(
        [(2, "B", "update"), (3, "c", "insert")], "id int, name string, _ll_op string"
    ).persist()
    cached_at_publish: list[bool] = []
    original = spark_iceberg_branch.publish

    def publish(refs: Any, branch: str) -> None:
        cached_at_publish.append(changes.is_cached)
        original(refs, branch)

    monkeypatch.setattr(spark_iceberg_branch, "publish", publish)
    adapter_for(spark, target).apply_changes(
        changes, CommitStamp("run-1", "o"), SPEC, match=("id",), counts={"update": 1, "insert": 1}
    )
    assert cached_at_publish == [False]
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "a"), (2, "B"), (3, "c"), (None, "n")], key=str)


@STATEMENTS
def test_a_commit_to_main_during_the_run_is_a_retryable_conflict(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_statement_limit: int
) -> None:
    """Another writer commits to main between this run's branch statements and its publish: the
    fast-forward fails, main keeps only the other writer's rows, the error is a commit conflict (which the
    driver retries), and the retry commits on top of the other writer's snapshot."""
    from lakelogic.driver.execution import is_transient
    from lakelogic.errors import CommitConflictError

    target = _seeded(spark, make_target)
    batch = spark.createDataFrame([(2, "B"), (3, "c")], SCHEMA)
    original = spark_iceberg_branch.publish

    def concurrent_then_publish(refs: Any, branch: str) -> None:
        spark.sql(f"INSERT INTO {quote_table(target.name)} VALUES (9, 'other writer')")
        original(refs, branch)

    spec = _limited(SPEC, one_statement_limit)
    monkeypatch.setattr(spark_iceberg_branch, "publish", concurrent_then_publish)
    with pytest.raises(CommitConflictError) as raised:
        write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    assert is_transient(raised.value)
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "a"), (2, "b"), (None, "n"), (9, "other writer")], key=str)
    assert _branches(spark, target) == ["main"]
    monkeypatch.undo()
    out = write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    assert out.committed and (out.rows_updated, out.rows_inserted) == (1, 1)
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "a"), (2, "B"), (3, "c"), (None, "n"), (9, "other writer")], key=str)


def test_the_insert_of_a_small_batch_shuffles_neither_the_target_nor_the_batch(
    spark: Any, make_target: Make
) -> None:
    from lakelogic.tables.spark_iceberg_merge import insert_statement

    target = _seeded(spark, make_target)
    table = quote_table(target.name)
    spark.createDataFrame([(2, "B"), (3, "c")], SCHEMA).createOrReplaceTempView("insert_batch")
    small = insert_statement(table, table, "insert_batch", ["id", "name"], keys=("id",))
    # statistics would get these tiny tables broadcast anyway; only the hints may count here
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        plan = spark.sql(f"EXPLAIN {small}").first()[0]
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
    assert "SortMergeJoin" not in plan and "Exchange hashpartitioning" not in plan, plan
    assert plan.count("BroadcastHashJoin") == 2, plan
    large = insert_statement(table, table, "insert_batch", ["id", "name"], keys=("id",), broadcast=False)
    assert "BROADCAST" not in large


@pytest.mark.parametrize("broadcast_limit", [1, 2_000_000])
def test_the_merge_fast_path_is_the_same_with_and_without_broadcasts(
    spark: Any, make_target: Make, broadcast_limit: int
) -> None:
    from dataclasses import replace

    target = _seeded(spark, make_target)
    batch = spark.createDataFrame([(1, "a"), (2, "B"), (3, "c"), (4, "d")], SCHEMA)
    spec = replace(SPEC, broadcast_keys_max_rows=broadcast_limit)
    out = write_frame(spark, batch, target, spec, CommitStamp("run-b", "o"))
    assert (out.rows_updated, out.rows_inserted) == (1, 2)
    rows = sorted(((r["id"], r["name"]) for r in read_back(spark, target)), key=str)
    assert rows == sorted([(1, "a"), (2, "B"), (3, "c"), (4, "d"), (None, "n")], key=str)


def _recorded_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from lakelogic.tables.spark_iceberg import IcebergTable

    statements: list[str] = []
    original = IcebergTable.commit_sql

    def record(self: IcebergTable, statement: str, stamp: CommitStamp) -> Any:
        statements.append(statement)
        return original(self, statement, stamp)

    monkeypatch.setattr(IcebergTable, "commit_sql", record)
    return statements


@pytest.mark.parametrize("strategy", ["merge", "scd2"])
@STATEMENTS
def test_the_statement_shape_follows_the_estimated_size_of_the_key_range(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, strategy: str, one_statement_limit: int
) -> None:
    if strategy == "merge":
        target, spec = _seeded(spark, make_target), SPEC
        batch = spark.createDataFrame([(2, "B"), (3, "c")], SCHEMA)
    else:
        from lakelogic.tables import spark_scd2

        # the change-set path; a forward batch's one MERGE is tested below
        monkeypatch.setattr(spark_scd2, "one_merge_applies", lambda *a, **k: False)
        target, spec = _scd2_seeded(spark, make_target), SCD2_SPEC
        batch = spark.createDataFrame([(1, "pro", "2024-02-01"), (3, "free", "2024-02-01")], SCD2_SCHEMA)
    statements = _recorded_statements(monkeypatch)
    write_frame(spark, batch, target, _limited(spec, one_statement_limit), CommitStamp("run-s", "o"))
    shapes = [(s.split()[0], "WHEN NOT MATCHED" in s) for s in statements]
    # any table is larger than 0 bytes; a change set (SCD2) always runs as two statements, its inserts
    # need no target scan
    if one_statement_limit == 0 or strategy == "scd2":
        assert shapes == [("MERGE", False), ("INSERT", False)]
    else:
        assert shapes == [("MERGE", True)]


@STATEMENTS
def test_a_forward_scd2_batch_is_one_merge_when_the_key_range_is_small(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch, one_statement_limit: int
) -> None:
    """Over a large key range one MERGE would shuffle the range's current rows: the change-set path's
    matched-only MERGE and INSERT then, with the same result."""
    target = _scd2_seeded(spark, make_target)
    batch = spark.createDataFrame([(1, "pro", "2024-02-01"), (3, "free", "2024-02-01")], SCD2_SCHEMA)
    statements = _recorded_statements(monkeypatch)
    out = write_frame(
        spark, batch, target, _limited(SCD2_SPEC, one_statement_limit), CommitStamp("run-s", "o")
    )
    shapes = [(s.split()[0], "WHEN NOT MATCHED" in s) for s in statements]
    assert shapes == (
        [("MERGE", False), ("INSERT", False)] if one_statement_limit == 0 else [("MERGE", True)]
    )
    assert (out.rows_inserted, out.rows_updated, out.versions_closed) == (2, 1, 1)
    assert _scd2_rows(spark, target) == SCD2_AFTER_RUN_1


def test_the_scan_estimate_leaves_out_files_outside_the_range(spark: Any, make_target: Make) -> None:
    """The estimate is Iceberg's scan planning with the filter pushed down: files whose metrics exclude the
    range do not count, which is what makes a batch of recent keys into a large table 'small'."""
    target = make_target("iceberg")
    write_frame(
        spark, spark.range(0, 1000).selectExpr("id", "'x' AS name"), target, SPEC, CommitStamp("a", "o")
    )
    low_only = adapter_for(spark, target)
    first = low_only.estimated_scan_bytes(None)
    append = WriteSpec(strategy="append")
    high = spark.range(10_000, 10_100).selectExpr("id", "'y' AS name")
    write_frame(spark, high, target, append, CommitStamp("b", "o"))
    table = adapter_for(spark, target)
    whole = table.estimated_scan_bytes(None)
    recent = table.estimated_scan_bytes("id BETWEEN 10000 AND 10099")
    nothing = table.estimated_scan_bytes("id BETWEEN 50000 AND 60000")
    assert whole > first > recent > nothing
    # sized by rows: the 100 recent rows against the 1,100 in all
    assert recent * 11 == whole


HISTORY_SCHEMA = "id int, tier string, note string, updated_at string"


def test_one_statement_and_two_statements_merge_the_same_table(spark: Any, make_target: Make) -> None:
    """Changed, unchanged and new keys of a composite key, a row differing only in a column, and a NULL
    key part, merged both ways onto the same table."""
    history = [
        [(1, "free", "n1", "2024-01-01"), (2, "free", "n2", "2024-01-01"), (3, "pro", "n3", "2024-01-01")],
        [(2, "pro", "n2", "2024-03-01"), (4, "free", "n4", "2024-01-01")],
    ]
    batch = [
        (1, "pro", "n1", "2024-01-01"),  # changed tier
        (2, "basic", "n2", "2024-02-01"),  # a new key between two stored ones
        (3, "pro", "changed", "2024-01-01"),  # only the note changes
        (4, "free", "n4", "2024-01-01"),  # unchanged
        (5, "free", "n5", "2024-04-01"),  # new key
        (None, "free", "nul", "2024-04-01"),  # never matches
    ]
    spec = replace(SPEC, primary_key=("id", "updated_at"))
    tables = []
    for limit in (0, SPEC.one_statement_merge_max_bytes):
        target = make_target("iceberg")
        for i, rows in enumerate(history):
            seed = spark.createDataFrame(rows, HISTORY_SCHEMA)
            write_frame(spark, seed, target, spec, CommitStamp(f"seed-{i}", "o"))
        out = write_frame(
            spark,
            spark.createDataFrame(batch, HISTORY_SCHEMA),
            target,
            _limited(spec, limit),
            CommitStamp("r", "o"),
        )
        rows = sorted((tuple(sorted(r.items())) for r in read_back(spark, target)), key=repr)
        tables.append((rows, (out.rows_inserted, out.rows_updated)))
    assert tables[0] == tables[1]
    assert tables[0][1] == (3, 2)


def test_an_scd2_version_another_writer_closed_after_this_write_read_is_a_conflict_not_a_second_current(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change set is computed from the table as first read; another writer then closes key 1's
    current version and opens its own. Applying the stale change set on main's head would close nothing
    (its version is already closed) and add a second current version. The branch starts at the snapshot
    read, so the publish fails as a retryable conflict; the retry computes on the other writer's state."""
    from lakelogic.errors import CommitConflictError
    from lakelogic.tables import spark_iceberg, spark_scd2_merge

    target = make_target("iceberg")
    table = quote_table(target.name)
    spec = WriteSpec(strategy="scd2", primary_key=("id",), scd2=scd2_spec_from({}, keys=("id",)))
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, spec, CommitStamp("seed", "o"))
    original = spark_iceberg.commit_on_branch

    def other_writer_then_commit(*args: Any, **kwargs: Any) -> Any:
        changed = "TIMESTAMP '2000-01-01 00:00:00'"  # before this write's own change time (its as-of)
        spark.sql(f"INSERT INTO {table} SELECT 1, 'other', {changed}, effective_to, true FROM {table}")
        spark.sql(f"UPDATE {table} SET is_current = false, effective_to = {changed} WHERE name = 'a'")
        return original(*args, **kwargs)

    # the change-set path and the one-statement path (spark_scd2_merge) both commit on a branch
    monkeypatch.setattr(spark_iceberg, "commit_on_branch", other_writer_then_commit)
    monkeypatch.setattr(spark_scd2_merge, "commit_on_branch", other_writer_then_commit)
    batch = spark.createDataFrame([(1, "mine")], SCHEMA)
    with pytest.raises(CommitConflictError):
        write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    monkeypatch.undo()
    current = [(r["id"], r["name"]) for r in spark.sql(f"SELECT * FROM {table} WHERE is_current").collect()]
    assert current == [(1, "other")]
    assert _branches(spark, target) == ["main"]
    write_frame(spark, batch, target, spec, CommitStamp("run-1", "o"))
    current = [(r["id"], r["name"]) for r in spark.sql(f"SELECT * FROM {table} WHERE is_current").collect()]
    assert current == [(1, "mine")]


@STATEMENTS
def test_a_merge_into_a_table_without_snapshots_lands_on_main(
    spark: Any, make_target: Make, one_statement_limit: int
) -> None:
    """A table created by DDL alone (`lakelogic ddl --apply`) has no snapshot and no `main` yet: the run
    branch starts empty and its publish creates `main`."""
    target = make_target("iceberg")
    spark.sql(f"CREATE TABLE {quote_table(target.name)} (id int, name string) USING iceberg")
    batch = spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA)
    out = write_frame(spark, batch, target, _limited(SPEC, one_statement_limit), CommitStamp("run-1", "o"))
    assert out.committed and (out.rows_inserted, out.rows_updated) == (2, 0)
    assert sorted((r["id"], r["name"]) for r in read_back(spark, target)) == [(1, "a"), (2, "b")]
    assert _branches(spark, target) == ["main"]
    assert adapter_for(spark, target).already_committed(CommitStamp("run-1", "o"))


# several join tasks and no broadcast, so a MERGE's deletes for one data file come from several tasks
# unless the write clusters them by file
SPREAD_WRITES = {"spark.sql.shuffle.partitions": "4", "spark.sql.autoBroadcastJoinThreshold": "-1"}


@pytest.mark.parametrize("strategy", ["merge", "scd2"])
@pytest.mark.parametrize("where", ["table", "session"])
def test_counts_stay_exact_when_a_merge_does_not_cluster_its_deletes_by_file(
    spark: Any, make_target: Make, strategy: str, where: str
) -> None:
    """With distribution mode `none` several tasks each write a file-scoped delete file for the same data
    file, each carrying its earlier deletes, so the snapshot summary over-counts deleted positions: the fast
    paths reported 400 updated and -300 inserted rows for 100 updates here. Such tables take the change-set
    path, whose counts come from the change set."""
    target = make_target("iceberg")
    properties = {"write.merge.distribution-mode": "none"} if where == "table" else {}
    spec = WriteSpec(strategy="merge", primary_key=("id",), keys_unique=True, table_properties=properties)
    if strategy == "scd2":
        spec = replace(spec, strategy="scd2", scd2=Scd2Spec(business_key=("id",), track_columns=("v",)))
    settings = dict(SPREAD_WRITES)
    if where == "session":
        settings["spark.sql.iceberg.distribution-mode"] = "none"
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        seed = spark.range(1000).selectExpr("CAST(id AS INT) AS id", "CAST(id AS STRING) AS v").coalesce(1)
        write_frame(spark, seed, target, spec, CommitStamp("seed", "o"))
        outcomes = [
            write_frame(
                spark,
                spark.range(offset, 1000, 10).selectExpr("CAST(id AS INT) AS id", f"'{run}' AS v"),
                target,
                spec,
                CommitStamp(run, "o"),
            )
            for offset, run in ((0, "r1"), (5, "r2"))
        ]
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    for out in outcomes:
        if strategy == "merge":
            assert (out.rows_inserted, out.rows_updated) == (0, 100)
        else:  # each changed key closes its current version and opens a new one
            assert (out.versions_closed, out.rows_inserted) == (100, 100)
    rows = read_back(spark, target)
    changed = {r["id"]: r["v"] for r in rows if r["v"] in ("r1", "r2")}
    assert len(changed) == 200 and all(changed[i] == ("r1" if i % 10 == 0 else "r2") for i in changed)
