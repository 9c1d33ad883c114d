"""OLC conformance, level core-runtime: every case under ../shared/olc/conformance/cases runs through the
public API (``DataProcessor(contract).run(frame)``) and is compared per SEMANTICS §23: row and column
order ignored, numbers to 1e-6, dates/timestamps by date, rows projected to the model's field names.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.spark

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "olc" / "conformance" / "cases"


def cases_at_level(root: Path, level: str) -> list[Path]:
    """Case folders under ``root`` whose case.yaml declares ``level`` (sorted by folder name)."""
    if not root.is_dir():
        return []
    found = []
    for case in sorted(root.iterdir()):
        meta = case / "case.yaml"
        if meta.is_file() and yaml.safe_load(meta.read_text()).get("level") == level:
            found.append(case)
    return found


def _core_cases() -> list[Path]:
    return cases_at_level(CASES, "core-runtime")


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()[:10]
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _norm(value.asDict(recursive=True))
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, str) and isinstance(b, str) and len(a) >= 10 and len(b) >= 10 and a[4] == "-" == b[4]:
        return a[:10] == b[:10] if "T" in a + b or " " in a + b else a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _sort_key(row: dict[str, Any]) -> str:
    def rounded(v: Any) -> Any:
        return round(v, 6) if isinstance(v, float) else v

    return json.dumps({k: rounded(v) for k, v in sorted(row.items())}, default=str, sort_keys=True)


def _project(rows: list[dict[str, Any]], fields: list[str]) -> list[dict[str, Any]]:
    return sorted(({f: _norm(r.get(f)) for f in fields} for r in rows), key=_sort_key)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _assert_rows(actual: list[dict[str, Any]], expected: list[dict[str, Any]], what: str) -> None:
    assert len(actual) == len(expected), f"{what}: {len(actual)} rows, expected {len(expected)}\n{actual}"
    for got, want in zip(actual, expected, strict=True):
        mismatched = {k: (got.get(k), want.get(k)) for k in want if not _same(got.get(k), want.get(k))}
        assert not mismatched, f"{what}: row differs (got, expected): {mismatched}\nrow: {got}"


def run_core_case(case: Path, spark: Any) -> None:
    """Run one core-runtime case through ``DataProcessor(contract).run(frame)`` and check its expectations."""
    from lakelogic import DataProcessor

    meta = yaml.safe_load((case / "case.yaml").read_text())
    contract_path = case / "contract.olc.yaml"
    raw_contract = yaml.safe_load(contract_path.read_text())
    overrides = {"external_logic.engine": "spark"} if "external_logic" in raw_contract else None
    frame = spark.read.json(str(case / meta.get("input", "input.jsonl")))

    result = DataProcessor(contract_path, spark=spark, overrides=overrides).run(frame)
    report = result.report
    assert report.status != "failed", f"run failed: {report.error}"
    fields = [f["name"] for f in raw_contract["model"]["fields"]]

    expected = meta.get("expected") or {}
    good, bad = result
    assert good is not None and bad is not None
    if "accepted" in expected:
        want = _project(_read_jsonl(case / expected["accepted"]), fields)
        _assert_rows(_project([r.asDict(recursive=True) for r in good.collect()], fields), want, "accepted")
    if "quarantined" in expected:
        want = _project(_read_jsonl(case / expected["quarantined"]), fields)
        _assert_rows(_project([r.asDict(recursive=True) for r in bad.collect()], fields), want, "quarantined")

    checks = meta.get("assertions") or {}
    if "rows_input" in checks:
        assert report.counts.source == checks["rows_input"]
    if "rows_accepted" in checks:
        assert report.counts.good == checks["rows_accepted"]
    if "rows_quarantined" in checks:
        assert report.counts.quarantined == checks["rows_quarantined"]
    failed_by_rule = {r.name: r.failed for r in report.rules}
    for rule, count in (checks.get("failed_rules") or {}).items():
        assert failed_by_rule.get(rule) == count, f"rule {rule}: {failed_by_rule}"
    if "dataset_rules_failed" in checks:
        failed = {n for r in report.dataset_rules if r.passed is False for n in (r.name, r.generated_name)}
        for name in checks["dataset_rules_failed"]:
            assert name in failed, f"dataset rule {name} should fail: {report.dataset_rules}"
    _check_extra_assertions(checks, report, good, bad)
    # Reconciliation holds on every run (SEMANTICS §12).
    assert report.counts.reconciles()


_RULE_NAME = re.compile(r"^Rule failed: ([A-Za-z0-9_.-]+)")


def _check_extra_assertions(checks: dict[str, Any], report: Any, good: Any, bad: Any) -> None:
    """Optional assertion keys beyond the corpus sample's (absent keys check nothing)."""
    counts = report.counts
    for key, attr in (("rows_filtered", "filtered"), ("rows_expanded", "expanded")):
        if key in checks:
            assert getattr(counts, attr) == checks[key], f"{key}: {counts}"
    if "rows_deduplicated" in checks:
        assert counts.deduplicated == checks["rows_deduplicated"], f"rows_deduplicated: {counts}"
    if "dataset_rules_passed" in checks:
        passed = {n for r in report.dataset_rules if r.passed is True for n in (r.name, r.generated_name)}
        for name in checks["dataset_rules_passed"]:
            assert name in passed, f"dataset rule {name} should pass: {report.dataset_rules}"
    for needle in checks.get("warnings_contain") or []:
        assert any(needle in w for w in report.warnings), f"no warning mentions {needle}: {report.warnings}"
    for column in checks.get("absent_columns") or []:
        assert column not in good.columns, f"column {column} should be absent: {good.columns}"
    phases = {r.name: r.phase for r in report.rules}
    for rule, phase in (checks.get("rule_phases") or {}).items():
        assert phases.get(rule) == phase, f"rule {rule} phase: {phases}"
    reasons = checks.get("quarantine_reasons")
    if reasons:
        key = reasons["key"]
        rows = {str(r[key]): r.asDict(recursive=True) for r in bad.collect()}
        for value, names in (reasons.get("rules") or {}).items():
            row = rows.get(str(value))
            assert row is not None, f"no quarantined row with {key}={value}: {sorted(rows)}"
            got = [m.group(1) for e in row["_lakelogic_errors"] or [] if (m := _RULE_NAME.match(e))]
            assert got == names, f"{key}={value}: errors {row['_lakelogic_errors']}, expected rules {names}"
        for value, categories in (reasons.get("categories") or {}).items():
            row = rows[str(value)]
            got = list(row["_lakelogic_categories"] or [])
            assert got == categories, f"{key}={value}: categories {got}, expected {categories}"


@pytest.mark.parametrize("case", _core_cases(), ids=lambda p: p.name)
def test_core_runtime_case(case: Path, spark: Any) -> None:
    run_core_case(case, spark)


def test_corpus_present_or_skipped(shared_dir: Path) -> None:
    """Without ../shared the parametrized cases are absent; this makes the skip visible."""
    assert _core_cases(), f"no core-runtime cases found under {CASES}"
