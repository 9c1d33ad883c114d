"""CSV and JSON sources take the one-job split too (engines.spark.fanout): the unparseable records are
counted by the source observation and written to the quarantine apart from the staged rows, only when
there are some. Before, a reader's corrupt-record column sent every CSV/JSON run down the two-action
path, which evaluates the whole contract twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.engines.spark import fanout
from tests.engines.helpers import contract

pytestmark = pytest.mark.spark


@pytest.fixture()
def one_jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids whose rows went through the one-job split."""
    calls: list[str] = []
    original = fanout.FanoutOutputs.stage

    def stage(self: fanout.FanoutOutputs, observations: Any) -> None:
        calls.append(self.fanout.run_id)
        original(self, observations)

    monkeypatch.setattr(fanout.FanoutOutputs, "stage", stage)
    return calls


def _run(spark: Any, doc: dict[str, Any], out: Path) -> tuple[Any, list[Any], list[Any]]:
    result = DataProcessor(doc, spark=spark).run(output_good=out / "good", output_bad=out / "bad")
    assert result.report.status in ("succeeded", "partial"), result.report.error
    good = spark.read.parquet(str(out / "good")).collect()
    bad = spark.read.parquet(str(out / "bad")).collect()
    return result.report, good, bad


def test_a_csv_source_with_malformed_rows_is_split_in_one_job(
    spark: Any, tmp_path: Path, one_jobs: list[str]
) -> None:
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("id,name,qty\n1,ann,2\n2,bob,EXTRA,9\nx3,cy,1\n4,dee,-1\n5,eve\n6,fay,3\n")
    fields = [
        {"name": "id", "type": "integer", "required": True},
        {"name": "name", "type": "string"},
        {"name": "qty", "type": "integer"},
    ]
    doc = contract(
        fields,
        source={"type": "landing", "path": str(data), "format": "csv"},
        quality={"row_rules": [{"name": "qty_positive", "sql": "qty > 0"}]},
    )
    report, good, bad = _run(spark, doc, tmp_path / "out")
    assert one_jobs == [report.run_id]
    assert sorted(r["id"] for r in good) == [1, 6]
    errors = sorted(tuple(r["_lakelogic_errors"]) for r in bad)
    assert errors == [
        ('Rule failed: id_type (cannot cast "x3" to integer)', "Rule failed: id_required (id IS NOT NULL)"),
        ("Rule failed: malformed_record (unparseable record: 2,bob,EXTRA,9)",),
        ("Rule failed: malformed_record (unparseable record: 5,eve)",),
        ("Rule failed: qty_positive (qty > 0)",),
    ]
    malformed = [r for r in bad if r["_lakelogic_errors"][0].startswith("Rule failed: malformed_record")]
    assert all(r["id"] is None and r["name"] is None for r in malformed)
    assert {r["_lakelogic_run_id"] for r in bad} == {report.run_id}
    counts = report.counts
    assert (counts.source, counts.good, counts.quarantined) == (6, 2, 4) and counts.reconciles()
    assert {r.name: r.failed for r in report.rules}["malformed_record"] == 2


def test_re_evaluated_rows_and_malformed_records_are_each_quarantined_once(
    spark: Any, tmp_path: Path, one_jobs: list[str]
) -> None:
    """No string column to carry a quoted cast failure: those rows are evaluated again, and that second
    evaluation must not bring the malformed records a second time."""
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("id,qty\n1,2\nx2,1\n3,4,5\n4,1\n")
    fields = [{"name": "id", "type": "integer"}, {"name": "qty", "type": "integer"}]
    doc = contract(fields, source={"type": "landing", "path": str(data), "format": "csv"})
    report, good, bad = _run(spark, doc, tmp_path / "out")
    assert one_jobs == [report.run_id]
    assert sorted(r["id"] for r in good) == [1, 4]
    assert sorted(tuple(r["_lakelogic_errors"]) for r in bad) == [
        ('Rule failed: id_type (cannot cast "x2" to integer)',),
        ("Rule failed: malformed_record (unparseable record: 3,4,5)",),
    ]
    assert report.counts.quarantined == 2 and report.counts.reconciles()


