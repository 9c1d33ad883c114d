"""One job writes both outputs (engines.spark.fanout): the files must equal what the two-action path gives.

The reference is the same contract run without output paths (lazy good/quarantine frames, each evaluated
by its own action). Every kind of quarantined row is covered: static rule messages (rebuilt from the
key), pre-phase cast failures and post-phase re-cast failures (messages quoting the raw value: carried in
a string column of the staged row, or re-evaluated when the output has none), several failures on one
row, post-created columns blanked after a pre failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakelogic.api import DataProcessor
from lakelogic.engines.spark import executor, runner
from lakelogic.engines.spark.fanout import FANOUT_KEY, FanoutOutputs
from tests.engines.helpers import contract

pytestmark = pytest.mark.spark

FIELDS: list[dict[str, Any]] = [
    {"name": "id", "type": "integer", "required": True},
    {"name": "email", "type": "string"},
    {"name": "ts", "type": "timestamp"},
    {"name": "qty", "type": "integer"},
    {"name": "ratio", "type": "decimal(4,2)"},
]
TRANSFORMS = [
    {"trim": {"fields": ["email"]}},
    # post: computed on every row; 'ratio' overflows decimal(4,2) for large qty (a post re-cast failure)
    {"derive": {"field": "ratio", "sql": "qty / 2.0"}, "phase": "post"},
]
QUALITY: dict[str, Any] = {
    "row_rules": [
        {"regex_match": {"field": "email", "pattern": "^[^@]+@[^@]+$"}},
        {"range": {"field": "qty", "min": 0, "max": 1000}},
        {"name": "ratio_small", "sql": "ratio < 100", "phase": "post", "severity": "warning"},
    ]
}
SCHEMA = "id string, email string, ts string, qty string"
ROWS = [
    ("1", "a@x", "2026-01-02T03:04:05Z", "4"),  # good (fast UTC timestamp path)
    ("2", " b@x ", "2026-01-02 03:04:05", "8"),  # good (other timestamp shape)
    ("3", "nope", "2026-01-02T03:04:05Z", "4"),  # static failure
    ("4", "nope", "2026-01-02T03:04:05Z", "-5"),  # two static failures
    ("5", "c@x", "31/13/2026 25:61", "4"),  # cast failure (message quotes the raw value)
    ("6", "nope", "not a time", "x"),  # cast failures and a static failure together
    (None, "d@x", "2026-01-02T03:04:05Z", "4"),  # required missing
    ("8", "e@x", "2026-01-02T03:04:05Z", "999"),  # post re-cast failure: ratio 499.5 > decimal(4,2)
    ("9", None, "bad", "4"),  # cast failure, the carrier column (email) is NULL
    ("10", "q\"\\ü'@x", "bad", "4"),  # cast failure; quotes, backslash and non-ASCII in the carrier
]


def _doc(**quarantine: Any) -> dict[str, Any]:
    blocks: dict[str, Any] = {"transformations": TRANSFORMS, "quality": QUALITY}
    if quarantine:
        blocks["quarantine"] = quarantine
    return contract(FIELDS, **blocks)


def _sorted(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.collect()), key=lambda t: tuple(str(v) for v in t))


@pytest.fixture(autouse=True)
def one_job_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts one-job runs, so a silent fallback to the two-action path fails the tests."""
    calls: list[int] = []
    original = FanoutOutputs.stage

    def stage(self: FanoutOutputs, observations: Any) -> None:
        calls.append(1)
        original(self, observations)

    monkeypatch.setattr(FanoutOutputs, "stage", stage)
    return calls


def _both(spark: Any, tmp_path: Path, doc: dict[str, Any], rows: list[tuple[Any, ...]]) -> tuple[Any, Any]:
    frame = spark.createDataFrame(rows, SCHEMA)
    written = DataProcessor(doc, spark=spark).run(
        frame, output_good=tmp_path / "good", output_bad=tmp_path / "bad"
    )
    lazy = DataProcessor(doc, spark=spark).run(frame)
    return written, lazy


def _drop_run_columns(frame: Any) -> Any:
    return frame.drop("_lakelogic_run_id", "_lakelogic_quarantined_at")


