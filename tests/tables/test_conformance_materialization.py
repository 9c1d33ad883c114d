"""OLC conformance, level ``materialization`` (SEMANTICS §23): seed rows then input rows run through the
same contract with the public API, written as Delta to a path, read back with the ``deltalake`` package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.spark


def _cases(root: Path) -> list[Path]:
    """Materialization cases under a cases folder (``shared/olc/conformance/cases`` or another corpus)."""
    return [
        c
        for c in sorted(root.iterdir())
        if (c / "case.yaml").is_file()
        and yaml.safe_load((c / "case.yaml").read_text()).get("level") == "materialization"
    ]


def _frame(spark: Any, path: Path) -> Any:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return spark.read.json(spark.sparkContext.parallelize(lines))


def _project(rows: list[dict[str, Any]], fields: list[str]) -> list[dict[str, Any]]:
    return [{f: row.get(f) for f in fields} for row in rows]


def _sorter(order: list[str]) -> Any:
    return lambda row: tuple(str(row.get(k)) for k in order)


def run_materialization_case(case: Path, spark: Any, target: str) -> None:
    """Seed (if any), run the input into a Delta ``target``, compare the table, then re-run for idempotence.

    Optional assertion keys beyond the corpus sample's: ``rows_inserted``/``rows_updated`` (first input run)
    and ``run_fails`` (the input run must report an error; the target must still equal the expected rows).
    """
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    meta = yaml.safe_load((case / "case.yaml").read_text())
    contract = yaml.safe_load((case / "contract.olc.yaml").read_text())
    fields = [f["name"] for f in contract["model"]["fields"]]
    processor = DataProcessor(case / "contract.olc.yaml", spark=spark)
    seed = meta.get("materialization", {}).get("seed")
    if seed:
        assert processor.run(_frame(spark, case / seed), materialize=True, target=target).report.error is None
    assertions = meta.get("assertions", {})
    result = processor.run(_frame(spark, case / meta["input"]), materialize=True, target=target)
    if assertions.get("run_fails"):
        assert result.report.error is not None, f"{case.name}: the run should fail: {result.report.status}"
    else:
        assert result.report.error is None, (case.name, result.report.error)
    expected = [
        json.loads(line) for line in (case / meta["expected"]["target"]).read_text().splitlines() if line
    ]
    actual = _project(DeltaTable(target).to_pyarrow_table().to_pylist(), fields)
    order = meta.get("comparison", {}).get("sort_by") or fields
    key = _sorter(order)
    assert sorted(actual, key=key) == sorted(_project(expected, fields), key=key), case.name
    if "rows_input" in assertions:
        assert result.report.counts.source == assertions["rows_input"]
    if "rows_accepted" in assertions:
        assert result.report.counts.good == assertions["rows_accepted"]
    if assertions.get("run_fails"):
        return
    info = result.report.materialization
    for name in ("rows_inserted", "rows_updated"):
        if name in assertions:
            assert info is not None and getattr(info, name) == assertions[name], (case.name, name, info)
    rerun = processor.run(_frame(spark, case / meta["input"]), materialize=True, target=target)
    info = rerun.report.materialization
    assert info is not None and (info.rows_inserted, info.rows_updated) == (0, 0), f"{case.name}: idempotent"
    assert sorted(_project(DeltaTable(target).to_pyarrow_table().to_pylist(), fields), key=key) == sorted(
        actual, key=key
    )


def test_materialization_cases(spark: Any, shared_dir: Path, tmp_path: Path) -> None:
    cases = _cases(shared_dir / "olc" / "conformance" / "cases")
    assert cases, "the corpus sample has materialization cases"
    for case in cases:
        run_materialization_case(case, spark, str(tmp_path / case.name))
