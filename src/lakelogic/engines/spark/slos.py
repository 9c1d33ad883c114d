"""Step 15 service levels (SEMANTICS §15): measured on the published target (the good rows when nothing
was materialized) and reported; a breach never changes the run's status.

One small aggregate per objective that needs data (freshness: MAX(field); availability with a field:
COUNT(field)/COUNT(*)); row counts come from the run's own counts. An objective that cannot be measured
(its column is absent, no run history) is reported with ``passed: null`` and a warning saying why.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from statistics import mean, median
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.errors import LakeLogicError
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import EvaluateSlos, SloObjective
from lakelogic.report import RunReport, ServiceLevelResult

AVAILABLE_STATUSES = ("succeeded", "partial", "no_new_data")
HISTORY_DAYS = 30

# (contract, since) -> the contract's earlier run-log rows (status, started_at, counts_*), newest first;
# None when there is no run log
RunHistory = Callable[[str, datetime], list[dict[str, Any]] | None]


def evaluate_slos(
    step: EvaluateSlos,
    *,
    published: Callable[[], DataFrame | None],
    batch: DataFrame | None,
    report: RunReport,
    as_of: datetime,
    history: RunHistory | None = None,
) -> list[ServiceLevelResult]:
    """``published``: the target after the commit, or the good rows (None when there is neither);
    ``batch``: this run's good rows."""
    frame: DataFrame | None = None
    fetched = False
    results = []
    for objective in step.objectives:
        try:
            if objective.objective == "availability" and objective.field is None:
                results.append(_run_availability(objective, report, as_of, history))
                continue
            if objective.objective == "completeness":
                results.append(_completeness(objective, report))
                continue
            if objective.objective == "volume_anomaly":
                results.append(_volume_anomaly(objective, report, as_of, history))
                continue
            if objective.objective == "row_count":
                counted = _row_count(objective, report)
                if counted is not None:
                    results.append(counted)
                    continue
            if objective.objective == "availability":  # a field's share in this run's good rows
                results.append(_measured(objective, batch, report, as_of))
                continue
            if not fetched:
                frame, fetched = published(), True
            if objective.objective == "row_count":
                results.append(_rows_for_batch_values(objective, frame, batch, report))
            else:
                results.append(_measured(objective, frame, report, as_of))
        except Exception as exc:  # noqa: BLE001 - monitoring must not fail a committed run; reported
            results.append(_unmeasured(objective, report, f"{type(exc).__name__}: {exc}".splitlines()[0]))
    for objective, result in zip(step.objectives, results, strict=True):
        if objective.warn_only:  # hierarchy row_count warn_only: reported, never alerted
            result.severity = "info"
    return results


def _result(o: SloObjective, passed: bool | None, observed: object, threshold: object) -> ServiceLevelResult:
    return ServiceLevelResult(objective=o.objective, passed=passed, observed=observed, threshold=threshold)


def _unmeasured(o: SloObjective, report: RunReport, why: str) -> ServiceLevelResult:
    report.warnings.append(f"slo_unmeasured: {o.objective}: {why}")
    return _result(o, None, None, _threshold(o))


def _threshold(o: SloObjective) -> object:
    """As measured results give it: seconds, a ratio, or the row bounds."""
    if o.objective == "row_count":
        return {"min_rows": o.min_rows, "max_rows": o.max_rows}
    return o.threshold


def _measured(
    o: SloObjective, frame: DataFrame | None, report: RunReport, as_of: datetime
) -> ServiceLevelResult:
    if frame is None:
        if o.objective == "freshness":  # nothing published or read: no rows, and no rows = breach
            return _result(o, False, None, o.threshold)
        return _unmeasured(o, report, "no rows to measure")
    # hierarchy check_columns: the first one present wins
    field = next((c for c in o.candidates if c in frame.columns), o.field or "")
    if field not in frame.columns:
        if o.objective == "freshness" and frame.isEmpty():  # §15: no rows = breach, column or not
            return _result(o, False, None, o.threshold)
        return _unmeasured(o, report, f"column {field!r} is not in the published data")
    column = F.col(quote_ident(field))
    if o.objective == "freshness":
        # epoch microseconds: PySpark would hand a timestamp back in the driver's local zone
        row = frame.agg(F.unix_micros(F.max(column.cast("timestamp"))).alias("latest")).first()
        latest = row["latest"] if row is not None else None
        if latest is None:  # no rows: nothing is fresh
            return _result(o, False, None, o.threshold)
        age = as_of.timestamp() - latest / 1_000_000
        return _result(o, age <= (o.threshold or 0), round(age, 3), o.threshold)
    row = frame.agg(F.count(column).alias("present"), F.count(F.lit(1)).alias("rows")).first()
    if row is None or not row["rows"]:
        return _unmeasured(o, report, "no rows to measure")
    share = row["present"] / row["rows"]
    return _result(o, share >= (o.threshold or 0), round(share, 6), o.threshold)


def _row_count(o: SloObjective, report: RunReport) -> ServiceLevelResult | None:
    """The run's own count (``counts_*``); None when the objective counts target rows by a column."""
    threshold = {"min_rows": o.min_rows, "max_rows": o.max_rows}
    window = report.window
    long_reprocess = (
        window.label == "reprocess"
        and window.start is not None
        and window.end is not None
        and window.end - window.start > timedelta(days=o.skip_reprocess_days)
    )
    if long_reprocess:
        return _result(o, None, "skipped: reprocess window", threshold)
    if not o.check_field.startswith("counts_"):
        return None
    value = getattr(report.counts, o.check_field.removeprefix("counts_"), None)
    if not isinstance(value, int):
        return _unmeasured(o, report, f"check_field {o.check_field!r} names no run count")
    return _result(o, _within(o, value), value, threshold)