@pytest.mark.parametrize("carrier", [True, False])
@pytest.mark.parametrize("include_reason", [True, False])
def test_one_job_outputs_equal_the_two_action_path(
    spark: Any,
    tmp_path: Path,
    include_reason: bool,
    carrier: bool,
    one_job_runs: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reevaluated: list[str] = []
    original = runner._reevaluate

    def reevaluate(executor: Any, ev: Any, subset: str) -> Any:
        reevaluated.append(subset)
        return original(executor, ev, subset)

    monkeypatch.setattr(runner, "_reevaluate", reevaluate)
    if not carrier:
        monkeypatch.setattr(executor, "carrier_column", lambda good, bad: None)
    doc = _doc(include_error_reason=include_reason)
    written, lazy = _both(spark, tmp_path, doc, ROWS)
    assert one_job_runs == [1]
    # messages quoting raw values are carried by the staged rows, or re-evaluated without a carrier
    if carrier or not include_reason:
        assert reevaluated == []
    else:
        assert sorted(reevaluated) == ["post", "pre"]
    assert written.report.status != "failed", written.report.error
    good = spark.read.parquet(str(tmp_path / "good"))
    bad = spark.read.parquet(str(tmp_path / "bad"))
    assert good.columns == lazy.good.columns and FANOUT_KEY not in good.columns
    assert bad.columns == lazy.bad.columns
    assert _sorted(good) == _sorted(lazy.good)
    assert _sorted(_drop_run_columns(bad)) == _sorted(_drop_run_columns(lazy.bad))
    counts, reference = written.report.counts, lazy.report.counts
    assert (counts.source, counts.good, counts.quarantined) == (10, 2, 8)
    assert (counts.good, counts.quarantined) == (reference.good, reference.quarantined)
    assert {r.name: r.failed for r in written.report.rules} == {r.name: r.failed for r in lazy.report.rules}
    assert not list(tmp_path.glob("*__lakelogic_*"))  # staging removed


def test_messages_quote_raw_values_and_keep_rule_order(spark: Any, tmp_path: Path) -> None:
    _both(spark, tmp_path, _doc(), ROWS)
    bad = {r["id"]: r for r in spark.read.parquet(str(tmp_path / "bad")).collect()}
    assert bad[5]["_lakelogic_errors"] == [
        'Rule failed: ts_type (cannot cast "31/13/2026 25:61" to timestamp)'
    ]
    assert [e.split(" (")[0] for e in bad[6]["_lakelogic_errors"]] == [
        "Rule failed: ts_type",
        "Rule failed: qty_type",
        "Rule failed: email_regex_match",
    ]
    assert bad[4]["_lakelogic_categories"] == ["validity", "validity"]
    assert bad[8]["_lakelogic_errors"][0].startswith("Rule failed: ratio_type (cannot cast 499.5")
    assert bad[3]["ratio"] is None  # post-created column blanked after a pre failure
    assert bad[9]["email"] is None and bad[9]["_lakelogic_errors"][0].startswith("Rule failed: ts_type")
    assert bad[10]["email"] == "q\"\\ü'@x"  # the carrier column's own value is restored
    assert bad[3]["_lakelogic_run_id"] and bad[3]["_lakelogic_quarantined_at"] is not None


def test_no_good_rows_still_writes_an_empty_good_dataset(spark: Any, tmp_path: Path) -> None:
    written, _ = _both(spark, tmp_path, _doc(), [r for r in ROWS if r[0] in ("3", "5")])
    assert written.report.counts.good == 0 and written.report.counts.quarantined == 2
    good = spark.read.parquet(str(tmp_path / "good"))
    assert good.count() == 0 and "ratio" in good.columns


def test_only_good_rows_skip_every_quarantine_job(spark: Any, tmp_path: Path) -> None:
    written, _ = _both(spark, tmp_path, _doc(), [r for r in ROWS if r[0] in ("1", "2")])
    assert written.report.counts.quarantined == 0
    assert spark.read.parquet(str(tmp_path / "bad")).count() == 0
    assert spark.read.parquet(str(tmp_path / "good")).count() == 2


def _table_rows(spark: Any, name: str, fmt: str) -> list[dict[str, Any]]:
    """The table's rows read without LakeLogic, minus the columns that differ between two runs."""
    from lakelogic.tables.target import ResolvedTarget
    from tests.tables.conftest import read_back

    kind = "table" if fmt == "iceberg" else "path"
    per_run = ("_lakelogic_run_id", "_lakelogic_quarantined_at", "_lakelogic_processed_at")
    rows = [
        {k: v for k, v in r.items() if k not in per_run}
        for r in read_back(spark, ResolvedTarget(kind, name, fmt))
    ]
    assert rows, f"{name} is empty"
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in sorted(r)))


def _scratch_left(root: Path) -> list[Path]:
    return [p for p in root.rglob("*")] if root.exists() else []


