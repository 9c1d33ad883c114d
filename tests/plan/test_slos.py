"""`service_levels` compiled into objectives (SEMANTICS §15), without an engine."""

from __future__ import annotations

import pytest

from lakelogic.errors import PlanError
from lakelogic.plan.slos import duration_seconds
from lakelogic.plan.steps import EvaluateSlos
from tests.plan.builders import compile_doc, contract_doc


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("15m", 900), ("6h", 21_600), ("1d", 86_400), ("2w", 1_209_600), (6, 21_600),
     (1.5, 5_400), ("PT6H", 21_600), ("P1DT2H30M", 95_400), ("P2W", 1_209_600), ("PT0.5S", 0.5)],
)  # fmt: skip
def test_durations(text: object, seconds: float) -> None:
    assert duration_seconds(text, "service_levels.freshness") == seconds


@pytest.mark.parametrize("text", ["soon", "6x", "P", "PT", "", True])
def test_bad_durations_name_the_yaml_path(text: object) -> None:
    with pytest.raises(PlanError, match=r"service_levels\.freshness: .* is not a duration"):
        duration_seconds(text, "service_levels.freshness")


def test_objectives_compile_with_their_defaults() -> None:
    doc = contract_doc(
        service_levels={
            "freshness": {"threshold": "2h", "field": "updated_at"},
            "availability": 99.5,
            "row_count": {"min_rows": 10},
        }
    )
    steps = compile_doc(doc).of_kind(EvaluateSlos)
    assert len(steps) == 1
    fresh, avail, rows = steps[0].objectives
    assert (fresh.objective, fresh.field, fresh.threshold) == ("freshness", "updated_at", 7200)
    assert (avail.field, avail.threshold) == (None, pytest.approx(0.995))
    assert (rows.min_rows, rows.max_rows, rows.check_field) == (10, None, "counts_good")
    plain = compile_doc(contract_doc(service_levels={"freshness": "30m"})).of_kind(EvaluateSlos)[0]
    assert plain.objectives[0].field == "_lakelogic_processed_at"
    with pytest.raises(PlanError, match=r"service_levels\.availability"):
        compile_doc(contract_doc(service_levels={"availability": 250}))


def test_every_objective_problem_is_reported() -> None:
    from lakelogic.errors import PlanErrors

    doc = contract_doc(
        service_levels={
            "freshness": "5 parsecs",
            "availability": 250,
            "row_count": {"min_rows": 10, "max_rows": 5, "check_field": "counts_bogus"},
        }
    )
    with pytest.raises(PlanErrors) as caught:
        compile_doc(doc)
    assert [e.yaml_path for e in caught.value.errors] == [
        "service_levels.freshness",
        "service_levels.availability",
        "service_levels.row_count.min_rows",
    ]
    doc["service_levels"] = {"row_count": {"min_rows": 1, "check_field": "counts_bogus"}}
    with pytest.raises(PlanError, match="check_field 'counts_bogus' names no run count"):
        compile_doc(doc)
