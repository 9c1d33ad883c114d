"""The `manifest` watermark strategy (SEMANTICS §3.4): a run reads the files its manifest does not list, and
the manifest lists them once the run has committed."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lakelogic.errors import SourceError
from lakelogic.sources.manifest import (
    FileManifest,
    manifest_location,
    parse_manifest,
    read_local,
    write_local,
)

FIELDS = [{"name": "id", "type": "integer", "required": True}, {"name": "day", "type": "date"}]


def test_unprocessed_files_keep_their_order_and_paths_compare_normalized(tmp_path: Path) -> None:
    a, b, c = (str(tmp_path / n) for n in ("a.csv", "b.csv", "c.csv"))
    manifest = FileManifest("m.json").with_files([f"file:{a}", str(tmp_path / "x" / ".." / "b.csv")])
    assert manifest.unprocessed([c, a, b]) == [c]


def test_the_manifest_round_trips_and_a_bad_one_names_its_location(tmp_path: Path) -> None:
    location = str(tmp_path / "state" / "m.json")
    assert read_local(location).processed == frozenset()  # none yet: nothing processed
    write_local(
        FileManifest(location).with_files([str(tmp_path / "a.csv")]), datetime(2026, 1, 2, tzinfo=UTC)
    )
    document = json.loads(Path(location).read_text())
    assert document == {"processed": [str(tmp_path / "a.csv")], "last_updated": "2026-01-02T00:00:00+00:00"}
    assert read_local(location).processed == {str(tmp_path / "a.csv")}
    assert not [p for p in Path(location).parent.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(SourceError, match=r"m\.json is not valid JSON"):
        parse_manifest("m.json", "{not json")
    with pytest.raises(SourceError, match="'processed' must be a list"):
        parse_manifest("m.json", '{"processed": "a.csv"}')
    with pytest.raises(SourceError, match="not valid JSON"):  # empty is no manifest, not "nothing read"
        parse_manifest("m.json", "")


def test_the_default_location_is_under_the_lakelogic_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert manifest_location(None, contract_name="bronze orders", contract_dir=None, home=home) == str(
        home / "manifests" / "bronze_orders.json"
    )
    assert manifest_location("m/x.json", contract_name="c", contract_dir=tmp_path, home=home) == str(
        tmp_path / "m" / "x.json"
    )
    assert manifest_location("s3://b/m.json", contract_name="c", contract_dir=tmp_path, home=home) == (
        "s3://b/m.json"
    )


def _contract(landing: Path, target: Path, manifest: Path) -> dict[str, Any]:
    return {
        "version": "1.0.0",
        "info": {"title": "Manifest orders", "table_name": "manifest_orders"},
        "model": {"fields": FIELDS},
        "source": {
            "type": "landing",
            "path": str(landing),
            "format": "csv",
            "load_mode": "incremental",
            "watermark_strategy": "manifest",
            "manifest_path": str(manifest),
        },
        "materialization": {"strategy": "append", "format": "parquet", "target_path": str(target)},
    }


def _land(landing: Path, name: str, rows: str, mtime: datetime) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    path = landing / name
    path.write_text("id,day\n" + rows)
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))


@pytest.mark.spark
def test_runs_read_each_file_once_whenever_it_landed(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    landing, target, manifest = tmp_path / "landing", tmp_path / "target", tmp_path / "state" / "m.json"
    now = datetime.now(UTC)
    _land(landing, "a_2026-01-01.csv", "1,2026-01-01\n2,2026-01-01\n", now - timedelta(days=3))
    doc = _contract(landing, target, manifest)

    first = DataProcessor(doc, spark=spark).run(materialize=True)
    assert first.report.status == "succeeded", first.report.error
    assert first.report.window.reason == "manifest"
    assert json.loads(manifest.read_text())["processed"] == [str(landing / "a_2026-01-01.csv")]

    # a late file, older by modification time than the last run: a time cursor would skip it
    _land(landing, "b_2025-12-31.csv", "3,2025-12-31\n", now - timedelta(days=10))
    second = DataProcessor(doc, spark=spark).run(materialize=True)
    assert second.report.counts.source == 1 and second.report.source.files_count == 1

    third = DataProcessor(doc, spark=spark).run(materialize=True)
    assert third.report.counts.source == 0  # nothing new
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2, 3]
    assert len(json.loads(manifest.read_text())["processed"]) == 2


@pytest.mark.spark
def test_a_run_that_does_not_commit_leaves_the_manifest_alone(spark: Any, tmp_path: Path) -> None:
    """Only a commit lists files: a run without a target (or one that fails) leaves them to the next."""
    from lakelogic.api import DataProcessor

    landing, target, manifest = tmp_path / "landing", tmp_path / "target", tmp_path / "m.json"
    _land(landing, "a.csv", "1,2026-01-01\n", datetime.now(UTC) - timedelta(hours=1))
    doc = _contract(landing, target, manifest)
    result = DataProcessor(doc, spark=spark).run()  # not materialized: nothing committed
    assert result.report.status == "succeeded" and not manifest.exists()
    committed = DataProcessor(doc, spark=spark).run(materialize=True)
    assert committed.report.counts.source == 1 and manifest.exists()


@pytest.mark.spark
def test_a_backfill_window_selects_by_name_date_and_lists_what_it_committed(
    spark: Any, tmp_path: Path
) -> None:
    """Explicit windows select by the date in the file name (DRIVER §8) and still record the files, so the
    next incremental run does not read the backfilled files again."""
    from lakelogic.api import DataProcessor
    from lakelogic.sources.windows import ReadWindow

    landing, target, manifest = tmp_path / "landing", tmp_path / "target", tmp_path / "m.json"
    now = datetime.now(UTC)
    _land(landing, "o_2026-01-01.csv", "1,2026-01-01\n", now)
    _land(landing, "o_2026-01-02.csv", "2,2026-01-02\n", now)
    doc = _contract(landing, target, manifest)
    window = ReadWindow(
        "backfill_20260101", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    )
    backfill = DataProcessor(doc, spark=spark).run(materialize=True, window=window)
    assert backfill.report.counts.source == 1
    assert json.loads(manifest.read_text())["processed"] == [str(landing / "o_2026-01-01.csv")]
    incremental = DataProcessor(doc, spark=spark).run(materialize=True)
    assert incremental.report.counts.source == 1  # only the 2nd day's file
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2]


@pytest.mark.spark
def test_contracts_sharing_a_manifest_keep_each_others_files(spark: Any, tmp_path: Path) -> None:
    """Each save re-reads the manifest under a lock: two driver threads never drop each other's files."""
    import threading

    from lakelogic.engines.spark.manifest_store import save_manifest

    location = str(tmp_path / "shared.json")
    now = datetime.now(UTC)
    threads = [
        threading.Thread(target=save_manifest, args=(spark, location, [str(tmp_path / f"{n}.csv")], now))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(read_local(location).processed) == 8


@pytest.mark.spark
def test_a_re_run_that_was_already_committed_lists_no_files(spark: Any, tmp_path: Path) -> None:
    """The earlier commit never saw a file that landed since: listing it would lose its rows (review)."""
    from lakelogic.api import DataProcessor
    from lakelogic.sources.windows import ReadWindow

    landing, target, manifest = tmp_path / "landing", tmp_path / "target", tmp_path / "m.json"
    now = datetime.now(UTC) - timedelta(minutes=5)
    _land(landing, "o_2026-01-01.csv", "1,2026-01-01\n", now)
    doc = _contract(landing, target, manifest)
    window = ReadWindow(
        "backfill_20260101", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    )
    assert DataProcessor(doc, spark=spark).run(materialize=True, window=window).report.error is None
    _land(landing, "o_2026-01-01_late.csv", "2,2026-01-01\n", now)
    again = DataProcessor(doc, spark=spark).run(materialize=True, window=window).report
    assert again.materialization is not None and again.materialization.already_committed
    assert json.loads(manifest.read_text())["processed"] == [str(landing / "o_2026-01-01.csv")]
    later = DataProcessor(doc, spark=spark).run(materialize=True).report
    assert later.counts.source == 1
    assert sorted(r["id"] for r in spark.read.parquet(str(target)).collect()) == [1, 2]


@pytest.mark.spark
def test_a_file_newer_than_the_runs_start_is_left_to_the_next_run(spark: Any, tmp_path: Path) -> None:
    from lakelogic.api import DataProcessor

    landing, target, manifest = tmp_path / "landing", tmp_path / "target", tmp_path / "m.json"
    _land(landing, "a.csv", "1,2026-01-01\n", datetime.now(UTC) - timedelta(hours=1))
    _land(landing, "b.csv", "2,2026-01-01\n", datetime.now(UTC) + timedelta(hours=1))  # still being written
    report = DataProcessor(_contract(landing, target, manifest), spark=spark).run(materialize=True).report
    assert report.counts.source == 1
    assert json.loads(manifest.read_text())["processed"] == [str(landing / "a.csv")]


@pytest.mark.spark
def test_a_reset_forgets_the_manifest_so_every_file_is_read_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DRIVER §17: after a reset the next run is a full load. The manifest kept listing the files, so a
    manifest contract's emptied target stayed empty."""
    import yaml

    from lakelogic.api import DataProcessor
    from lakelogic.contract.hierarchy import resolve_effective
    from lakelogic.driver.nodes import build_node
    from lakelogic.driver.registry import RegistryEntry
    from lakelogic.driver.reset import reset_nodes
    from lakelogic.runlog import DuckDBRunLogStore

    monkeypatch.setenv("LAKELOGIC_HOME", str(tmp_path / "home"))
    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    landing, target = tmp_path / "landing", tmp_path / "target"
    _land(landing, "a.csv", "1,2026-01-01\n", datetime.now(UTC) - timedelta(hours=1))
    doc = _contract(landing, target, tmp_path / "unused.json")
    del doc["source"]["manifest_path"]  # the default location, keyed by the node id
    doc["info"]["target_layer"] = "bronze"
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert DataProcessor(str(path), spark=spark).run(materialize=True).report.counts.source == 1
    manifest = tmp_path / "home" / "manifests" / "bronze.manifest_orders.json"
    assert manifest.exists()

    entry = RegistryEntry(contract_path=path, registry_file=tmp_path / "_registry.yaml", index=0)
    node = build_node(entry, resolve_effective(path).data, effective=resolve_effective(path))
    [result] = reset_nodes(spark, [node], store=DuckDBRunLogStore(tmp_path / "rl.duckdb"))
    assert f"manifest {manifest}" in result.emptied and not manifest.exists()
    again = DataProcessor(str(path), spark=spark).run(materialize=True)
    assert again.report.counts.source == 1
    assert [r["id"] for r in spark.read.parquet(str(target)).collect()] == [1]