def test_materialized_run_takes_one_job_and_writes_what_two_actions_write(
    spark: Any, tmp_path: Path, one_job_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without output_good, a materialized run stages its rows in a scratch space (removed afterwards),
    and the target, the quarantine table, the counts and the dataset rules equal the two-action path's."""
    scratch = tmp_path / "scratch"
    monkeypatch.setenv("LAKELOGIC_SCRATCH_DIR", str(scratch))
    doc = _doc()
    doc["quality"] = {**QUALITY, "dataset_rules": [{"unique": "id"}, {"row_count_between": {"min": 1}}]}
    frame = spark.createDataFrame(ROWS, SCHEMA)
    one = DataProcessor(doc, spark=spark).run(frame, materialize=True, target=str(tmp_path / "one"))
    assert one_job_runs == [1], "the materialized run did not take the one-job path"
    assert _scratch_left(scratch) == []
    monkeypatch.setattr(runner, "scratch_root", lambda spark: None)
    two = DataProcessor(doc, spark=spark).run(frame, materialize=True, target=str(tmp_path / "two"))
    assert one_job_runs == [1], "without a scratch space the run must keep the two-action path"

    for result in (one, two):
        assert result.report.status == "partial" or result.report.status == "succeeded"
        assert result.report.materialization is not None
    a, b = one.report.materialization, two.report.materialization
    assert a is not None and b is not None and a.format == b.format
    assert (a.rows_inserted, a.quarantine_rows_written) == (b.rows_inserted, b.quarantine_rows_written)
    assert a.rows_inserted == 2 and a.quarantine_rows_written == len(ROWS) - 2
    assert _table_rows(spark, a.target, a.format) == _table_rows(spark, b.target, b.format)
    assert a.quarantine_target and b.quarantine_target
    assert _table_rows(spark, a.quarantine_target, a.format) == _table_rows(
        spark, b.quarantine_target, b.format
    )
    assert one.report.counts == two.report.counts
    assert [(r.name, r.passed, r.observed) for r in one.report.dataset_rules] == [
        (r.name, r.passed, r.observed) for r in two.report.dataset_rules
    ]


def test_failed_materialized_run_removes_its_scratch_space(
    spark: Any, tmp_path: Path, one_job_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    monkeypatch.setenv("LAKELOGIC_SCRATCH_DIR", str(scratch))

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected failure in the table write")

    monkeypatch.setattr("lakelogic.tables.spark_write.write_frame", boom)
    frame = spark.createDataFrame(ROWS, SCHEMA)
    with pytest.raises(RuntimeError, match="injected failure"):
        DataProcessor(_doc(), spark=spark).run(frame, materialize=True, target=str(tmp_path / "t"))
    assert one_job_runs == [1]
    assert _scratch_left(scratch) == []
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("materialize", [False, True])
def test_a_quarantine_output_alone_is_published(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, materialize: bool
) -> None:
    """``output_bad`` without ``output_good``: the quarantine file output is published (with a table
    target too, whose good rows go through the scratch space)."""
    monkeypatch.setenv("LAKELOGIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    frame = spark.createDataFrame(ROWS, SCHEMA)
    target = {"materialize": True, "target": str(tmp_path / "t")} if materialize else {}
    result = DataProcessor(_doc(), spark=spark).run(frame, output_bad=tmp_path / "bad", **target)
    written = spark.read.parquet(str(tmp_path / "bad"))
    assert written.count() == result.report.counts.quarantined == len(ROWS) - 2
    assert not list((tmp_path).glob("bad.__lakelogic_*"))
    assert _scratch_left(tmp_path / "scratch") == []


def test_packed_carrier_round_trips_messages_and_value(spark: Any) -> None:
    from pyspark.sql import functions as F

    from lakelogic.engines.spark.fanout import pack_quoting_rows, unpack_carrier
    from lakelogic.engines.spark.rules import CATEGORIES_COLUMN, ERRORS_COLUMN

    cases = [
        (None, ['Rule failed: a_type (cannot cast "x\\n,y" to int)'], ["schema"]),
        ("", ["m1", "", "m3 with \n newline, comma | pipe"], ["c1", "c2", "c3"]),
        ("n", ["é中文🙂"], ["validity"]),
        ("s", ["x"], ["y"]),
        ("value\x00with\x00nul", ["one", "two"], ["c", "d"]),
    ]
    frame = spark.createDataFrame(
        [(i, v, e, c, -1) for i, (v, e, c) in enumerate(cases)] + [(99, "good row", None, None, 0)],
        f"i int, carrier string, {ERRORS_COLUMN} array<string>, {CATEGORIES_COLUMN} array<string>, "
        f"{FANOUT_KEY} long",
    )
    packed = pack_quoting_rows(frame, "carrier")
    assert ERRORS_COLUMN not in packed.columns and CATEGORIES_COLUMN not in packed.columns
    errors, categories, value = unpack_carrier(F.col("carrier"))
    rows = {
        r["i"]: r
        for r in packed.select(
            "i", "carrier", errors.alias("e"), categories.alias("c"), value.alias("v")
        ).collect()
    }
    for i, (v, e, c) in enumerate(cases):
        assert (rows[i]["v"], rows[i]["e"], rows[i]["c"]) == (v, e, c), i
    assert rows[99]["carrier"] == "good row"  # good rows are never packed
