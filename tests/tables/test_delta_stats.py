"""Delta file statistics written from the Parquet footers (tables/delta_stats.py): exactly the values in
each file, only for the types whose bounds are exact, and readers that skip files by them lose no row."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from lakelogic.tables.spark_write import write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

pytestmark = pytest.mark.spark

deltalake = pytest.importorskip("deltalake")

NAMES = ["Zoë", "zebra", "Éclair", "apple", None, "Zulu", "ärger", "Apfel", "zz", None]


def _written(spark: Any, make_target: Callable[..., ResolvedTarget]) -> ResolvedTarget:
    rows = [
        (i if i % 7 else None, NAMES[i % len(NAMES)], f"2024-0{1 + i % 9}-1{i % 10}", i * 1.5, f"{i}.25")
        for i in range(60)
    ]
    frame = spark.createDataFrame(rows, "id int, name string, d string, f double, amount string").selectExpr(
        "id",
        "name",
        "CAST(d AS DATE) AS d",
        "f",
        "CAST(amount AS DECIMAL(10,2)) AS amount",
        "timestamp_seconds(1700000000 + coalesce(id, 0)) AS ts",
    )
    target = make_target("delta")
    write_frame(spark, frame.repartition(3), target, WriteSpec(strategy="append"), CommitStamp("r1", "o"))
    return target


def _utf8_order(values: list[Any]) -> list[Any]:
    return sorted(values, key=lambda v: v.encode("utf-8") if isinstance(v, str) else v)


def test_stats_state_each_file_exactly(spark: Any, make_target: Callable[..., ResolvedTarget]) -> None:
    target = _written(spark, make_target)
    import pyarrow as pa

    actions = pa.table(deltalake.DeltaTable(target.name).get_add_actions(flatten=True)).to_pylist()
    assert len(actions) == 3
    for action in actions:
        data = pq.read_table(Path(target.name) / action["path"]).to_pylist()
        assert action["num_records"] == len(data)
        for column in ("id", "name", "d"):
            present = _utf8_order([r[column] for r in data if r[column] is not None])
            assert (action[f"min.{column}"], action[f"max.{column}"]) == (present[0], present[-1]), column
        for column in ("id", "name", "d", "f", "amount", "ts"):
            assert action[f"null_count.{column}"] == sum(r[column] is None for r in data), column
        # no bounds where the footer's are not exact in Delta's stats (or not ordered like Spark's)
        assert all(
            action.get(f"{side}.{c}") is None for side in ("min", "max") for c in ("f", "amount", "ts")
        )


def test_readers_that_skip_files_by_the_stats_lose_no_row(
    spark: Any, make_target: Callable[..., ResolvedTarget]
) -> None:
    target = _written(spark, make_target)
    table = deltalake.DeltaTable(target.name)
    everything = table.to_pyarrow_table().to_pylist()
    cases: list[tuple[str, str, Any]] = [
        ("id", ">=", 40),
        ("d", ">=", date(2024, 6, 1)),
        ("name", "=", "Éclair"),
        ("name", "<", "Zoë"),
    ]
    for column, op, value in cases:
        got = table.to_pyarrow_table(filters=[(column, op, value)]).to_pylist()
        if op == ">=":
            expected = [r for r in everything if r[column] is not None and r[column] >= value]
        elif op == "=":
            expected = [r for r in everything if r[column] == value]
        else:
            expected = [
                r
                for r in everything
                if r[column] is not None and str(r[column]).encode() < str(value).encode()
            ]
        assert sorted(map(str, got)) == sorted(map(str, expected)), (column, op, value)
        assert expected


def test_string_bounds_that_are_not_utf8_are_left_out(tmp_path: Path) -> None:
    """Spark strings may hold invalid UTF-8 (a cast from binary); pyarrow cannot decode such a footer bound.
    The column then gets no bounds and the commit goes on."""
    import pyarrow as pa

    from lakelogic.tables.delta_stats import file_stats

    text = pa.array([b"\xc3\x28", b"ok"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"s": text, "i": [1, 2]}), tmp_path / "f.parquet")
    stats = file_stats(pq.read_metadata(tmp_path / "f.parquet"))
    assert stats == {
        "numRecords": 2,
        "minValues": {"i": 1},
        "maxValues": {"i": 2},
        "nullCount": {"s": 0, "i": 0},
    }
