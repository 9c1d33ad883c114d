"""Service levels at step 15 (SEMANTICS §15): measured, reported, never changing the run's status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engines.helpers import contract, run

pytestmark = pytest.mark.spark


def _by_objective(result: Any) -> dict[str, Any]:
    return {s.objective: s for s in result.report.service_levels}


def test_objectives_on_the_good_rows_of_an_unmaterialized_run(spark: Any) -> None:
    doc = contract(
        [
            {"name": "id", "type": "integer"},
            {"name": "seen", "type": "timestamp"},
            {"name": "email", "type": "string"},
        ],
        quality={"row_rules": [{"name": "positive", "sql": "id > 0"}]},
        service_levels={
            "freshness": {"threshold": "1d", "field": "seen"},
            "availability": {"threshold": 75, "field": "email"},
            "row_count": {"min_rows": 3},
        },
    )
    rows = [
        {"id": 1, "seen": "2000-01-01T00:00:00Z", "email": "a@x"},
        {"id": 2, "seen": "2000-01-02T00:00:00Z", "email": None},
        {"id": -3, "seen": "2999-01-01T00:00:00Z", "email": "c@x"},  # quarantined: not measured
    ]
    result = run(spark, doc, rows)
    assert result.report.status == "succeeded", "a breach never changes the status"
    slo = _by_objective(result)
    assert slo["freshness"].passed is False and slo["freshness"].observed > 20 * 365 * 86_400
    assert slo["freshness"].threshold == 86_400
    assert (slo["availability"].passed, slo["availability"].observed) == (False, 0.5)
    assert (slo["row_count"].passed, slo["row_count"].observed) == (False, 2)
    assert result.report.timings["slo"] >= 0


def test_freshness_reads_the_committed_target_and_lineage_by_default(spark: Any, tmp_path: Path) -> None:
    doc = contract(
        [{"name": "id", "type": "integer"}],
        lineage={"enabled": True},
        materialization={"strategy": "append", "format": "delta"},
        service_levels={"freshness": "1h", "row_count": {"max_rows": 1}},
    )
    target = str(tmp_path / "target")
    result = run(spark, doc, [{"id": 1}, {"id": 2}], materialize=True, target=target)
    slo = _by_objective(result)
    assert slo["freshness"].passed is True and 0 <= slo["freshness"].observed < 3600
    assert (slo["row_count"].passed, slo["row_count"].observed) == (False, 2)
    unlit = run(
        spark, contract([{"name": "id", "type": "integer"}], service_levels={"freshness": "1h"}), [{"id": 1}]
    )
    assert _by_objective(unlit)["freshness"].passed is None
    assert any(
        w.startswith("slo_unmeasured: freshness: column '_lakelogic_processed_at'")
        for w in unlit.report.warnings
    )
    # no published rows is a breach (§15) even where the column is absent too
    nothing = run(
        spark,
        contract(
            [{"name": "id", "type": "integer"}],
            quality={"row_rules": [{"name": "positive", "sql": "id > 0"}]},
            service_levels={"freshness": "1h"},
        ),
        [{"id": -1}],
    )
    assert _by_objective(nothing)["freshness"].passed is False
    assert not any(w.startswith("slo_unmeasured") for w in nothing.report.warnings)


def test_availability_without_a_field_is_the_share_of_good_runs_in_30_days() -> None:
    from datetime import UTC, datetime, timedelta

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective
    from lakelogic.report import RunReport
    from lakelogic.types import RunStatus

    as_of = datetime(2024, 3, 31, tzinfo=UTC)
    asked: list[Any] = []

    def history(contract: str, since: datetime) -> list[dict[str, Any]]:
        asked.append((contract, since))
        return [{"status": s} for s in ("succeeded", "failed", "no_new_data", "failed")]

    report = RunReport(run_id="r", contract="orders")
    report.status = RunStatus.PARTIAL
    step = EvaluateSlos(yaml_path="service_levels", objectives=(SloObjective("availability", threshold=0.6),))
    (result,) = evaluate_slos(
        step, published=lambda: None, batch=None, report=report, as_of=as_of, history=history
    )
    assert (result.passed, result.observed) == (True, 0.6)  # 3 of 5 runs, this one included
    assert asked == [("orders", as_of - timedelta(days=30))]


def test_availability_counts_a_materialized_run_once_despite_its_committing_row(
    spark: Any, tmp_path: Path
) -> None:
    """A materialized run's write-ahead `committing` row is in the log when the objective is measured:
    it is the run itself, not an earlier run that did not finish (it read 0.5 on a first run)."""
    doc = contract(
        [{"name": "id", "type": "integer"}],
        materialization={"strategy": "append", "format": "delta"},
        metadata={"run_log_database": str(tmp_path / "runs.duckdb")},
        service_levels={"availability": 0.99},
    )
    target = str(tmp_path / "target")
    for _ in range(2):
        result = run(spark, doc, [{"id": 1}], materialize=True, target=target)
        slo = _by_objective(result)["availability"]
        assert (slo.passed, slo.observed) == (True, 1.0)


def test_availability_leaves_out_the_runs_own_row() -> None:
    from datetime import UTC, datetime

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective
    from lakelogic.report import RunReport

    report = RunReport(run_id="r", contract="orders")
    report.status = "succeeded"  # type: ignore[assignment]
    step = EvaluateSlos(yaml_path="service_levels", objectives=(SloObjective("availability", threshold=0.5),))
    rows = [{"run_id": "r", "status": "committing"}, {"run_id": "q", "status": "failed"}]
    (result,) = evaluate_slos(
        step,
        published=lambda: None,
        batch=None,
        report=report,
        as_of=datetime(2024, 3, 31, tzinfo=UTC),
        history=lambda contract, since: rows,
    )
    assert (result.passed, result.observed) == (True, 0.5)  # q failed, this run succeeded


def _report(**counts: int) -> Any:
    from lakelogic.report import Counts, RunReport

    report = RunReport(run_id="now", contract="orders")
    report.counts = Counts(**counts)
    return report


def test_completeness_compares_good_and_quarantine_ratios_with_the_hierarchy_quality_slo() -> None:
    from datetime import UTC, datetime

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective

    step = EvaluateSlos(
        yaml_path="slo",
        objectives=(SloObjective("completeness", min_good_ratio=0.9, max_quarantine_ratio=0.1),),
    )

    def measure(**counts: int) -> Any:
        (result,) = evaluate_slos(
            step, published=lambda: None, batch=None, report=_report(**counts), as_of=datetime.now(UTC)
        )
        return result

    assert measure(source=10, good=9, quarantined=1).passed is True
    breached = measure(source=10, good=8, quarantined=2)
    assert breached.passed is False and breached.observed == {"good_ratio": 0.8, "quarantine_ratio": 0.2}
    assert measure(source=0).passed is None  # nothing judged: not a breach


def test_volume_anomaly_against_the_median_of_earlier_successful_runs() -> None:
    from datetime import UTC, datetime, timedelta

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective

    as_of = datetime(2026, 11, 20, tzinfo=UTC)  # a Friday
    rows = [
        {
            "run_id": f"r{i}",
            "status": status,
            "counts_good": good,
            "started_at": as_of - timedelta(days=i + 1),
        }
        for i, (status, good) in enumerate(
            [
                ("succeeded", 100),
                ("failed", 5),
                ("succeeded", 0),
                ("succeeded", 110),
                ("succeeded", 90),
                ("succeeded", 100),
                ("succeeded", 7000),
                ("succeeded", 95),
            ]
        )
    ]

    def measure(good: int, **settings: Any) -> Any:
        objective = SloObjective("volume_anomaly", **settings)
        (result,) = evaluate_slos(
            EvaluateSlos(yaml_path="slo", objectives=(objective,)),
            published=lambda: None,
            batch=None,
            report=_report(source=good, good=good),
            as_of=as_of,
            history=lambda contract, since: [r for r in rows if r["started_at"] >= since],
        )
        return result

    normal = measure(120)
    assert normal.passed is True  # failed and zero-row runs are no baseline: median(100,110,90,100,7000,95)
    assert normal.observed["baseline"] == 100.0 and normal.observed["baseline_runs"] == 6
    low = measure(40)
    assert (low.passed, low.severity, low.observed["ratio"]) == (False, "warning", 0.4)
    empty = measure(0)
    assert (empty.passed, empty.severity) == (False, "critical")
    assert measure(400, critical_ratio=3.0).severity == "critical"
    assert measure(40, min_runs_before_enforcement=7).passed is None  # not enough history yet
    assert measure(40, lookback_days=3).passed is None  # only 2 successful runs with rows in 3 days
    seasonal = measure(100, method="seasonal_median", min_runs_before_enforcement=1)
    assert seasonal.observed["baseline_runs"] == 1 and seasonal.observed["baseline"] == 7000.0  # a week back


def test_hierarchy_slo_quality_and_anomaly_compile_into_objectives(tmp_path: Path) -> None:
    from textwrap import dedent

    from lakelogic.contract.hierarchy import resolve_effective
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.steps import EvaluateSlos

    def write(path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
        return path

    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    write(
        tmp_path / "retail" / "_domain.yaml",
        """\
        domain: retail
        slo:
          quality: {min_good_ratio: 0.9}
          row_count:
            silver:
              anomaly: {method: rolling_average, min_runs_before_enforcement: 3}
              exclude_tables: [skipped]
        """,
    )
    write(
        tmp_path / "retail" / "crm" / "_system.yaml",
        "system: crm\ndomain: retail\nslo: {quality: {max_quarantine_ratio: 0.2}}\n",
    )
    body = (
        "version: 1.0.0\ninfo: {{title: {t}, table_name: {t}, target_layer: silver}}\n"
        "model: {{fields: [{{name: id, type: integer}}]}}\n"
    )
    orders = write(tmp_path / "retail" / "crm" / "silver" / "orders.yaml", body.format(t="orders"))
    [step] = compile_contract(resolve_effective(orders).contract).of_kind(EvaluateSlos)
    completeness, anomaly = step.objectives
    assert (completeness.objective, completeness.min_good_ratio, completeness.max_quarantine_ratio) == (
        "completeness",
        0.9,
        0.2,
    )
    assert (anomaly.objective, anomaly.method, anomaly.min_runs_before_enforcement) == (
        "volume_anomaly",
        "rolling_average",
        3,
    )
    skipped = write(tmp_path / "retail" / "crm" / "silver" / "skipped.yaml", body.format(t="skipped"))
    [step] = compile_contract(resolve_effective(skipped).contract).of_kind(EvaluateSlos)
    assert [o.objective for o in step.objectives] == ["completeness"]  # excluded from the anomaly check


def test_review_fixes_completeness_zero_limit_and_freshness_without_rows() -> None:
    from datetime import UTC, datetime

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective

    step = EvaluateSlos(
        yaml_path="slo",
        objectives=(
            SloObjective("completeness", min_good_ratio=0.5, max_quarantine_ratio=0.0),
            SloObjective("freshness", field="_lakelogic_processed_at", threshold=3600),
        ),
    )
    completeness, freshness = evaluate_slos(
        step, published=lambda: None, batch=None, report=_report(source=10, good=9, quarantined=1),
        as_of=datetime.now(UTC),
    )  # fmt: skip
    assert completeness.passed is False  # a limit of 0 means no quarantined row at all
    assert freshness.passed is False  # nothing to be fresh: no rows = breach


def _hierarchy(tmp_path: Path, slo: str) -> Path:
    from textwrap import dedent

    (tmp_path / "lakelogic.yaml").write_text("{}\n")
    (tmp_path / "retail" / "crm" / "silver").mkdir(parents=True)
    (tmp_path / "retail" / "_domain.yaml").write_text("domain: retail\n" + dedent(slo))
    (tmp_path / "retail" / "crm" / "_system.yaml").write_text("system: crm\ndomain: retail\n")
    for name in ("orders", "customers"):
        (tmp_path / "retail" / "crm" / "silver" / f"{name}.yaml").write_text(
            f"version: 1.0.0\ninfo: {{title: {name}, table_name: {name}, target_layer: silver}}\n"
            "model: {fields: [{name: id, type: integer}]}\n"
        )
    return tmp_path / "retail" / "crm" / "silver"


def test_review_fixes_hierarchy_table_filters_check_columns_and_anomaly_count(tmp_path: Path) -> None:
    from lakelogic.contract.hierarchy import resolve_effective
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.steps import EvaluateSlos

    silver = _hierarchy(
        tmp_path,
        """\
        slo:
          freshness:
            silver:
              max_delay_minutes: 60
              check_columns: [loaded_at, _lakelogic_processed_at]
              exclude_tables: [orders]
          row_count:
            silver: {min_rows: 1, check_field: id, anomaly: {enabled: true}, exclude_tables: [orders]}
        """,
    )

    def objectives(name: str) -> dict[str, Any]:
        steps = compile_contract(resolve_effective(silver / f"{name}.yaml").contract).of_kind(EvaluateSlos)
        return {o.objective: o for o in (steps[0].objectives if steps else ())}

    assert objectives("orders") == {}  # excluded from freshness, row_count and the anomaly check
    kept = objectives("customers")
    assert set(kept) == {"freshness", "row_count", "volume_anomaly"}
    assert kept["freshness"].candidates == ("loaded_at", "_lakelogic_processed_at")
    assert kept["volume_anomaly"].check_field == "counts_good"  # a column count is no run count


@pytest.mark.spark
def test_review_fixes_field_availability_is_this_runs_share_and_check_columns_fall_through(
    spark: Any,
) -> None:
    from datetime import UTC, datetime

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective

    target = spark.createDataFrame([("a", "2026-01-01 00:00:00")] * 3, "email string, seen string")
    batch = spark.createDataFrame([(None, None)], "email string, seen string")
    step = EvaluateSlos(
        yaml_path="slo",
        objectives=(
            SloObjective("availability", field="email", threshold=0.9),
            SloObjective("freshness", field="missing", threshold=3600, candidates=("missing", "seen")),
        ),
    )
    availability, freshness = evaluate_slos(
        step, published=lambda: target, batch=batch, report=_report(source=1, good=1),
        as_of=datetime(2026, 1, 1, 0, 30, tzinfo=UTC),
    )  # fmt: skip
    assert (availability.passed, availability.observed) == (False, 0.0)  # the batch's share, not the table's
    assert (freshness.passed, freshness.observed) == (True, 1800.0)  # measured on 'seen'


def test_warn_only_row_count_is_reported_with_severity_info_and_never_alerted(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from lakelogic.contract.hierarchy import resolve_effective
    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.notify.events import fired_events
    from lakelogic.plan.compiler import compile_contract
    from lakelogic.plan.steps import EvaluateSlos

    silver = _hierarchy(
        tmp_path,
        """\
        slo:
          row_count:
            silver: {min_rows: 100, warn_only: true, anomaly: {min_runs_before_enforcement: 1}}
        """,
    )
    [step] = compile_contract(resolve_effective(silver / "orders.yaml").contract).of_kind(EvaluateSlos)
    assert [(o.objective, o.warn_only) for o in step.objectives] == [
        ("row_count", True),
        ("volume_anomaly", True),
    ]
    report = _report(source=10, good=10, quarantined=0)
    [rows, _anomaly] = evaluate_slos(
        step, published=lambda: None, batch=None, report=report, as_of=datetime.now(UTC)
    )
    assert rows.passed is False and rows.severity == "info"
    report.service_levels = [rows]
    assert "slo_breach" not in fired_events(report)
    rows.severity = "warning"  # the same miss without warn_only alerts
    assert "slo_breach" in fired_events(report)


def test_warn_only_misses_never_alert_even_with_min_severity_low() -> None:
    from lakelogic.notify.alerting import Alerting

    low = Alerting(min_severity="low")
    assert not low.breached([{"passed": False, "severity": "info"}])
    assert low.breached([{"passed": False, "severity": "warning"}])


def test_the_api_records_the_runs_deliveries_so_repeated_breaches_are_suppressed(
    spark: Any, tmp_path: Path
) -> None:
    """The run-log row is written after the notifications, so it holds them, and the next run's
    duplicate-breach suppression (DRIVER §2.2 `suppress_duplicate_alerts_minutes`) can read them."""
    import json

    from lakelogic.api import DataProcessor
    from lakelogic.runlog import store_for_contract

    doc = contract(
        [{"name": "id", "type": "integer"}],
        materialization={"strategy": "append", "format": "delta"},
        metadata={"run_log_database": str(tmp_path / "runs.duckdb")},
        service_levels={"row_count": {"min_rows": 100}},
        quarantine={"notifications": [{"type": "console", "on_events": ["slo_breach"]}]},
    )
    target = str(tmp_path / "target")
    deliveries = []
    for _ in range(2):
        processor = DataProcessor(doc, spark=spark)
        processor.contract._hierarchy_slo = {"alerting": {"suppress_duplicate_alerts_minutes": 30}}
        report = processor.run(
            spark.createDataFrame([(1,)], "id INT"), materialize=True, target=target
        ).report
        deliveries.append([(n.event, n.delivered) for n in report.notifications])
        [row] = store_for_contract(processor.contract).query(contract=report.contract, last=1)
        logged = json.loads(row["report_json"]) if isinstance(row["report_json"], str) else row["report_json"]
        assert [n["event"] for n in logged["notifications"]] == ["slo_breach"]
    assert deliveries == [[("slo_breach", True)], [("slo_breach", False)]]
