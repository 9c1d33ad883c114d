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


def test_availability_without_a_field_is_the_share_of_good_runs_in_30_days() -> None:
    from datetime import UTC, datetime, timedelta

    from lakelogic.engines.spark.slos import evaluate_slos
    from lakelogic.plan.steps import EvaluateSlos, SloObjective
    from lakelogic.report import RunReport
    from lakelogic.types import RunStatus

    as_of = datetime(2024, 3, 31, tzinfo=UTC)
    asked: list[Any] = []

    def history(contract: str, since: datetime) -> list[str]:
        asked.append((contract, since))
        return ["succeeded", "failed", "no_new_data", "failed"]

    report = RunReport(run_id="r", contract="orders")
    report.status = RunStatus.PARTIAL
    step = EvaluateSlos(yaml_path="service_levels", objectives=(SloObjective("availability", threshold=0.6),))
    (result,) = evaluate_slos(
        step, published=lambda: None, batch=None, report=report, as_of=as_of, history=history
    )
    assert (result.passed, result.observed) == (True, 0.6)  # 3 of 5 runs, this one included
    assert asked == [("orders", as_of - timedelta(days=30))]
