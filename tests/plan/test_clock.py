"""pin_clock: every job of one run must see the same "now" (the run's as_of)."""

from __future__ import annotations

from datetime import UTC, datetime

from lakelogic.plan.clock import pin_clock, pin_sql
from lakelogic.plan.steps import Plan, RowRule, Transform, ValidateRows
from lakelogic.types import Phase, Severity

AS_OF = datetime(2026, 11, 21, 7, 15, 30, 123456, tzinfo=UTC)


def test_clock_functions_become_literals_of_as_of() -> None:
    assert pin_sql("order_ts <= current_timestamp()", AS_OF) == (
        "order_ts <= CAST('2026-11-21 07:15:30.123456' AS TIMESTAMP)"
    )
    assert "CAST('2026-11-21' AS DATE)" in pin_sql("d < current_date", AS_OF)
    assert "2026-11-21 07:15:30.123456" in pin_sql("x > now()", AS_OF)


def test_sql_without_a_clock_call_is_left_exactly_as_written() -> None:
    for sql in ("amount >= 0", "note = 'now()'", "current_date_field IS NOT NULL", "not sql ((("):
        assert pin_sql(sql, AS_OF) == sql


def test_pin_clock_rewrites_rules_and_op_parameters_only() -> None:
    rule = RowRule(
        name="not_in_future",
        predicate="ts <= current_timestamp()",
        category="correctness",
        severity=Severity.ERROR,
        phase=Phase.PRE,
        origin="declared",
        yaml_path="quality.row_rules[0]",
    )
    derive = Transform(
        yaml_path="transformations[0]",
        index=0,
        op="derive",
        phase=Phase.POST,
        params={"field": "age_days", "sql": "datediff(current_date(), born)"},
    )
    plan = Plan(
        contract_name="c",
        title="C",
        table_name="c",
        version="1.0.0",
        layer=None,
        domain=None,
        system=None,
        steps=(ValidateRows(yaml_path="quality", phase=Phase.PRE, rules=(rule,)), derive),
    )
    pinned = pin_clock(plan, AS_OF)
    [validate, op] = pinned.steps
    assert isinstance(validate, ValidateRows) and isinstance(op, Transform)
    assert "current_timestamp" not in validate.rules[0].predicate.lower()
    assert validate.rules[0].name == "not_in_future"
    assert op.params["sql"] == "DATEDIFF(CAST('2026-11-21' AS DATE), born)"
    assert op.params["field"] == "age_days"
    assert plan.steps[0] is not validate  # the original plan is untouched (frozen steps)
