"""Render a :class:`Plan` for people (``lakelogic plan``) and for tools (JSON).

Credential-like settings (SEMANTICS §1.3) are shown as ``***``: a plan is meant to be printed and shared.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from lakelogic.plan.steps import (
    AddLineage,
    CheckDataset,
    CleanupSource,
    DatasetRule,
    EnforceSchema,
    EvaluateSlos,
    ExternalLogic,
    Extract,
    FieldSpec,
    FinalProjection,
    LoadLink,
    Mask,
    Materialize,
    Plan,
    PreserveUpstream,
    ReadSource,
    RowRule,
    Split,
    Step,
    Transform,
    ValidateRows,
)
from lakelogic.types import LogicalType

_SECRET_WORDS = re.compile(r"password|secret|token|api_key|connection_string|_key$", re.IGNORECASE)
# Keys ending in `_key` that name columns, not credentials.
_NOT_SECRET = frozenset(
    {
        "primary_key",
        "natural_key",
        "business_key",
        "surrogate_key",
        "event_key",
        "reference_key",
        "grain_key",
        "partition_key",
        "sort_key",
        "join_key",
        "merge_key",
        "rollup_key",
    }
)
_MASK = "***"
_URI_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")


def redact_uri(text: str) -> str:
    """Hide the password of ``scheme://user:password@host`` URIs."""
    return _URI_PASSWORD.sub(lambda m: m.group(1) + _MASK + "@", text)


def is_secret_key(key: str) -> bool:
    return key.lower() not in _NOT_SECRET and bool(_SECRET_WORDS.search(key))


