"""``service_levels`` compiled into objectives the engine evaluates at step 15 (SEMANTICS §15).

Durations: ``30s``, ``15m``, ``6h``, ``1d``, ``2w`` or ISO 8601 (``PT6H``, ``P1DT2H``, ``P2W``); a bare
number is hours. Availability ratios above 1 are percentages.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.access import opt
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.steps import EvaluateSlos, SloObjective

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_SHORT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_ISO = re.compile(
    r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
DEFAULT_FRESHNESS_FIELD = "_lakelogic_processed_at"
RUN_COUNTS = ("source", "good", "quarantined", "filtered", "deduplicated", "expanded")


def duration_seconds(value: Any, yaml_path: str) -> float:
    """Seconds of a §15 duration; a bare number is hours."""
    if isinstance(value, bool):
        raise _bad_duration(value, yaml_path)
    if isinstance(value, (int, float)):
        return float(value) * 3600
    text = str(value).strip()
    short = _SHORT.fullmatch(text)
    if short is not None:
        return float(short.group(1)) * _UNIT_SECONDS[(short.group(2) or "h").lower()]
    iso = _ISO.fullmatch(text)
    if iso is not None and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        parts = {k: float(v) for k, v in iso.groupdict().items() if v is not None}
        return sum(_UNIT_SECONDS[k] * v for k, v in parts.items())
    raise _bad_duration(value, yaml_path)


def _bad_duration(value: Any, yaml_path: str) -> PlanError:
    return PlanError(
        f"{value!r} is not a duration",
        yaml_path=yaml_path,
        hint="30s, 15m, 6h, 1d, 2w, ISO 8601 (PT6H), or a number of hours",
    )


def compile_slos(contract: Any) -> EvaluateSlos | None:
    levels = opt(contract, "service_levels")
    extras = getattr(contract, "hierarchy_slo", None) or {}
    if levels is None and not extras:
        return None
    problems = PlanProblems()  # every objective's problem, not only the first
    objectives: list[SloObjective] = []
    builders = (("freshness", _freshness), ("availability", _availability), ("row_count", _row_count))
    candidates = tuple(extras.get("freshness_candidates") or ())
    for key, build in builders if levels is not None else ():
        value = opt(levels, key)
        if value is not None:
            maker = partial(_freshness, value, candidates) if key == "freshness" else partial(build, value)
            objective = problems.attempt(maker, None)
            if objective is not None:
                objectives.append(objective)
    for key, build in (("quality", _completeness), ("anomaly", _volume_anomaly)):
        if extras.get(key):
            objective = problems.attempt(partial(build, extras[key]), None)
            if objective is not None:
                objectives.append(objective)
    problems.raise_if_any()
    if extras.get("row_count_warn_only"):
        objectives = [
            replace(o, warn_only=True) if o.objective in ("row_count", "volume_anomaly") else o
            for o in objectives
        ]
    return EvaluateSlos(yaml_path="service_levels", objectives=tuple(objectives)) if objectives else None


def _freshness(value: Any, candidates: tuple[str, ...] = ()) -> SloObjective:
    path = "service_levels.freshness"
    threshold = opt(value, "threshold") if not isinstance(value, (str, int, float)) else value
    if threshold is None:
        raise PlanError("freshness needs a threshold", yaml_path=f"{path}.threshold")
    where = path if isinstance(value, (str, int, float)) else f"{path}.threshold"
    field = (
        str(opt(value, "field", None) or DEFAULT_FRESHNESS_FIELD)
        if not isinstance(value, (str, int, float))
        else DEFAULT_FRESHNESS_FIELD
    )
    # the hierarchy's check_columns apply while the contract kept the field they gave it
    candidates = candidates if candidates and candidates[0] == field else ()
    return SloObjective(
        objective="freshness",
        field=field,
        threshold=duration_seconds(threshold, where),
        threshold_text=str(threshold),
        description=opt(value, "description") if not isinstance(value, (str, int, float)) else None,
        candidates=candidates,
    )


def _availability(value: Any) -> SloObjective:
    path = "service_levels.availability"
    plain = isinstance(value, (int, float))
    raw = value if plain else opt(value, "threshold")
    try:
        ratio = float(raw)
    except (TypeError, ValueError):
        raise PlanError(f"{raw!r} is not a ratio", yaml_path=path, hint="0.99, or 99 (percent)") from None
    if ratio > 1:
        ratio /= 100
    if not 0 <= ratio <= 1:
        raise PlanError(f"availability {raw!r} is outside 0..1 (or 0..100 %)", yaml_path=path)
    return SloObjective(
        objective="availability",
        field=None if plain else opt(value, "field"),
        threshold=ratio,
        threshold_text=str(raw),
        description=None if plain else opt(value, "description"),
    )


def _row_count(value: Any) -> SloObjective:
    path = "service_levels.row_count"
    low, high = opt(value, "min_rows"), opt(value, "max_rows")
    if low is None and high is None:
        raise PlanError("row_count needs min_rows, max_rows or both", yaml_path=path)
    if low is not None and high is not None and int(low) > int(high):
        raise PlanError(f"min_rows {low} is above max_rows {high}", yaml_path=f"{path}.min_rows")
    check = str(opt(value, "check_field", "counts_good") or "counts_good")
    if check.startswith("counts_") and check.removeprefix("counts_") not in RUN_COUNTS:
        raise PlanError(
            f"check_field {check!r} names no run count",
            yaml_path=f"{path}.check_field",
            hint=", ".join(f"counts_{c}" for c in RUN_COUNTS) + ", or a column of the target",
        )
    return SloObjective(
        objective="row_count",
        min_rows=None if low is None else int(low),
        max_rows=None if high is None else int(high),
        check_field=check,
        skip_reprocess_days=int(opt(value, "skip_reprocess_days", 3)),
        description=opt(value, "description"),
    )


def _ratio(value: Any, path: str) -> float:
    try:
        ratio = float(value)
    except (TypeError, ValueError):
        raise PlanError(f"{value!r} is not a ratio", yaml_path=path, hint="0.95, or 95 (percent)") from None
    ratio = ratio / 100 if ratio > 1 else ratio
    if not 0 <= ratio <= 1:
        raise PlanError(f"{value!r} is outside 0..1 (or 0..100 %)", yaml_path=path)
    return ratio


def _completeness(value: dict[str, Any]) -> SloObjective:
    """Hierarchy ``slo.quality``: good/(good+quarantined) >= min_good_ratio and quarantine_ratio <=
    max_quarantine_ratio (defaults 0.95 and 0.05)."""
    path = "slo.quality"
    return SloObjective(
        objective="completeness",
        min_good_ratio=_ratio(value.get("min_good_ratio", 0.95), f"{path}.min_good_ratio"),
        max_quarantine_ratio=_ratio(value.get("max_quarantine_ratio", 0.05), f"{path}.max_quarantine_ratio"),
        description=value.get("description"),
    )


ANOMALY_METHODS = ("median", "rolling_average", "seasonal_median")


def _volume_anomaly(value: dict[str, Any]) -> SloObjective:
    """Hierarchy ``slo.row_count.<layer>.anomaly``: this run's count against the baseline of earlier
    successful runs."""
    path = "slo.row_count.anomaly"
    method = str(value.get("method", "median"))
    if method not in ANOMALY_METHODS:
        raise PlanError(
            f"unknown anomaly method {method!r}", yaml_path=f"{path}.method", hint=", ".join(ANOMALY_METHODS)
        )
    try:
        low, high = float(value.get("min_ratio", 0.5)), float(value.get("max_ratio", 2.0))
        critical = value.get("critical_ratio")
        objective = SloObjective(
            objective="volume_anomaly",
            check_field=str(value.get("check_field") or "counts_good"),
            method=method,
            lookback_runs=int(value.get("lookback_runs", 14)),
            lookback_days=int(value.get("lookback_days", 35)),
            min_ratio=low,
            max_ratio=high,
            min_runs_before_enforcement=int(value.get("min_runs_before_enforcement", 5)),
            critical_ratio=None if critical is None else float(critical),
        )
    except (TypeError, ValueError) as exc:
        raise PlanError(f"anomaly settings must be numbers: {exc}", yaml_path=path) from None
    if not 0 <= low <= 1 <= high:
        raise PlanError(f"min_ratio {low} and max_ratio {high} must bracket 1", yaml_path=path)
    if objective.critical_ratio is not None and objective.critical_ratio <= 1:
        raise PlanError(
            f"critical_ratio {objective.critical_ratio} must be above 1 (a factor either way)",
            yaml_path=f"{path}.critical_ratio",
        )
    check = objective.check_field
    if not check.startswith("counts_") or check.removeprefix("counts_") not in RUN_COUNTS:
        raise PlanError(
            f"anomaly check_field {check!r} names no run count",
            yaml_path=f"{path}.check_field",
            hint=", ".join(f"counts_{c}" for c in RUN_COUNTS),
        )
    return objective
