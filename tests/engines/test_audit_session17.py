"""Findings of the session-17 spec audit, each checked through a run (SEMANTICS §5.3, §7.1, §8, §9, §10.5)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark

ID = {"name": "id", "type": "string"}


def _failed(result: Any) -> dict[str, int]:
    return {r.name: r.failed for r in result.report.rules if r.failed}


@pytest.mark.parametrize(
    ("later_op", "good_columns"),
    [
        ({"coalesce": {"field": "qty", "default": 0}}, ("id", "qty")),
        ({"map_values": {"field": "qty", "mapping": {"5": 50}, "default": 0}}, ("id", "qty")),
        ({"rename": {"from": "qty", "to": "quantity"}}, ("id", "quantity")),
        ({"drop": {"columns": ["qty"]}}, ("id",)),
    ],
    ids=["coalesce", "map_values", "rename", "drop"],
)
def test_a_cast_op_failure_survives_later_ops_on_the_column(
    spark: Any, later_op: dict[str, Any], good_columns: tuple[str, ...]
) -> None:
    """§9.2 `cast`: a failure quarantines as `<col>_type`; §9.1: later ops read the cast's output, so a
    default filled in, a rename or a drop must not hide the failure or break the run."""
    doc = contract([ID], transformations=[{"cast": {"columns": {"qty": "integer"}}}, later_op])
    result = run(spark, doc, [{"id": "a", "qty": "abc"}, {"id": "b", "qty": "5"}])
    assert result.report.error is None
    assert _failed(result) == {"qty_type": 1}
    assert [r[0] for r in rows_of(result.good, *good_columns)] == ["b"]
    assert rows_of(result.bad, "id", "_lakelogic_errors") == [
        ("a", ['Rule failed: qty_type (cannot cast "abc" to integer)'])
    ]


def test_a_post_cast_failure_survives_a_post_derive_over_it(spark: Any) -> None:
    doc = contract(
        [ID],
        transformations=[
            {"cast": {"columns": {"score": "integer"}}, "phase": "post"},
            {"derive": {"field": "score", "sql": "coalesce(score, -1)"}, "phase": "post"},
        ],
    )
    result = run(spark, doc, [{"id": "a", "score": "x"}, {"id": "b", "score": "3"}])
    assert _failed(result) == {"score_type": 1}
    assert rows_of(result.good, "id", "score") == [("b", 3)]


def test_columns_pre_ops_only_change_stay_unknown_under_quarantine(spark: Any) -> None:
    """§7.1: unknown columns came from the source and survive the pre ops; a `trim` or `cast` of such a
    column does not make it the contract's own (a `derive` of a new column does)."""
    doc = contract(
        [ID],
        schema_policy={"unknown_fields": "quarantine"},
        transformations=[
            {"trim": {"fields": ["note"]}},
            {"cast": {"columns": {"tmp": "integer"}}},
            {"derive": {"field": "made", "sql": "1"}},
        ],
    )
    rows = [{"id": "a", "note": " x ", "tmp": None}, {"id": "b", "note": None, "tmp": "1"}, {"id": "c"}]
    result = run(spark, doc, rows, "id string, note string, tmp string")
    assert rows_of(result.bad, "id", "_lakelogic_errors") == [
        ("a", ["Rule failed: unknown_fields (note)"]),
        ("b", ["Rule failed: unknown_fields (tmp)"]),
    ]
    assert result.report.schema_drift.unknown_fields == ["note", "tmp"]
    assert rows_of(result.good, "id", "made") == [("c", 1)]


def test_a_post_op_changing_an_absent_optional_field_sees_a_typed_null(spark: Any) -> None:
    """§8 step 5: an absent non-required model column is added as NULL unless a post op *creates* it;
    a post `lower` only changes it."""
    doc = contract(
        [ID, {"name": "nickname", "type": "string"}],
        transformations=[{"lower": {"fields": ["nickname"]}, "phase": "post"}],
    )
    result = run(spark, doc, [{"id": "a"}])
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id", "nickname") == [("a", None)]


