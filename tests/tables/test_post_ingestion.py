"""`post_ingestion` (SEMANTICS §17) through the public API: files are archived or deleted only after the
target and quarantine commits of a materializing run; a failed cleanup fails the run only when blocking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _contract(landing: Path, **post_ingestion: Any) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Cleaned"},
        "model": {"fields": [{"name": "id", "type": "integer", "required": True}]},
        "source": {
            "type": "landing",
            "path": str(landing),
            "format": "json",
            "post_ingestion": post_ingestion,
        },
        "materialization": {"strategy": "append", "format": "delta"},
    }


def _landing(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    (landing / "day=1").mkdir(parents=True)
    (landing / "day=1" / "a.json").write_text(json.dumps({"id": 1}) + "\n" + json.dumps({"id": None}) + "\n")
    (landing / "b.json").write_text(json.dumps({"id": 2}) + "\n")
    return landing


def _ids(target: Path) -> list[int]:
    from deltalake import DeltaTable

    return sorted(r["id"] for r in DeltaTable(str(target)).to_pyarrow_table().to_pylist())


def test_archive_after_the_commits_and_only_for_materializing_runs(spark: Any, tmp_path: Path) -> None:
    from lakelogic import DataProcessor

    landing, archive, target = _landing(tmp_path), tmp_path / "archive", tmp_path / "target"
    processor = DataProcessor(_contract(landing, action="archive", archive_path=str(archive)), spark=spark)
    from lakelogic.plan.explain import render_plan

    assert "Post-ingestion: archive the files read to " in render_plan(processor.plan)

    dry = processor.run()  # not materializing: the files stay
    assert dry.report.error is None and (landing / "b.json").exists()

    result = processor.run(materialize=True, target=str(target))
    assert result.report.status == "succeeded", result.report.error
    assert _ids(target) == [1, 2] and result.report.counts.quarantined == 1
    assert sorted(str(p.relative_to(archive)) for p in archive.rglob("*.json")) == ["b.json", "day=1/a.json"]
    assert not any(landing.rglob("*.json"))
    assert result.report.timings["lifecycle"] >= 0.0


def test_a_failed_run_keeps_its_files(spark: Any, tmp_path: Path) -> None:
    from lakelogic import DataProcessor

    landing = _landing(tmp_path)
    doc = _contract(landing, action="delete")
    doc["model"]["fields"].append({"name": "amount", "type": "double", "required": True})
    result = DataProcessor(doc, spark=spark).run(materialize=True, target=str(tmp_path / "target"))
    assert result.report.status == "failed"  # `amount` is missing from the source
    assert sorted(p.name for p in landing.rglob("*.json")) == ["a.json", "b.json"]


@pytest.mark.parametrize("blocking", [False, True])
def test_a_failed_cleanup_is_a_warning_or_fails_the_committed_run(
    spark: Any, tmp_path: Path, blocking: bool
) -> None:
    from lakelogic import DataProcessor

    landing, target = _landing(tmp_path), tmp_path / "target"
    blocked = tmp_path / "archive_is_a_file"
    blocked.write_text("not a folder")
    doc = _contract(landing, action="archive", archive_path=str(blocked), cleanup_is_blocking=blocking)
    result = DataProcessor(doc, spark=spark).run(materialize=True, target=str(target))
    assert _ids(target) == [1, 2], "the data is committed either way"
    assert (landing / "b.json").exists()
    if blocking:
        assert result.report.status == "failed"
        assert result.report.error is not None and result.report.error.type == "cleanup_failed"
        assert "committed" in result.report.error.message
    else:
        assert result.report.status == "succeeded"
        assert any(
            w.startswith("cleanup_failed: post_ingestion archive failed for 2 file(s)")
            for w in result.report.warnings
        )


def test_only_files_whose_rows_were_all_taken_are_cleaned(spark: Any, tmp_path: Path) -> None:
    """Partition filters narrow the files to clean; a watermark window (rows of a file left for later
    windows) cleans nothing, with a warning. The archive may not sit inside the source folder."""
    import datetime as dt

    from lakelogic import DataProcessor
    from lakelogic.errors import PlanError

    landing = tmp_path / "landing"
    for region, day in (("EU", "2024-03-01"), ("US", "2024-03-02")):
        (landing / f"region={region}").mkdir(parents=True)
        (landing / f"region={region}" / "part.json").write_text(json.dumps({"id": 1, "day": day}) + "\n")
    doc = _contract(landing, action="delete")
    doc["model"]["fields"] += [{"name": "day", "type": "date"}, {"name": "region", "type": "string"}]
    doc["source"]["partition_filters"] = {"region": "EU"}
    result = DataProcessor(doc, spark=spark).run(materialize=True, target=str(tmp_path / "t1"))
    assert result.report.status == "succeeded", result.report.error
    assert sorted(str(p.relative_to(landing)) for p in landing.rglob("*.json")) == ["region=US/part.json"]
    assert result.report.source.files_count == 1 and "region=EU" in result.report.source.files[0]

    windowed = _contract(landing, action="delete")
    windowed["model"]["fields"] += [{"name": "day", "type": "date"}]
    windowed["source"] |= {"load_mode": "incremental", "watermark_field": "day"}
    window = {"start": dt.datetime(2024, 3, 2), "end": dt.datetime(2024, 3, 3), "label": "window"}
    kept = DataProcessor(windowed, spark=spark).run(
        materialize=True, target=str(tmp_path / "t2"), window=window
    )
    assert kept.report.error is None and (landing / "region=US" / "part.json").exists()
    assert any(
        w.startswith("post_ingestion skipped: the run read only the rows") for w in kept.report.warnings
    )

    inside = _contract(landing, action="archive", archive_path=str(landing / "done"))
    with pytest.raises(PlanError, match="is inside the source location"):
        DataProcessor(inside, spark=spark).plan  # noqa: B018


def test_a_run_on_a_handed_in_frame_cleans_nothing_even_for_an_object_store_source(
    spark: Any, tmp_path: Path
) -> None:
    """§17 cleans the files the run read; a frame handed to run() is none (the run failed with
    `cleanup_failed` naming the contract's object-store path after committing)."""
    from lakelogic import DataProcessor

    doc = _contract(tmp_path, action="delete", cleanup_is_blocking=True)
    doc["source"]["path"] = "s3://bucket/landing/"
    frame = spark.createDataFrame([(1,), (2,)], "id int")
    result = DataProcessor(doc, spark=spark).run(frame, materialize=True, target=str(tmp_path / "t"))
    assert result.report.status == "succeeded", result.report.error
    assert not any("post_ingestion" in w or "cleanup" in w for w in result.report.warnings)
    assert _ids(tmp_path / "t") == [1, 2]


def test_a_partition_filter_on_a_data_column_cleans_no_file(spark: Any, tmp_path: Path) -> None:
    """The run took some rows of each file: deleting them lost the others (and the report listed no file)."""
    from lakelogic import DataProcessor

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id": 1, "country": "US"}\n{"id": 2, "country": "FR"}\n')
    doc = _contract(landing, action="delete")
    doc["model"]["fields"].append({"name": "country", "type": "string"})
    doc["source"]["partition_filters"] = {"country": "US"}
    result = DataProcessor(doc, spark=spark).run(materialize=True, target=str(tmp_path / "t"))
    assert result.report.status == "succeeded", result.report.error
    assert _ids(tmp_path / "t") == [1] and (landing / "a.json").exists()
    assert result.report.source.files_count == 1
    assert any("partition_filters names a data column" in w for w in result.report.warnings)


def test_a_remote_read_counts_every_file_it_read(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§22: `files_count` is every file; only `files` stops at the first 100."""
    from lakelogic import DataProcessor
    from lakelogic.sources import files

    landing = tmp_path / "landing"
    landing.mkdir()
    for i in range(120):
        (landing / f"f{i:03}.json").write_text(json.dumps({"id": i}) + "\n")
    monkeypatch.setattr(files, "_REMOTE", (*files._REMOTE, "file://"))  # read as an object store is
    doc = _contract(landing)
    doc["source"]["path"] = f"file://{landing}"
    report = DataProcessor(doc, spark=spark).run().report
    assert report.counts.source == 120
    assert (report.source.files_count, len(report.source.files)) == (120, 100)
