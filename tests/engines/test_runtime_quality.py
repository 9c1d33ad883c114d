"""Row rules, severities, schema policies, status and gates of a run (SEMANTICS §7.1, §10, §11, §12, §22)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.helpers import contract, rows_of, run

pytestmark = pytest.mark.spark

FIELDS = [
    {"name": "id", "type": "integer", "required": True},
    {"name": "amount", "type": "double"},
    {"name": "code", "type": "string"},
]


def test_rules_attribute_every_failure_and_warnings_keep_rows(spark: Any) -> None:
    doc = contract(
        FIELDS,
        quality={
            "row_rules": [
                {"name": "amount_positive", "sql": "amount > 0"},
                {"name": "code_short", "sql": "length(code) <= 2"},
                {"name": "code_upper", "sql": "code = upper(code)", "severity": "warning"},
            ]
        },
    )
    rows = [
        {"id": 1, "amount": 5.0, "code": "AB"},
        {"id": 2, "amount": -1.0, "code": "ABC"},
        {"id": 3, "amount": 2.0, "code": "ab"},
        {"id": 4, "amount": None, "code": "A"},
    ]
    result = run(spark, doc, rows)
    report = result.report
    assert report.status == "succeeded"
    good, bad = result
    assert [r[0] for r in rows_of(good, "id")] == [1, 3]  # the warning failure (3) stays good
    errors = dict(rows_of(bad, "id", "_lakelogic_errors"))
    assert errors[2] == [
        "Rule failed: amount_positive (amount > 0)",
        "Rule failed: code_short (length(code) <= 2)",
    ]
    assert errors[4] == ["Rule failed: amount_positive (amount > 0)"]  # NULL fails
    assert dict(rows_of(bad, "id", "_lakelogic_categories"))[2] == ["correctness", "correctness"]
    failed = {r.name: r.failed for r in report.rules}
    assert failed["amount_positive"] == 2 and failed["code_short"] == 1 and failed["code_upper"] == 1
    assert (report.counts.source, report.counts.good, report.counts.quarantined) == (4, 2, 2)
    assert bad.columns[-4:] == [
        "_lakelogic_errors",
        "_lakelogic_categories",
        "_lakelogic_run_id",
        "_lakelogic_quarantined_at",
    ]
    assert {r[0] for r in rows_of(bad, "_lakelogic_run_id")} == {report.run_id}


def test_cast_failures_quarantine_with_schema_category(spark: Any) -> None:
    rows = [("1", "2.5", "x"), ("2", "abc", "y"), ("zz", "1", "z"), ("3", " ", "w")]
    result = run(spark, contract(FIELDS), rows, "id string, amount string, code string")
    good, bad = result
    assert rows_of(good, "id", "amount") == [(1, 2.5), (3, None)]  # blank text is NULL, not a failure
    errors = {tuple(r[1]) for r in rows_of(bad, "code", "_lakelogic_errors")}
    assert ('Rule failed: amount_type (cannot cast "abc" to double)',) in errors
    assert any(e[0] == 'Rule failed: id_type (cannot cast "zz" to integer)' for e in errors)
    failed = {r.name: (r.failed, r.category, r.origin) for r in result.report.rules}
    assert failed["amount_type"] == (1, "schema", "schema")
    # The required rule sees the failed cast as NULL: both reasons are carried.
    assert failed["id_required"][0] == 1
    assert good.schema["id"].dataType.simpleString() == "int"


def test_generated_type_rule_name_is_sanitised_like_the_others(spark: Any) -> None:
    """§10.4: invalid characters in generated names become ``_``, for ``<field>_type`` too."""
    fields = [{"name": "id", "type": "string"}, {"name": "my col", "type": "integer", "required": True}]
    result = run(spark, contract(fields), [("1", "x")], "id string, `my col` string")
    assert {r.name for r in result.report.rules} >= {"my_col_type", "my_col_required"}
    [errors] = [r[0] for r in rows_of(result.bad, "_lakelogic_errors")]
    assert 'Rule failed: my_col_type (cannot cast "x" to integer)' in errors


@pytest.mark.parametrize("output", ["memory", "files"])
def test_step_10_cast_failures_come_before_post_rule_messages(spark: Any, tmp_path: Any, output: str) -> None:
    """SEMANTICS §11: a row's messages list schema failures, then pre rules, then post rules."""
    doc = contract(
        FIELDS,
        transformations=[{"derive": {"field": "amount", "sql": "'abc'"}}],
        quality={"row_rules": [{"name": "id_big", "sql": "id > 5", "phase": "post"}]},
    )
    files = {"output_good": str(tmp_path / "g"), "output_bad": str(tmp_path / "b")}
    kwargs = {} if output == "memory" else files
    result = run(spark, doc, [{"id": 1, "amount": 1.0, "code": "a"}], **kwargs)
    bad = result.bad if output == "memory" else spark.read.parquet(str(tmp_path / "b"))
    assert [list(r[0]) for r in rows_of(bad, "_lakelogic_errors")] == [
        ['Rule failed: amount_type (cannot cast "abc" to double)', "Rule failed: id_big (id > 5)"]
    ]