def test_a_clean_json_source_writes_no_malformed_rows_and_a_broken_line_is_quarantined(
    spark: Any, tmp_path: Path, one_jobs: list[str]
) -> None:
    fields = [{"name": "id", "type": "integer", "required": True}, {"name": "name", "type": "string"}]
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    clean.mkdir()
    broken.mkdir()
    (clean / "a.jsonl").write_text('{"id": 1, "name": "ann"}\n{"name": "bob"}\n')
    (broken / "a.jsonl").write_text('{"id": 1, "name": "ann"}\n{"id": 2, "name": \n{"id": 3}\n')
    for folder in (clean, broken):
        doc = contract(fields, source={"type": "landing", "path": str(folder), "format": "json"})
        report, good, bad = _run(spark, doc, tmp_path / f"out_{folder.name}")
        assert report.counts.reconciles()
        assert one_jobs[-1] == report.run_id
        failed = {r.name: r.failed for r in report.rules}
        if folder is clean:
            assert sorted(r["id"] for r in good) == [1]
            assert [list(r["_lakelogic_errors"]) for r in bad] == [
                ["Rule failed: id_required (id IS NOT NULL)"]
            ]
            assert failed.get("malformed_record", 0) == 0
        else:
            assert sorted(r["id"] for r in good) == [1, 3]
            [row] = bad
            assert row["_lakelogic_errors"][0].startswith("Rule failed: malformed_record")
            assert failed["malformed_record"] == 1 and report.counts.quarantined == 1


def test_a_post_re_cast_failure_without_a_carrier_is_re_evaluated_without_blowing_up_the_plan(
    spark: Any, tmp_path: Path, one_jobs: list[str]
) -> None:
    """The re-evaluated subset's filter was pushed through every projection, inlining the post re-cast's
    flags into the strict casts of the CSV text: the plan grew to millions of characters and the run
    died out of memory (a helper's audit)."""
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("id,qty\n1,2\n2,3\n3,4,5\n")
    fields = [
        {"name": "id", "type": "integer"},
        {"name": "qty", "type": "integer"},
        {"name": "qty2", "type": "integer"},
    ]
    derive = {"derive": {"field": "qty2", "sql": "concat(cast(qty as string), 'x')"}, "phase": "post"}
    doc = contract(
        fields, source={"type": "landing", "path": str(data), "format": "csv"}, transformations=[derive]
    )
    report, good, bad = _run(spark, doc, tmp_path / "out")
    assert one_jobs == [report.run_id] and good == []
    assert sorted(tuple(r["_lakelogic_errors"]) for r in bad) == [
        ("Rule failed: malformed_record (unparseable record: 3,4,5)",),
        ('Rule failed: qty2_type (cannot cast "2x" to integer)',),
        ('Rule failed: qty2_type (cannot cast "3x" to integer)',),
    ]
    assert report.counts.quarantined == 3 and report.counts.reconciles()


def test_a_re_evaluation_leaves_no_cached_rows_for_a_later_run(spark: Any, tmp_path: Path) -> None:
    """external_logic over a source with malformed records persists its input; a re-evaluation's copy was
    never released, and the next run over the same file read the previous run's rows from it."""
    data = tmp_path / "in"
    data.mkdir()
    (tmp_path / "ext.py").write_text(
        "def run(frame, **kw):\n"
        "    from pyspark.sql import functions as F\n"
        "    return frame.withColumn('note', F.lit(frame.count()))\n"
    )
    fields = [{"name": "id", "type": "integer"}, {"name": "qty", "type": "integer"}]
    doc = contract(
        fields,
        source={"type": "landing", "path": str(data), "format": "csv"},
        external_logic={"type": "python", "engine": "spark", "path": str(tmp_path / "ext.py")},
    )
    (data / "a.csv").write_text("id,qty\n1,2\nx2,1\n3,4,5\n")
    _run(spark, doc, tmp_path / "out1")
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == 0
    (data / "a.csv").write_text("id,qty\n10,20\nx20,1\n30,40,50\n50,5\n")
    _, _, bad = _run(spark, doc, tmp_path / "out2")
    assert sorted(tuple(r["_lakelogic_errors"]) for r in bad) == [
        ('Rule failed: id_type (cannot cast "x20" to integer)',),
        ("Rule failed: malformed_record (unparseable record: 30,40,50)",),
    ]