# --- JSON ---------------------------------------------------------------------------------------


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as JSON-ready data: identity, warnings, and each step with ``kind`` and its fields."""
    return {
        "contract": plan.contract_name,
        "title": plan.title,
        "table_name": plan.table_name,
        "version": plan.version,
        "layer": plan.layer,
        "domain": plan.domain,
        "system": plan.system,
        "primary_key": list(plan.primary_key),
        "fields": [_jsonable(f) for f in plan.fields],
        "warnings": list(plan.warnings),
        "steps": [{"index": i, "kind": s.kind, **_jsonable(s)} for i, s in enumerate(plan.steps, start=1)],
    }


def _jsonable(value: Any, key: str = "") -> Any:
    if key and is_secret_key(key) and isinstance(value, str):
        return _MASK
    if isinstance(value, LogicalType):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, str):
        return redact_uri(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    return str(value)


# --- text ---------------------------------------------------------------------------------------


def render_plan(plan: Plan) -> str:
    """Numbered steps with the SQL each one runs; what ``lakelogic plan CONTRACT`` prints."""
    identity = [f"v{plan.version}"]
    identity += [
        f"{k} {v}" for k, v in (("layer", plan.layer), ("domain", plan.domain), ("system", plan.system)) if v
    ]
    lines = [f"Plan for contract '{plan.contract_name}' ({plan.title}; {', '.join(identity)})"]
    if plan.primary_key:
        lines.append(f"  primary key: {', '.join(plan.primary_key)}")
    for number, step in enumerate(plan.steps, start=1):
        head, body = _describe(step)
        lines.append(f"{number:>2}. {head}")
        lines.extend(f"      {line}" for line in body)
    if plan.warnings:
        lines.append("Warnings:")
        lines.extend(f"  - {w}" for w in plan.warnings)
    return "\n".join(lines)


def _describe(step: Step) -> tuple[str, list[str]]:
    describer = _DESCRIBERS.get(type(step))
    if describer is None:
        return f"{step.kind} [{step.yaml_path}]", []
    return describer(step)


def _read_source(s: ReadSource) -> tuple[str, list[str]]:
    where = s.path or s.query or "(given at run time)"
    body = [f"load_mode={s.load_mode}; empty_behavior={s.empty_behavior}"]
    if s.pattern:
        body.append(f"pattern: {s.pattern}")
    if s.options:
        body.append(f"options: {_settings(s.options)}")
    if s.partition_filters:
        body.append(f"partition_filters: {_settings(s.partition_filters)}")
    if s.watermark_field:
        body.append(f"watermark_field: {s.watermark_field}")
    fmt = f" {s.format}" if s.format else ""
    return f"Read source: {s.source_type}{fmt} {_mask_value('path', where)}", body


def _load_link(s: LoadLink) -> tuple[str, list[str]]:
    body = []
    if s.columns:
        body.append(f"columns: {', '.join(s.columns)}")
    if s.filter:
        body.append(f"WHERE {s.filter}")
    if s.query:
        body.append(f"query: {s.query}")
    hint = " (broadcast)" if s.broadcast else ""
    return f"Load link '{s.name}': {s.type} {s.table or s.path}{hint}", body


def _preserve(s: PreserveUpstream) -> tuple[str, list[str]]:
    return "Preserve upstream columns", [f"{c} -> {s.prefix}{c}" for c in s.columns]


def _extract(s: Extract) -> tuple[str, list[str]]:
    body = [f"{col} = regex {pattern!r} on {s.text_column}" for col, pattern in s.patterns.items()]
    return f"Extraction: provider {s.provider}", body


def _external(s: ExternalLogic) -> tuple[str, list[str]]:
    body = [f"{s.entrypoint}(frame, links=..., engine={s.engine!r}, **{_settings(s.args)})"]
    if s.handles_output:
        body.append(f"writes its own output: {s.output_path} ({s.output_format or 'format by extension'})")
    return f"External logic ({s.type}): {s.path}", body


def _transform(s: Transform) -> tuple[str, list[str]]:
    effect = "" if s.row_effect == "none" else f"; rows: {s.row_effect}"
    head = f"Transform [{s.phase.value}] {s.op} ({s.yaml_path}{effect})"
    return head, [line for line in (s.sql or "").splitlines() if line.strip()]


def _enforce(s: EnforceSchema) -> tuple[str, list[str]]:
    head = f"Enforce schema: unknown_fields={s.unknown_fields}, evolution={s.evolution}"
    if s.cast_to_string:
        head += ", cast_to_string"
    body = [_field_line(f, post=f.name in s.post_created) for f in s.fields]
    if s.date_formats:
        body.append(f"date formats: {', '.join(s.date_formats)}")
    if s.timestamp_formats:
        body.append(f"timestamp formats: {', '.join(s.timestamp_formats)}")
    return head, body


def _field_line(f: FieldSpec, *, post: bool = False) -> str:
    flags = [
        flag
        for flag, on in (("required", f.required), ("generated", f.generated), ("created post", post))
        if on
    ]
    text = f"CAST({f.name} AS {f.type.spark_sql()})"
    return text + (f"  -- {', '.join(flags)}" if flags else "")


def _validate(s: ValidateRows) -> tuple[str, list[str]]:
    head = f"Validate rows [{s.phase.value}]: {len(s.rules)} rule(s), one projection"
    body: list[str] = []
    for rule in s.rules:
        body.extend(_rule_lines(rule))
    return head, body


def _rule_lines(rule: RowRule) -> list[str]:
    lines = [
        f"{rule.name} ({rule.category}, {rule.severity.value}, {rule.origin}) @ {rule.yaml_path}",
        f"  CASE WHEN NOT coalesce({rule.predicate}, false) THEN 'Rule failed: {rule.name}' END",
    ]
    if rule.detail:
        lines.append(f"  -- means: {rule.detail}")
    for probe in rule.probes:
        window = ""
        if probe.window_start:
            end = probe.window_end or "NULL"
            if probe.window_end_default:
                end = f"COALESCE({end}, {probe.window_end_default})"
            window = f" with {probe.window_start} <= {probe.window_value_expr} <= {end}"
        keys = ", ".join(probe.key)
        lines.append(
            f"  probe {probe.column}: ({', '.join(probe.frame_expr)}) matches {probe.link}({keys}){window}"
        )
    return lines


def _split(s: Split) -> tuple[str, list[str]]:
    if not s.quarantine_enabled:
        return "Split: quarantine disabled (an error-severity failure fails the run)", []
    reason = "with reasons" if s.include_error_reason else "rule names only"
    return f"Split good / quarantine (rows failing an error-severity rule; messages {reason})", []


def _final(s: FinalProjection) -> tuple[str, list[str]]:
    return f"Final projection: model columns first, unknown_fields={s.unknown_fields}", [
        _field_line(f) for f in s.fields
    ]


def _check(s: CheckDataset) -> tuple[str, list[str]]:
    mode = "; fails the run on an error-severity failure" if s.fail_pipeline_on_dataset_error else ""
    body: list[str] = []
    for rule in s.rules:
        body.extend(_dataset_lines(rule))
    return f"Dataset rules: {len(s.rules)} rule(s), one aggregation over the good rows{mode}", body


def _dataset_lines(rule: DatasetRule) -> list[str]:
    lines = [f"{rule.name} ({rule.category}, {rule.severity.value}) @ {rule.yaml_path}"]
    if rule.query:
        lines.append(f"  observed = ({rule.query})")
    else:
        lines.append(f"  observed = {rule.aggregate_sql}")
    lines.append(f"  passes when {rule.check_sql}")
    return lines


def _mask(s: Mask) -> tuple[str, list[str]]:
    return "Mask", [
        f"{f.name}: {f.masking}" + (f" ({f.masking_format})" if f.masking_format else "") for f in s.fields
    ]


def _lineage(s: AddLineage) -> tuple[str, list[str]]:
    body = []
    for column, holds in s.columns.items():
        value = s.values.get(holds)
        body.append(f"{column} = {holds}" + (f" ({value!r})" if value is not None else ""))
    return "Add lineage columns", body


def _materialize(s: Materialize) -> tuple[str, list[str]]:
    target = s.target or "(default catalog table)"
    body = []
    if s.quarantine_target:
        body.append(f"quarantine -> {s.quarantine_target}")
    shown = {"strategy", "format", "target_path", "location"}
    extra = {k: v for k, v in s.settings.items() if k not in shown and v not in ({}, [], False, None)}
    if extra:
        body.append(f"settings: {_settings(extra)}")
    return f"Materialize: {s.strategy} into {target} ({s.format or 'default format'})", body


def _settings(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_mask_value(k, v)}" for k, v in values.items())


def _mask_value(key: str, value: Any) -> Any:
    if is_secret_key(key):
        return _MASK
    if isinstance(value, Mapping):
        return "{" + _settings(value) + "}"
    return redact_uri(value) if isinstance(value, str) else value


def _cleanup(s: CleanupSource) -> tuple[str, list[str]]:
    where = f" to {s.archive_path}" if s.action == "archive" else ""
    mode = "a failure fails the run" if s.blocking else "a failure is a warning"
    return f"Post-ingestion: {s.action} the files read{where} (after the commits; {mode})", []


def _slos(s: EvaluateSlos) -> tuple[str, list[str]]:
    body = []
    for o in s.objectives:
        if o.objective == "row_count":
            body.append(f"row_count of {o.check_field}: min {o.min_rows}, max {o.max_rows}")
        else:
            on = f" on {o.field}" if o.field else " (run history)"
            body.append(f"{o.objective}{on}: {o.threshold_text}")
    return "Service levels (reported, never fail the run)", body


_DESCRIBERS: dict[type, Any] = {
    ReadSource: _read_source,
    LoadLink: _load_link,
    PreserveUpstream: _preserve,
    Extract: _extract,
    ExternalLogic: _external,
    Transform: _transform,
    EnforceSchema: _enforce,
    ValidateRows: _validate,
    Split: _split,
    FinalProjection: _final,
    CheckDataset: _check,
    Mask: _mask,
    AddLineage: _lineage,
    Materialize: _materialize,
    CleanupSource: _cleanup,
    EvaluateSlos: _slos,
}