def test_include_error_reason_false_shortens_messages(spark: Any) -> None:
    doc = contract(
        FIELDS,
        quality={"row_rules": [{"name": "amount_positive", "sql": "amount > 0"}]},
        quarantine={"include_error_reason": False},
    )
    _, bad = run(spark, doc, [{"id": 1, "amount": -1.0, "code": "a"}])
    assert rows_of(bad, "_lakelogic_errors") == [(["Rule failed: amount_positive"],)]


@pytest.mark.parametrize("policy", ["allow", "drop", "quarantine"])
def test_unknown_fields_policies(spark: Any, policy: str) -> None:
    doc = contract(FIELDS, schema_policy={"unknown_fields": policy})
    rows = [{"id": 1, "amount": 1.0, "code": "a", "extra": "e"}, {"id": 2, "amount": 1.0, "code": "b"}]
    result = run(spark, doc, rows)
    good, bad = result
    assert result.report.schema_drift.unknown_fields == ["extra"]
    if policy == "allow":
        assert good.columns == ["id", "amount", "code", "extra"]
        assert result.report.counts.good == 2
    elif policy == "drop":
        assert good.columns == ["id", "amount", "code"]
        assert result.report.counts.good == 2
    else:
        assert good.columns == ["id", "amount", "code"]
        assert rows_of(good, "id") == [(2,)]
        assert rows_of(bad, "_lakelogic_errors") == [(["Rule failed: unknown_fields (extra)"],)]


def test_missing_required_column_fails_the_run_and_absent_optional_is_null(spark: Any) -> None:
    result = run(spark, contract(FIELDS), [{"amount": 1.0}, {"amount": 2.0}])
    assert result.report.status == "failed"
    assert result.report.error is not None and result.report.error.type == "missing_required_column"
    assert "id" in result.report.error.message
    assert result.report.counts.source == 2  # §12: the rows read at step 1, on a failed run too
    ok = run(spark, contract(FIELDS), [{"id": 1}])
    good, _ = ok
    assert ok.report.status == "succeeded"
    assert ok.report.schema_drift.missing_fields == ["amount", "code"]
    assert rows_of(good, "id", "amount", "code") == [(1, None, None)]
    assert good.schema["amount"].dataType.simpleString() == "double"


def test_dataset_rules_partial_status_and_halt(spark: Any) -> None:
    rules = {
        "dataset_rules": [
            {"unique": "id"},
            {"null_ratio": {"field": "code", "max": 0.9}},
            {"row_count_between": {"min": 1, "max": 2}, "severity": "warning"},
        ]
    }
    rows = [{"id": 1, "code": "a"}, {"id": 1, "code": None}, {"id": 2, "code": "c"}]
    result = run(spark, contract(FIELDS, quality=rules), rows)
    assert result.report.status == "partial"
    by_name = {r.generated_name: r for r in result.report.dataset_rules}
    assert by_name["id_unique"].passed is False and by_name["id_unique"].observed == 1
    assert by_name["code_null_ratio"].passed is True
    assert by_name["row_count_between"].passed is False and by_name["row_count_between"].severity == "warning"
    assert result.report.counts.quarantined == 0  # dataset rules never quarantine

    halting = contract(FIELDS, quality={**rules, "fail_pipeline_on_dataset_error": True})
    halted = run(spark, halting, rows)
    assert halted.report.status == "failed" and halted.report.error is not None
    assert halted.report.error.type == "dataset_rule_halt"


