"""OLC conformance, level ``materialization`` (SEMANTICS §23): seed rows then input rows run through the
same contract with the public API, written as Delta to a path, read back with the ``deltalake`` package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.spark


def _cases(shared: Path) -> list[Path]:
    root = shared / "olc" / "conformance" / "cases"
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


def test_materialization_cases(spark: Any, shared_dir: Path, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from lakelogic.api import DataProcessor

    cases = _cases(shared_dir)
    assert cases, "the corpus sample has materialization cases"
    for case in cases:
        meta = yaml.safe_load((case / "case.yaml").read_text())
        contract = yaml.safe_load((case / "contract.olc.yaml").read_text())
        fields = [f["name"] for f in contract["model"]["fields"]]
        target = str(tmp_path / case.name)
        processor = DataProcessor(case / "contract.olc.yaml", spark=spark)
        seed = meta.get("materialization", {}).get("seed")
        if seed:
            assert (
                processor.run(_frame(spark, case / seed), materialize=True, target=target).report.error
                is None
            )
        result = processor.run(_frame(spark, case / meta["input"]), materialize=True, target=target)
        assert result.report.error is None, (case.name, result.report.error)
        expected = [
            json.loads(line) for line in (case / meta["expected"]["target"]).read_text().splitlines() if line
        ]
        actual = _project(DeltaTable(target).to_pyarrow_table().to_pylist(), fields)
        order = meta.get("comparison", {}).get("sort_by") or fields
        key = _sorter(order)
        assert sorted(actual, key=key) == sorted(_project(expected, fields), key=key), case.name
        assertions = meta.get("assertions", {})
        if "rows_input" in assertions:
            assert result.report.counts.source == assertions["rows_input"]
        if "rows_accepted" in assertions:
            assert result.report.counts.good == assertions["rows_accepted"]
        rerun = processor.run(_frame(spark, case / meta["input"]), materialize=True, target=target)
        info = rerun.report.materialization
        assert info is not None and (info.rows_inserted, info.rows_updated) == (0, 0), (
            f"{case.name}: idempotent"
        )
        assert sorted(_project(DeltaTable(target).to_pyarrow_table().to_pylist(), fields), key=key) == sorted(
            actual, key=key
        )
