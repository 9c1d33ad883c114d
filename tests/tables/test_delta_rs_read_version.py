"""delta-rs keyed writes commit on the version they read (SEMANTICS §13.2/§13.3 under concurrency).

A merge computes its change set from the stored rows it read. Committed on top of another writer's later
commit, it would be applied to rows it never saw: two writers inserting the same new key would both
succeed and leave two rows for it. The commit is therefore made on the version read and is not rebased;
another writer's commit in between is a retryable CommitConflictError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from lakelogic.errors import CommitConflictError
from lakelogic.tables.spark_delta_rs import DeltaRsTable
from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import read_back

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]
SCHEMA = "id int, name string"
MERGE = WriteSpec(strategy="merge", primary_key=("id",))


def _rows(spark: Any, target: ResolvedTarget) -> list[tuple[Any, Any]]:
    return sorted((r["id"], r["name"]) for r in read_back(spark, target))


def _other_writer_commits_first(target: ResolvedTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer appends key 2 just before this write's commit."""
    from deltalake import write_deltalake

    original = DeltaRsTable.commit

    def other_writer_first(self: DeltaRsTable, **kwargs: Any) -> Any:
        other = pa.table({"id": pa.array([2], pa.int32()), "name": pa.array(["theirs"], pa.string())})
        write_deltalake(target.name, other, mode="append")
        return original(self, **kwargs)

    monkeypatch.setattr(DeltaRsTable, "commit", other_writer_first)


def test_another_writers_commit_between_read_and_commit_is_a_conflict_not_a_second_row(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = make_target("delta")
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, MERGE, CommitStamp("seed", "o"))
    _other_writer_commits_first(target, monkeypatch)
    batch = spark.createDataFrame([(1, "b"), (2, "mine")], SCHEMA)
    with pytest.raises(CommitConflictError, match="another writer committed"):
        write_frame(spark, batch, target, MERGE, CommitStamp("run-1", "o"))
    monkeypatch.undo()
    assert _rows(spark, target) == [(1, "a"), (2, "theirs")], "nothing of the refused run is visible"

    retried = write_frame(spark, batch, target, MERGE, CommitStamp("run-1", "o"))
    assert (retried.rows_updated, retried.rows_inserted) == (2, 0), "the retry sees the other writer's row"
    assert _rows(spark, target) == [(1, "b"), (2, "mine")]


def test_a_merge_that_evolves_the_schema_after_reading_commits_both(spark: Any, make_target: Make) -> None:
    """The unknown-member check reads the table before the schema change: the column-adding commit and
    the data commit are this write's own consecutive versions, not a conflict."""
    from deltalake import DeltaTable

    target = make_target("delta")
    member = {"enabled": True, "default_values": {"id": -1, "name": "Unknown"}}
    spec = WriteSpec(strategy="merge", primary_key=("id",), unknown_member=member, evolution="append")
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, spec, CommitStamp("s", "o"))
    before = DeltaTable(target.name).version()
    wider = spark.createDataFrame([(1, "b", "x")], "id int, name string, extra string")
    out = write_frame(spark, wider, target, spec, CommitStamp("r", "o"))
    assert out.committed and out.snapshot == str(before + 2)
    rows = sorted((r["id"], r["name"], r["extra"]) for r in read_back(spark, target))
    assert rows == [(-1, "Unknown", None), (1, "b", "x")]


def test_appends_are_still_rebased_over_concurrent_appends(
    spark: Any, make_target: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append reads nothing, so another writer's commit does not invalidate it."""
    target = make_target("delta")
    append = WriteSpec(strategy="append")
    write_frame(spark, spark.createDataFrame([(1, "a")], SCHEMA), target, append, CommitStamp("s", "o"))
    _other_writer_commits_first(target, monkeypatch)
    write_frame(spark, spark.createDataFrame([(3, "c")], SCHEMA), target, append, CommitStamp("a", "o"))
    assert _rows(spark, target) == [(1, "a"), (2, "theirs"), (3, "c")]