def test_all_rows_quarantined_is_partial_and_disabled_quarantine_fails(spark: Any) -> None:
    rules = {"row_rules": [{"name": "never", "sql": "amount > 100"}]}
    rows = [{"id": 1, "amount": 1.0}]
    assert run(spark, contract(FIELDS, quality=rules), rows).report.status == "partial"
    disabled = run(spark, contract(FIELDS, quality=rules, quarantine={"enabled": False}), rows)
    assert disabled.report.status == "failed" and disabled.report.error is not None
    assert disabled.report.error.type == "quarantine_halt"
    fail_on = run(spark, contract(FIELDS, quality=rules, quarantine={"fail_on_quarantine": True}), rows)
    assert fail_on.report.error is not None and fail_on.report.error.type == "quarantine_halt"


def test_counts_reconcile_with_filter_dedup_and_explode(spark: Any) -> None:
    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "tag", "type": "string"}],
        transformations=[
            {"filter": {"sql": "id < 10"}},
            {"deduplicate": {"on": ["id"]}},
            {"explode": {"field": "tags", "output": "tag"}},
        ],
        quality={"row_rules": [{"name": "tag_not_b", "sql": "tag <> 'b'"}]},
    )
    rows = [
        {"id": 1, "tags": ["a", "b"]},
        {"id": 1, "tags": ["a", "b"]},
        {"id": 2, "tags": ["c"]},
        {"id": 50, "tags": ["z"]},
    ]
    report = run(spark, doc, rows).report
    c = report.counts
    assert (c.source, c.filtered, c.deduplicated, c.expanded, c.good, c.quarantined) == (4, 2, 1, 1, 2, 1)
    assert c.reconciles()


def test_rule_on_a_column_the_frame_lacks_is_a_plan_error_naming_the_rule(spark: Any) -> None:
    """Analysis fails before any row is read; the error names the rule and its YAML path, not Spark."""
    rules = [
        {"name": "amount_positive", "sql": "amount > 0"},
        {"name": "ghost_rule", "sql": "no_such_column > 0"},
    ]
    doc = contract(FIELDS, quality={"row_rules": rules})
    report = run(spark, doc, [{"id": 1, "amount": 5.0, "code": "AB"}]).report
    assert report.status == "failed" and report.error is not None
    assert report.error.type == "plan"
    assert "quality.row_rules[1]" in report.error.message
    assert "ghost_rule" in report.error.message and "no_such_column" in report.error.message


def test_timings_hold_every_report_step(spark: Any) -> None:
    from lakelogic.report import TIMING_STEPS

    doc = contract(FIELDS, quality={"row_rules": [{"name": "amount_positive", "sql": "amount > 0"}]})
    report = run(spark, doc, [{"id": 1, "amount": 5.0, "code": "AB"}]).report
    assert set(TIMING_STEPS) <= set(report.timings)
    assert all(seconds >= 0 for seconds in report.timings.values())
    # planning the steps takes time; steps the contract lacks were not timed
    assert report.timings["schema"] > 0 and report.timings["pre_quality"] > 0
    assert report.timings["extraction"] == 0 and report.timings["external_logic"] == 0


@pytest.mark.parametrize("declared", [False, True])
def test_a_rule_on_a_column_a_post_sql_op_creates_runs_post(spark: Any, declared: bool) -> None:
    """§10.2: a rule without a phase reads a column only a post op creates -> post. A `sql` op's output
    is known only at run time, so the engine decides; a model column it creates is not NULL-filled first."""
    fields = [
        {"name": "id", "type": "integer"},
        {"name": "qty", "type": "integer"},
        {"name": "price", "type": "double"},
    ]
    if declared:
        fields.append({"name": "line_total", "type": "double"})
    doc = contract(
        fields,
        transformations=[{"sql": "SELECT *, qty * price AS line_total FROM source"}],
        quality={"row_rules": [{"name": "line_total_positive", "sql": "line_total > 0"}]},
    )
    result = run(spark, doc, [{"id": 1, "qty": 2, "price": 5.0}, {"id": 2, "qty": 0, "price": 5.0}])
    assert result.report.status == "succeeded", result.report.error
    assert rows_of(result.good, "id", "line_total") == [(1, 10.0)]
    assert rows_of(result.bad, "id") == [(2,)]
    rule = next(r for r in result.report.rules if r.name == "line_total_positive")
    assert (rule.phase, rule.failed) == ("post", 1)