def test_a_bare_dataset_rule_names_the_good_rows_source(spark: Any) -> None:
    """§10.5: a bare expression is `SELECT <expr> FROM source`, so `source.amount` resolves."""
    doc = contract(
        [ID, {"name": "amount", "type": "integer"}],
        quality={"dataset_rules": [{"name": "no_negative", "sql": "COUNT_IF(source.amount < 0) = 0"}]},
    )
    result = run(spark, doc, [{"id": "a", "amount": 1}, {"id": "b", "amount": -2}])
    assert [(r.name, r.passed) for r in result.report.dataset_rules] == [("no_negative", False)]


def test_a_dataset_rule_yielding_a_number_without_bounds_is_a_plan_error(spark: Any) -> None:
    """§10.5: a number without bounds is a plan error, also where only its type tells (`max`)."""
    doc = contract(
        [ID, {"name": "amount", "type": "integer"}],
        quality={"dataset_rules": [{"name": "max_amount", "sql": "max(amount)"}]},
    )
    result = run(spark, doc, [{"id": "a", "amount": 1}])
    assert result.report.status == "failed"
    assert result.report.error is not None and result.report.error.type == "plan"
    assert "quality.dataset_rules[0]" in result.report.error.message
    assert "yields int, not a boolean" in result.report.error.message


def test_unpivot_counts_rows_without_values_as_filtered_and_extra_rows_as_expanded(spark: Any) -> None:
    """§9.1/§12: removed rows count as `filtered`, added rows as `expanded`, per row, not the net change
    (rows yielding 2, 0 and 1 rows: one filtered, one expanded; the net change alone would be zero)."""
    doc = contract(
        [ID, {"name": "key", "type": "string"}, {"name": "value", "type": "integer"}],
        transformations=[{"unpivot": {"id_vars": ["id"], "value_vars": ["a", "b"]}, "phase": "pre"}],
    )
    rows = [{"id": "x", "a": 1, "b": 2}, {"id": "y", "a": None, "b": None}, {"id": "z", "a": 3, "b": None}]
    result = run(spark, doc, rows, "id string, a int, b int")
    counts = result.report.counts
    assert (counts.source, counts.good, counts.filtered, counts.expanded) == (3, 3, 1, 1)
    assert rows_of(result.good, "id", "key", "value") == [("x", "a", 1), ("x", "b", 2), ("z", "a", 3)]


def test_a_masked_fields_cast_failure_shows_its_raw_value_masked_as_json(spark: Any) -> None:
    """§5.3: the message quotes the raw value masked as the field's strategy masks it (§5.4), as JSON."""
    import hashlib
    import os

    salt = os.environ.get("LAKELOGIC_PII_SALT", "")
    fields = [ID] + [
        {"name": name, "type": "integer", "masking": strategy}
        for name, strategy in (("r", "redact"), ("n", "nullify"), ("p", "partial"), ("h", "hash"))
    ]
    result = run(
        spark, contract(fields), [{"id": "a", "r": "12-34", "n": "12-34", "p": "12-34", "h": "12-34"}]
    )
    digest = hashlib.sha256((salt + "12-34").encode()).hexdigest()
    assert rows_of(result.bad, "_lakelogic_errors") == [
        (
            [
                'Rule failed: r_type (cannot cast "***REDACTED***" to integer)',
                "Rule failed: n_type (cannot cast null to integer)",
                'Rule failed: p_type (cannot cast "1***4" to integer)',
                f'Rule failed: h_type (cannot cast "{digest}" to integer)',
            ],
        )
    ]


def test_a_text_default_of_a_non_text_column_makes_text_not_a_crash(spark: Any) -> None:
    """§9.2 `coalesce`: `COALESCE(field, default)`; a boolean and a text default have no common type in
    Spark, so the result is text (the boolean written as §5.3 writes it), not an analysis error."""
    doc = contract(
        [ID, {"name": "state", "type": "string"}],
        transformations=[{"coalesce": {"field": "active", "default": "unknown", "output": "state"}}],
    )
    result = run(spark, doc, [{"id": "a", "active": True}, {"id": "b", "active": None}])
    assert result.report.error is None
    assert rows_of(result.good, "id", "state") == [("a", "true"), ("b", "unknown")]