def _within(o: SloObjective, value: int) -> bool:
    return (o.min_rows is None or value >= o.min_rows) and (o.max_rows is None or value <= o.max_rows)


def _rows_for_batch_values(
    o: SloObjective, frame: DataFrame | None, batch: DataFrame | None, report: RunReport
) -> ServiceLevelResult:
    """Target rows whose ``check_field`` value occurs in this run's batch (e.g. the rows of the dates the
    batch brought), counted with one semi-join."""
    threshold = {"min_rows": o.min_rows, "max_rows": o.max_rows}
    column = o.check_field
    if frame is None or batch is None:
        return _unmeasured(o, report, "no published data to measure")
    if column not in frame.columns or column not in batch.columns:
        return _unmeasured(o, report, f"column {column!r} is not in the published data")
    values = batch.select(quote_ident(column)).where(F.col(quote_ident(column)).isNotNull()).distinct()
    count = frame.join(F.broadcast(values), column, "left_semi").count()
    return _result(o, _within(o, count), count, threshold)


def _run_availability(
    o: SloObjective, report: RunReport, as_of: datetime, history: RunHistory | None
) -> ServiceLevelResult:
    try:
        earlier = history(report.contract, as_of - timedelta(days=HISTORY_DAYS)) if history else None
    except LakeLogicError as exc:
        return _unmeasured(o, report, f"the run log could not be read: {exc.message}")
    if earlier is None:
        return _unmeasured(o, report, "no run log to read the contract's run history from")
    # the run's own write-ahead ``committing`` row is already in the log: it is this run, counted once
    # by its final status, not an earlier run that did not finish
    statuses = [*(str(r["status"]) for r in earlier if r.get("run_id") != report.run_id), str(report.status)]
    share = sum(s in AVAILABLE_STATUSES for s in statuses) / len(statuses)
    return _result(o, share >= (o.threshold or 0), round(share, 6), o.threshold)


def _completeness(o: SloObjective, report: RunReport) -> ServiceLevelResult:
    """good/(good+quarantined) and the quarantine ratio against the hierarchy's ``slo.quality``."""
    threshold = {"min_good_ratio": o.min_good_ratio, "max_quarantine_ratio": o.max_quarantine_ratio}
    counts = report.counts
    judged = counts.good + counts.quarantined
    if judged == 0:
        return ServiceLevelResult(objective=o.objective, passed=None, observed="no rows", threshold=threshold)
    good_ratio = counts.good / judged
    quarantine_ratio = counts.quarantine_ratio
    low = 0.0 if o.min_good_ratio is None else o.min_good_ratio
    high = 1.0 if o.max_quarantine_ratio is None else o.max_quarantine_ratio  # 0 means "none at all"
    passed = good_ratio >= low and quarantine_ratio <= high
    observed = {"good_ratio": round(good_ratio, 6), "quarantine_ratio": round(quarantine_ratio, 6)}
    return ServiceLevelResult(objective=o.objective, passed=passed, observed=observed, threshold=threshold)


def _volume_anomaly(
    o: SloObjective, report: RunReport, as_of: datetime, history: RunHistory | None
) -> ServiceLevelResult:
    """This run's count against the median (or mean) of earlier successful runs with rows, within
    ``lookback_days`` and the last ``lookback_runs`` of them (``seasonal_median``: the same weekday).
    Outside [min_ratio, max_ratio] is a breach; zero rows or beyond ``critical_ratio`` is critical.
    Before ``min_runs_before_enforcement`` such runs the objective is reported, not enforced."""
    threshold = {"min_ratio": o.min_ratio, "max_ratio": o.max_ratio, "critical_ratio": o.critical_ratio}
    column = o.check_field
    current = getattr(report.counts, column.removeprefix("counts_"), None)
    if not isinstance(current, int):
        return _unmeasured(o, report, f"check_field {column!r} names no run count")
    try:
        earlier = history(report.contract, as_of - timedelta(days=o.lookback_days)) if history else None
    except LakeLogicError as exc:
        return _unmeasured(o, report, f"the run log could not be read: {exc.message}")
    if earlier is None:
        return _unmeasured(o, report, "no run log to read the contract's run history from")
    prior = [
        r
        for r in earlier
        if str(r.get("status")) == "succeeded"
        and r.get("run_id") != report.run_id
        and (r.get(column) or 0) > 0
        and (o.method != "seasonal_median" or _weekday(r.get("started_at")) == as_of.weekday())
    ][: o.lookback_runs]
    values = [int(r[column]) for r in prior]
    observed: dict[str, Any] = {"rows": current, "baseline_runs": len(values)}
    if len(values) < o.min_runs_before_enforcement:
        observed["not_enforced"] = f"{len(values)} of {o.min_runs_before_enforcement} runs of history"
        return ServiceLevelResult(objective=o.objective, passed=None, observed=observed, threshold=threshold)
    baseline = mean(values) if o.method == "rolling_average" else median(values)
    ratio = current / baseline
    observed.update(baseline=round(float(baseline), 3), ratio=round(ratio, 6))
    passed = o.min_ratio <= ratio <= o.max_ratio
    critical = current == 0 or (
        o.critical_ratio is not None and (ratio >= o.critical_ratio or ratio <= 1 / o.critical_ratio)
    )
    return ServiceLevelResult(
        objective=o.objective,
        passed=passed and not critical,
        observed=observed,
        threshold=threshold,
        severity="critical" if critical else "warning",
    )


def _weekday(value: Any) -> int | None:
    return value.weekday() if isinstance(value, datetime) else None
