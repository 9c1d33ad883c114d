"""external_logic on Spark (SEMANTICS §19): what the code returns continues the run; counts stay exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lakelogic import DataProcessor

pytestmark = pytest.mark.spark


def _processor(spark: Any, tmp_path: Path, code: str) -> DataProcessor:
    (tmp_path / "ext.py").write_text(code)
    doc = {
        "version": "1.0.0",
        "info": {"title": "Ext"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}]},
        "external_logic": {"type": "python", "engine": "spark", "path": "ext.py"},
    }
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(doc))
    return DataProcessor(path, spark=spark)


def _input(spark: Any) -> Any:
    return spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, v string")


def test_code_reading_part_of_its_input_keeps_the_source_count(spark: Any, tmp_path: Path) -> None:
    """§12: source = rows read at step 1, even when the code limits its input; the rest are filtered."""
    result = _processor(spark, tmp_path, "def run(frame, **kw):\n    return frame.limit(1)\n").run(
        _input(spark)
    )
    counts = result.report.counts
    assert (counts.source, counts.good, counts.filtered) == (3, 1, 2), result.report.error


@pytest.mark.parametrize(
    "body",
    [
        "import pandas as pd\n    return pd.DataFrame({'id': [7, 8], 'v': [None, 'q'], 'w': [None, None]})",
        "import pyarrow as pa\n    return pa.table({'id': [7, 8], 'v': [None, 'q']})",
    ],
    ids=["pandas", "arrow"],
)
def test_a_pandas_or_arrow_result_not_built_from_the_input_continues(
    spark: Any, tmp_path: Path, body: str
) -> None:
    """§19: pandas/Arrow results are converted; missing values stay NULL (not 'NaN' text), an all-NULL
    column needs no inferable type; the input rows the code did not return are filtered."""
    result = _processor(spark, tmp_path, f"def run(frame, **kw):\n    {body}\n").run(_input(spark))
    assert result.report.status == "succeeded", result.report.error
    assert sorted((r["id"], r["v"]) for r in result.good.collect()) == [(7, None), (8, "q")]
    counts = result.report.counts
    assert (counts.source, counts.good, counts.filtered, counts.expanded) == (3, 2, 1, 0)


def test_code_that_writes_the_output_itself_gets_no_target_write(spark: Any, tmp_path: Path) -> None:
    """§19 `handles_output: true`: the runtime reads the output back and validates it, not the target."""
    out, target = tmp_path / "out", tmp_path / "target"
    (tmp_path / "ext.py").write_text(f"def run(frame, **kw):\n    frame.write.parquet({str(out)!r})\n")
    doc = {
        "version": "1.0.0",
        "info": {"title": "Ext"},
        "model": {"fields": [{"name": "id", "type": "integer"}, {"name": "v", "type": "string"}]},
        "external_logic": {
            "type": "python",
            "engine": "spark",
            "path": "ext.py",
            "handles_output": True,
            "output_path": str(out),
            "output_format": "parquet",
        },
        "materialization": {"strategy": "append", "target_path": str(target), "format": "parquet"},
    }
    (tmp_path / "contract.yaml").write_text(yaml.safe_dump(doc))
    result = DataProcessor(tmp_path / "contract.yaml", spark=spark).run(_input(spark), materialize=True)
    assert result.report.status == "succeeded", result.report.error
    assert result.report.counts.good == 3 and not target.exists()
    info = result.report.materialization
    assert info is not None and not info.committed and info.rows_inserted == 0


def test_code_may_count_its_input_when_the_source_has_malformed_records(spark: Any, tmp_path: Path) -> None:
    """§19: the frame is an ordinary DataFrame. Over a raw JSON scan with malformed lines, `count()`
    alone would need only Spark's corrupt-record column, which Spark refuses to read by itself."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "v": "a"}\nBROKEN\n{"id": 2, "v": "b"}\n')
    code = "def run(frame, **kw):\n    assert frame.count() == 2\n    return frame\n"
    result = _processor(spark, tmp_path, code).run(str(source))
    assert result.report.error is None, result.report.error
    counts = result.report.counts
    assert (counts.source, counts.good, counts.quarantined) == (3, 2, 1)


def test_a_failing_code_names_its_step_and_the_report_keeps_what_was_read(spark: Any, tmp_path: Path) -> None:
    """§22: error.step is the step that failed; the source block is filled although the run failed."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "v": "a"}\n')
    code = "def run(frame, **kw):\n    raise ValueError('boom')\n"
    report = _processor(spark, tmp_path, code).run(str(source)).report
    assert report.status == "failed" and report.error is not None
    assert (report.error.type, report.error.step) == ("external_logic", "external_logic")
    assert report.source.path == str(source) and report.source.files_count == 1


def test_a_result_with_duplicate_column_names_is_the_codes_error(spark: Any, tmp_path: Path) -> None:
    code = "def run(frame, **kw):\n    return frame.selectExpr('id', 'v', 'v AS V')\n"
    report = _processor(spark, tmp_path, code).run(_input(spark)).report
    assert report.status == "failed" and report.error is not None
    assert report.error.type == "external_logic" and "duplicate column(s) V" in report.error.message


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (  # fails later, inside a Spark task: was a raw PythonException with no report
            "from pyspark.sql import functions as F\n"
            "def bad(x):\n    raise ValueError('udf boom')\n"
            "def run(frame, **kw):\n    return frame.withColumn('v', F.udf(bad, 'string')('v'))\n",
            "ValueError: udf boom",
        ),
        (  # `sys.exit()` ended the CLI with status 0 and no report
            "import sys\ndef run(frame, **kw):\n    sys.exit(0)\n",
            "raised SystemExit",
        ),
        (  # a pandas Series is no frame: was a raw AttributeError
            "def run(frame, **kw):\n    return frame.toPandas()['id']\n",
            "could not be turned into a Spark frame",
        ),
    ],
)
def test_code_failing_in_any_way_is_a_failed_run_with_a_report(
    spark: Any, tmp_path: Path, code: str, expected: str
) -> None:
    report = _processor(spark, tmp_path, code).run(_input(spark)).report
    assert report.status == "failed" and report.error is not None
    assert report.error.type == "external_logic" and expected in report.error.message
