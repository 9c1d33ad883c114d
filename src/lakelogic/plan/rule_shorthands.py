"""Row-rule shorthands (SEMANTICS §10.3): not_null, accepted_values, regex_match, range,
referential_integrity and lifecycle_window, each turned into one or more :class:`RuleDraft` objects.

Link lookups become :class:`ReferenceProbe` joins plus a predicate over the probe column (Spark cannot
evaluate subqueries inside the one projection that checks every rule); ``detail`` keeps the readable
``IN (SELECT …)`` form for messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan import predicates as P
from lakelogic.plan.access import as_list, opt, text
from lakelogic.plan.rule_drafts import (
    RuleContext,
    RuleDraft,
    category_of,
    parse_phase,
    parse_severity,
    rule_option,
)
from lakelogic.plan.sqlutil import quote_ident, sql_literal, sql_string
from lakelogic.plan.steps import ReferenceProbe

SHORTHANDS = (
    "not_null",
    "accepted_values",
    "regex_match",
    "range",
    "referential_integrity",
    "lifecycle_window",
)
_CATEGORY = {
    "not_null": "completeness",
    "accepted_values": "validity",
    "regex_match": "validity",
    "range": "validity",
    "referential_integrity": "consistency",
    "lifecycle_window": "consistency",
}


def shorthand_drafts(kind: str, item: Any, path: str, ctx: RuleContext) -> list[RuleDraft]:
    body = opt(item, kind)
    body_path = f"{path}.{kind}"
    if kind == "not_null":
        return _not_null_drafts(item, body, body_path, path, ctx)
    if not _is_mapping(body):
        raise PlanError(f"{kind} expects an object", yaml_path=body_path)
    if kind == "lifecycle_window":
        return [_lifecycle_draft(item, body, body_path, path, ctx)]
    column = _required_text(body, ("field", "column"), body_path)
    if kind == "accepted_values":
        values = opt(body, "values")
        if values is None:
            raise PlanError("accepted_values needs 'values'", yaml_path=f"{body_path}.values")
        pred = P.accepted_values(
            column, as_list(values), ctx.type_of(column), yaml_path=f"{body_path}.values"
        )
        return [_shorthand(item, body, path, f"{column}_accepted_values", pred, kind, (column,))]
    if kind == "regex_match":
        pattern = _required_text(body, ("pattern",), body_path)
        return [
            _shorthand(
                item, body, path, f"{column}_regex_match", P.regex_match(column, pattern), kind, (column,)
            )
        ]
    if kind == "range":
        inclusive = opt(body, "inclusive", True)
        pred = P.value_range(
            column,
            opt(body, "min"),
            opt(body, "max"),
            ctx.type_of(column),
            inclusive=bool(inclusive),
            as_double=ctx.cast_to_string and column in ctx.field_names,
            yaml_path=body_path,
        )
        return [_shorthand(item, body, path, f"{column}_range", pred, kind, (column,))]
    return [_referential_draft(item, body, column, body_path, path, ctx)]


def _not_null_drafts(item: Any, body: Any, body_path: str, path: str, ctx: RuleContext) -> list[RuleDraft]:
    entries: list[tuple[str, Any]] = []  # (column, options holder)
    if isinstance(body, str):
        entries.append((body, None))
    elif _is_mapping(body):
        if opt(body, "field") is not None:
            entries.append((str(opt(body, "field")), body))
        for col in as_list(opt(body, "fields")):
            entries.append((str(col), body))
        if not entries:
            raise PlanError("not_null needs 'field' or 'fields'", yaml_path=body_path)
    else:
        for j, entry in enumerate(as_list(body)):
            if isinstance(entry, str):
                entries.append((entry, None))
            elif _is_mapping(entry) and (opt(entry, "field") is not None or opt(entry, "fields")):
                # a list item takes the object forms too (§10.3: `{field}` / `{fields}`)
                named = [opt(entry, "field")] if opt(entry, "field") is not None else []
                entries.extend((str(col), entry) for col in [*named, *as_list(opt(entry, "fields"))])
            else:
                raise PlanError(
                    "not_null list items are column names or {field}/{fields} objects",
                    yaml_path=f"{body_path}[{j}]",
                )
    if len(entries) > 1 and _option(item, body, "name") is not None:
        raise PlanError(
            "'name' cannot be set on a not_null rule with several fields",
            yaml_path=f"{path}.name",
            hint="each field gets its own rule <field>_not_null; write one not_null per field to name them",
        )
    drafts = []
    for column, holder in entries:
        options = holder if holder is not None else body
        drafts.append(
            _shorthand(item, options, path, f"{column}_not_null", P.not_null(column), "not_null", (column,))
        )
    return drafts


def _referential_draft(
    item: Any, body: Any, column: str, body_path: str, path: str, ctx: RuleContext
) -> RuleDraft:
    link = _link_name(body, "reference", body_path, ctx)
    key = str(opt(body, "key", column))
    probe_col = ctx.new_probe_column()
    col = quote_ident(column)
    probe = ReferenceProbe(column=probe_col, link=link, key=(key,), frame_expr=(col,))
    draft = _shorthand(
        item,
        body,
        path,
        f"{column}_referential_integrity",
        f"{col} IS NULL OR {probe_col}",
        "referential_integrity",
        (column,),
    )
    draft.probes = (probe,)
    draft.detail = f"{col} IS NULL OR {col} IN (SELECT {quote_ident(key)} FROM {quote_ident(link)})"
    return draft


def _lifecycle_draft(item: Any, body: Any, body_path: str, path: str, ctx: RuleContext) -> RuleDraft:
    if opt(body, "reference") is None:
        column = _required_text(body, ("field",), body_path)
        window = opt(body, "window")
        if window is None:
            raise PlanError("lifecycle_window needs 'window' (or the reference form)", yaml_path=body_path)
        pred = P.recent_window(column, window, yaml_path=f"{body_path}.window")
        return _shorthand(item, body, path, f"{column}_lifecycle_window", pred, "lifecycle_window", (column,))
    event_ts = _required_text(body, ("event_ts", "timestamp_field"), body_path)
    event_key = _required_text(body, ("event_key",), body_path)
    link = _link_name(body, "reference", body_path, ctx)
    ref_key = str(opt(body, "reference_key", event_key))
    start = _required_text(body, ("start_field",), body_path)
    end = _required_text(body, ("end_field",), body_path)
    end_default = _end_default(opt(body, "end_default"))
    ts, key_expr = quote_ident(event_ts), quote_ident(event_key)
    probe_col = ctx.new_probe_column()
    probe = ReferenceProbe(
        column=probe_col,
        link=link,
        key=(ref_key,),
        frame_expr=(key_expr,),
        window_start=start,
        window_end=end,
        window_end_default=end_default,
        window_value_expr=ts,
    )
    draft = _shorthand(
        item,
        body,
        path,
        f"{event_key}_lifecycle_window",
        f"{ts} IS NULL OR {probe_col}",
        "lifecycle_window",
        (event_ts, event_key),
    )
    draft.probes = (probe,)
    end_sql = (
        f"r.{quote_ident(end)}" if end_default is None else f"COALESCE(r.{quote_ident(end)}, {end_default})"
    )
    draft.detail = (
        f"{ts} IS NULL OR EXISTS (SELECT 1 FROM {quote_ident(link)} r WHERE r.{quote_ident(ref_key)} = "
        f"source.{key_expr} AND r.{quote_ident(start)} <= source.{ts} AND source.{ts} <= {end_sql})"
    )
    return draft


_DATE_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _end_default(value: Any) -> str | None:
    """``end_default`` as SQL. Date/timestamp text becomes a typed literal, so ``COALESCE(end, default)``
    keeps the end column's temporal type (a plain string would make Spark compare text); text that
    looks like a call (``current_date()``) is an expression; anything else is a literal."""
    if value is None:
        return None
    raw = str(text(value)).strip()
    if _DATE_TEXT.match(raw):
        return f"DATE {sql_string(raw)}"
    if _TIMESTAMP_TEXT.match(raw):
        return f"TIMESTAMP {sql_string(raw)}"
    if raw and raw[0].isalpha() and "(" in raw:
        return raw
    return sql_literal(value)


def _shorthand(
    item: Any, body: Any, path: str, base: str, predicate: str, kind: str, reads: tuple[str, ...]
) -> RuleDraft:
    name = _option(item, body, "name")
    return RuleDraft(
        base_name=str(name) if name else base,
        explicit=bool(name),
        predicate=predicate,
        category=category_of(_option(item, body, "category"), _CATEGORY[kind]),
        severity=parse_severity(_option(item, body, "severity"), path),
        phase=parse_phase(_option(item, body, "phase"), path),
        origin="shorthand",
        yaml_path=path,
        reads=reads,
        description=_option(item, body, "description"),
    )


def _option(item: Any, body: Any, key: str) -> Any:
    return rule_option(item, body if _is_mapping(body) else item, key)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) or hasattr(value, "model_fields_set")


def _required_text(body: Any, keys: tuple[str, ...], body_path: str) -> str:
    for key in keys:
        value = opt(body, key)
        if value is not None and str(value).strip():
            return str(value)
    raise PlanError(f"missing '{keys[0]}'", yaml_path=f"{body_path}.{keys[0]}")


def _link_name(body: Any, key: str, body_path: str, ctx: RuleContext) -> str:
    link = _required_text(body, (key,), body_path)
    if link not in ctx.links:
        raise PlanError(
            f"{link!r} is not a declared link",
            yaml_path=f"{body_path}.{key}",
            hint=f"declared links: {', '.join(sorted(ctx.links)) or '(none)'}; add it under 'links'",
        )
    return link