def test_post_rules_see_post_op_values_before_the_final_cast(spark: Any) -> None:
    """§8: post rules (step 9) run before the model types are restored (step 10): a value that fails the
    re-cast is reported by `<f>_type` only, not also by a post rule that saw it as NULL."""
    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "v", "type": "integer"}],
        transformations=[
            {"derive": {"field": "v", "sql": "CASE WHEN id = 1 THEN 'oops' ELSE '7' END"}, "phase": "post"}
        ],
        quality={"row_rules": [{"name": "sees_text", "sql": "v IS NOT NULL", "phase": "post"}]},
    )
    result = run(spark, doc, [{"id": 1, "v": 1}, {"id": 2, "v": 2}])
    assert rows_of(result.good, "id", "v") == [(2, 7)]
    bad = result.bad.collect()
    assert [r["_lakelogic_errors"] for r in bad] == [['Rule failed: v_type (cannot cast "oops" to integer)']]
    assert next(r for r in result.report.rules if r.name == "sees_text").failed == 0


@pytest.mark.parametrize(
    ("codes", "expected_good"),
    [([("A",)], [(2,)]), ([("A",), (None,)], []), ([], [(1,), (2,), (3,)])],
)
def test_a_not_in_subquery_rule_keeps_sql_null_semantics(
    spark: Any, tmp_path: Any, codes: list[Any], expected_good: list[Any]
) -> None:
    """§0/§10.2: `x NOT IN (SELECT k FROM link)` as Spark SQL evaluates it: NULL (a failure) for an
    unmatched or NULL x when the link's key holds a NULL or x is NULL; TRUE for anything against an
    empty link."""
    link = tmp_path / "codes"
    spark.createDataFrame(codes, "code string").write.parquet(str(link))
    doc = contract(
        [{"name": "id", "type": "integer"}, {"name": "code", "type": "string"}],
        links=[{"name": "codes", "path": str(link), "type": "parquet"}],
        quality={"row_rules": [{"name": "not_blocked", "sql": "code NOT IN (SELECT code FROM codes)"}]},
    )
    result = run(spark, doc, [{"id": 1, "code": "A"}, {"id": 2, "code": "Z"}, {"id": 3, "code": None}])
    assert result.report.error is None, result.report.error
    assert rows_of(result.good, "id") == expected_good
    frame = spark.createDataFrame([(1, "A"), (2, "Z"), (3, None)], "id int, code string")
    spark.read.parquet(str(link)).createOrReplaceTempView("codes_view")
    frame.createOrReplaceTempView("rows_view")
    plain = spark.sql("SELECT id FROM rows_view WHERE code NOT IN (SELECT code FROM codes_view)")
    assert sorted(tuple(r) for r in plain.collect()) == expected_good, "the expectation is Spark's own"


def test_contract_sql_failing_while_running_is_a_failed_run_not_a_crash(spark: Any) -> None:
    """§22: every run yields a report; `raise_error` in a rule is the contract's doing, not a crash."""
    doc = contract(
        [{"name": "id", "type": "integer"}],
        quality={"row_rules": [{"name": "r", "sql": "raise_error('no negative ids') IS NULL OR id > 0"}]},
    )
    result = run(spark, doc, [{"id": 1}, {"id": -1}])
    assert result.report.status == "failed" and result.report.error is not None
    assert result.report.error.type == "engine"
    assert "the contract's SQL failed while running" in result.report.error.message
    assert "no negative ids" in result.report.error.message
    assert result.report.title == "Engine test"


def test_a_run_failing_before_its_plan_exists_still_has_its_identity(spark: Any) -> None:
    """§22 identity fields on a run whose plan fails (a rule on a column unknown_fields removes)."""
    doc = contract(
        [{"name": "id", "type": "integer"}],
        schema_policy={"unknown_fields": "quarantine"},
        quality={"row_rules": [{"accepted_values": {"field": "v", "values": ["x"]}}]},
    )
    doc["info"] |= {"version": "3.1.0", "target_layer": "silver"}
    report = run(spark, doc, [{"id": 1, "v": "x"}]).report
    assert report.status == "failed" and report.error is not None and report.error.type == "plan"
    assert (report.title, report.table_name, report.contract_version, report.layer) == (
        "Engine test",
        "engine_test",
        "3.1.0",
        "silver",
    )
