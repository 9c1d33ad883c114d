"""`watermark_strategy: max_target` starts strictly after the target's maximum (SEMANTICS §3.4).

The rows at the target's maximum watermark were written by the run that set it, so an inclusive lower
bound would read them again and an append would write them once more on every run. A `lookback` moves the
bound back and leaves it inclusive: the rows read again are absorbed by merge/SCD2.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lakelogic.sources.windows import ReadWindow, RowWindow, decide

T0 = datetime(2024, 1, 2, tzinfo=UTC)
T1 = datetime(2024, 1, 5, tzinfo=UTC)


def test_an_exclusive_start_reaches_the_row_window() -> None:
    exclusive = decide(
        ["a.csv"], ReadWindow("incremental", T0, T1, start_exclusive=True), load_mode="incremental",
        watermark_field="updated_at",
    )  # fmt: skip
    assert exclusive.row_window == RowWindow("updated_at", T0, T1, start_exclusive=True)
    inclusive = decide(["a.csv"], ReadWindow("incremental", T0, T1), load_mode="cdc", watermark_field="u")
    assert inclusive.row_window is not None and not inclusive.row_window.start_exclusive
    # an untouched window (the driver's, a caller's tuple) stays inclusive
    assert ReadWindow.of((T0, T1)) == ReadWindow("window", T0, T1)
    assert not ReadWindow.of({"start": T0, "end": T1, "label": "incremental"}).start_exclusive  # type: ignore[union-attr]


@pytest.mark.spark
def test_filter_rows_honours_an_exclusive_start(spark: Any) -> None:
    from lakelogic.sources.window_apply import filter_rows

    frame = spark.createDataFrame(
        [(1, "2024-01-01"), (2, "2024-01-02"), (3, "2024-01-03"), (4, "2024-01-05"), (5, None)],
        "id int, updated_at string",
    )

    def ids(rows: RowWindow) -> list[int]:
        return sorted(r["id"] for r in filter_rows(frame, rows).collect())

    assert ids(RowWindow("updated_at", T0, T1)) == [2, 3]
    assert ids(RowWindow("updated_at", T0, T1, start_exclusive=True)) == [3]
    assert ids(RowWindow("updated_at", None, T1, start_exclusive=True)) == [1, 2, 3, 5]


def _contract(landing: Path, target: Path, **source: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "s27 events", "table_name": "s27_events"},
        "source": {
            "type": "landing",
            "path": str(landing),
            "format": "csv",
            "load_mode": "incremental",
            "watermark_field": "updated_at",
            **source,
        },
        "model": {
            "fields": [
                {"name": "id", "type": "int"},
                {"name": "v", "type": "string"},
                {"name": "updated_at", "type": "timestamp"},
            ]
        },
        "materialization": {"strategy": "append", "target_path": str(target)},
    }


def _target_rows(target: Path) -> list[tuple[int, str]]:
    from deltalake import DeltaTable

    return sorted((r["id"], r["v"]) for r in DeltaTable(str(target)).to_pyarrow_table().to_pylist())


@pytest.mark.spark
def test_an_incremental_append_does_not_append_the_rows_at_the_maximum_again(
    spark: Any, tmp_path: Path
) -> None:
    """The audit's reproduction: run 2 over the same input wrote ids 2 and 3 (at the maximum) again."""
    from lakelogic.api import DataProcessor

    landing, target = tmp_path / "landing", tmp_path / "target"
    landing.mkdir()
    (landing / "a.csv").write_text(
        "id,v,updated_at\n1,a,2024-01-01T00:00:00\n2,b,2024-01-02T00:00:00\n3,c,2024-01-02T00:00:00\n"
    )
    processor = DataProcessor(_contract(landing, target), spark=spark)
    one = processor.run(materialize=True)
    assert one.report.status == "succeeded", one.report.error
    assert _target_rows(target) == [(1, "a"), (2, "b"), (3, "c")]

    two = processor.run(materialize=True)
    assert two.report.window.reason == "max_target" and two.report.window.start == T0
    assert two.report.status == "no_new_data", two.report.error
    assert two.report.counts.source == 0
    assert _target_rows(target) == [(1, "a"), (2, "b"), (3, "c")]

    # a later row is read; the rows at the old maximum are not
    (landing / "b.csv").write_text("id,v,updated_at\n4,d,2024-01-03T00:00:00\n5,e,2024-01-02T00:00:00\n")
    three = processor.run(materialize=True)
    assert three.report.status == "succeeded", three.report.error
    assert three.report.counts.source == 1
    assert _target_rows(target) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


@pytest.mark.spark
def test_max_target_bounds_exclusive_without_lookback_and_inclusive_with_it(
    spark: Any, tmp_path: Path
) -> None:
    from lakelogic.api import DataProcessor
    from lakelogic.contract.loader import load_contract
    from lakelogic.engines.spark.source_bounds import standalone_window
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.steps import ReadSource

    target = tmp_path / "target"
    first = spark.createDataFrame([(1, "a", "2024-01-02 00:00:00")], "id int, v string, updated_at string")
    made = DataProcessor(_contract(tmp_path / "landing", target), spark=spark).run(first, materialize=True)
    assert made.report.status == "succeeded", made.report.error
    as_of = datetime(2024, 2, 1, tzinfo=UTC)

    def window(strategy: str = "append", **source: Any) -> ReadWindow | None:
        doc = _contract(tmp_path / "landing", target, **source)
        doc["materialization"]["strategy"] = strategy
        doc["primary_key"] = ["id"]
        contract = load_contract(doc)
        [step] = compile_contract(contract).of_kind(ReadSource)
        assert isinstance(step, ReadSource)
        return standalone_window(spark, contract, step, as_of, target=None)

    plain = window()
    assert plain == ReadWindow("incremental", T0, as_of, reason="max_target", start_exclusive=True)
    looked = window(lookback="1d")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    assert looked == ReadWindow("incremental", start, as_of, reason="max_target", start_exclusive=False)
    none_yet = window(target_path=str(tmp_path / "absent"))
    assert none_yet is not None and none_yet.start is None and not none_yet.start_exclusive
    assert none_yet.reason == "no_previous_target_watermark"
    lookback_strategy = window(watermark_strategy="lookback", lookback="2d")
    assert lookback_strategy is not None and not lookback_strategy.start_exclusive
    # a merge absorbs the rows at the maximum: inclusive, so late rows of a coarse watermark are read
    merged = window(strategy="merge")
    assert merged == ReadWindow("incremental", T0, as_of, reason="max_target", start_exclusive=False)


@pytest.mark.spark
def test_a_date_watermark_keeps_an_inclusive_bound(spark: Any, tmp_path: Path) -> None:
    """Rows of the stored maximum day may still land after the run that stored it: an exclusive bound
    would never read them."""
    from lakelogic.api import DataProcessor
    from lakelogic.contract.loader import load_contract
    from lakelogic.engines.spark.source_bounds import standalone_window
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.steps import ReadSource

    target = tmp_path / "target"
    doc = _contract(tmp_path / "landing", target)
    doc["model"]["fields"][2]["type"] = "date"
    first = spark.createDataFrame([(1, "a", "2024-01-02")], "id int, v string, updated_at string")
    made = DataProcessor(doc, spark=spark).run(first, materialize=True)
    assert made.report.status == "succeeded", made.report.error
    contract = load_contract(doc)
    [step] = compile_contract(contract).of_kind(ReadSource)
    assert isinstance(step, ReadSource)
    window = standalone_window(spark, contract, step, datetime(2024, 2, 1, tzinfo=UTC), target=None)
    assert window is not None and window.start == T0 and not window.start_exclusive
