"""Refs and snapshots through the Iceberg Java table (tables.iceberg_java), checked against what Spark SQL's
metadata tables say about the same table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lakelogic.errors import CommitError
from lakelogic.tables.iceberg_java import MAIN, JavaIcebergTable
from lakelogic.tables.spark_iceberg import quote_table
from lakelogic.tables.target import ResolvedTarget

pytestmark = pytest.mark.spark

Make = Callable[..., ResolvedTarget]


def _table(spark: Any, make_target: Make) -> str:
    name = quote_table(make_target("iceberg").name)
    spark.sql(f"CREATE TABLE {name} (id int, name string) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    return name


def _refs(spark: Any, name: str) -> dict[str, int]:
    return {r["name"]: int(r["snapshot_id"]) for r in spark.sql(f"SELECT * FROM {name}.refs").collect()}


def test_heads_parents_and_summaries_match_the_metadata_tables(spark: Any, make_target: Make) -> None:
    name = _table(spark, make_target)
    java = JavaIcebergTable(spark, name)
    assert java.head(MAIN) == _refs(spark, name)["main"]
    assert java.head("no_such_branch") is None
    for row in spark.sql(f"SELECT snapshot_id, parent_id, summary FROM {name}.snapshots").collect():
        found = java.snapshot(int(row["snapshot_id"]))
        assert found is not None
        parent, summary = found
        assert parent == (int(row["parent_id"]) if row["parent_id"] is not None else None)
        assert summary == dict(row["summary"])
    assert java.snapshot(42) is None


def test_a_branch_is_created_replaced_published_and_dropped(spark: Any, make_target: Make) -> None:
    name = _table(spark, make_target)
    java = JavaIcebergTable(spark, name)
    first = min(int(r["snapshot_id"]) for r in spark.sql(f"SELECT * FROM {name}.snapshots").collect())
    java.create_branch("b", first)
    assert _refs(spark, name)["b"] == first
    main = java.head(MAIN)
    java.create_branch("b", main)  # a crashed try's branch of the same name is replaced
    assert _refs(spark, name)["b"] == main
    spark.sql(f"INSERT INTO {name}.branch_b VALUES (4, 'd')")
    assert spark.table(name).count() == 3  # the branch's commit is not on main
    java.refresh()
    java.fast_forward_main("b")
    assert sorted(_refs(spark, name)) == ["main"]  # published and dropped in one commit
    assert spark.table(name).count() == 4
    java.drop_branch("b")  # nothing left to drop: no error, no commit
    assert sorted(_refs(spark, name)) == ["main"]


def test_a_fast_forward_after_main_moved_is_refused(spark: Any, make_target: Make) -> None:
    name = _table(spark, make_target)
    java = JavaIcebergTable(spark, name)
    java.create_branch("b", java.head(MAIN))
    spark.sql(f"INSERT INTO {name}.branch_b VALUES (4, 'd')")
    spark.sql(f"INSERT INTO {name} VALUES (9, 'other writer')")
    java.refresh()
    with pytest.raises(Exception, match="Cannot fast-forward"):
        java.fast_forward_main("b")
    assert sorted(r["id"] for r in spark.table(name).collect()) == [1, 2, 3, 9]


def test_a_missing_table_is_a_commit_error_naming_it(spark: Any) -> None:
    with pytest.raises(CommitError, match=r"lakelogic\.tests\.nowhere"):
        JavaIcebergTable(spark, "lakelogic.tests.nowhere")
