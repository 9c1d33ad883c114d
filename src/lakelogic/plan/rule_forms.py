"""Every source of row rules turned into :class:`RuleDraft` objects (SEMANTICS §5.1, §6, §10.3).

Order matters for naming (§10.4): field rules in field order (required, accepted_values, range,
max_length, then the field's own ``rules``), key checks implied by merge/SCD2, then ``quality.row_rules``.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan import predicates as P
from lakelogic.plan.access import as_list, opt
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.fields import is_required, model_fields
from lakelogic.plan.rule_drafts import (
    RuleContext,
    RuleDraft,
    category_of,
    explicitly_set,
    parse_phase,
    parse_severity,
)
from lakelogic.plan.rule_shorthands import SHORTHANDS, shorthand_drafts
from lakelogic.plan.rule_sql import compile_row_sql
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.types import Severity

__all__ = ["SHORTHANDS", "RuleContext", "declared_draft", "field_drafts", "implied_drafts", "row_rule_drafts"]


def field_drafts(contract: Any, ctx: RuleContext, problems: PlanProblems) -> list[RuleDraft]:
    """Rules declared on model fields; a field whose rules do not compile is recorded in ``problems``."""
    drafts: list[RuleDraft] = []
    keys_left = list(dict.fromkeys(ctx.key_columns))
    for i, fld in enumerate(model_fields(contract)):
        drafts += problems.attempt(partial(_drafts_of_field, i, fld, ctx, keys_left), [])
    for key in keys_left:  # key columns created by transformations, not declared in the model
        drafts.append(
            _generated(f"{key}_required", P.not_null(key), "completeness", "implied", ctx.key_path, (key,))
        )
    return drafts


def _drafts_of_field(i: int, fld: Any, ctx: RuleContext, keys_left: list[str]) -> list[RuleDraft]:
    """``keys_left``: key columns not seen yet (this field's name is removed from it)."""
    drafts: list[RuleDraft] = []
    path = f"model.fields[{i}]"
    name = str(opt(fld, "name"))
    type_ = ctx.type_of(name)
    required = is_required(fld) and ctx.enforce_required and name not in ctx.write_only
    if required:
        key = "required" if explicitly_set(fld, "required") else "nullable"
        drafts.append(
            _generated(
                f"{name}_required", P.not_null(name), "completeness", "field", f"{path}.{key}", (name,)
            )
        )
    elif name in keys_left:
        drafts.append(
            _generated(f"{name}_required", P.not_null(name), "completeness", "implied", ctx.key_path, (name,))
        )
    if name in keys_left:
        keys_left.remove(name)
    values = opt(fld, "accepted_values")
    if values is not None:
        pred = P.accepted_values(name, as_list(values), type_, yaml_path=f"{path}.accepted_values")
        drafts.append(
            _generated(
                f"{name}_accepted_values", pred, "validity", "field", f"{path}.accepted_values", (name,)
            )
        )
    low, high = opt(fld, "min"), opt(fld, "max")
    if low is not None or high is not None:
        pred = P.value_range(name, low, high, type_, as_double=ctx.cast_to_string, yaml_path=f"{path}.min")
        drafts.append(
            _generated(
                f"{name}_range",
                pred,
                "validity",
                "field",
                f"{path}.{'min' if low is not None else 'max'}",
                (name,),
            )
        )
    length = opt(fld, "max_length")
    if length is not None:
        drafts.append(
            _generated(
                f"{name}_max_length",
                P.max_length(name, int(length)),
                "validity",
                "field",
                f"{path}.max_length",
                (name,),
            )
        )
    for j, rule in enumerate(as_list(opt(fld, "rules"))):
        drafts.append(declared_draft(rule, f"{path}.rules[{j}]", ctx, origin="field"))
    return drafts


def _generated(
    base: str, predicate: str, category: str, origin: Any, yaml_path: str, reads: tuple[str, ...]
) -> RuleDraft:
    return RuleDraft(
        base_name=base,
        explicit=False,
        predicate=predicate,
        category=category,
        severity=Severity.ERROR,
        phase=None,
        origin=origin,
        yaml_path=yaml_path,
        reads=reads,
    )


# --- quality.row_rules ------------------------------------------------------------------------


def row_rule_drafts(contract: Any, ctx: RuleContext, problems: PlanProblems) -> list[RuleDraft]:
    """``quality.row_rules``; a rule that does not compile is recorded in ``problems``."""
    drafts: list[RuleDraft] = []
    quality = opt(contract, "quality")
    for i, item in enumerate(as_list(opt(quality, "row_rules"))):
        drafts += problems.attempt(partial(_drafts_of_row_rule, item, f"quality.row_rules[{i}]", ctx), [])
    return drafts


def _drafts_of_row_rule(item: Any, path: str, ctx: RuleContext) -> list[RuleDraft]:
    kind = next((k for k in SHORTHANDS if opt(item, k) is not None), None)
    if kind is not None:
        return list(shorthand_drafts(kind, item, path, ctx))
    if opt(item, "sql") is None:
        raise PlanError(
            "row rule needs 'sql' or one shorthand key",
            yaml_path=path,
            hint="shorthands: " + ", ".join(SHORTHANDS),
        )
    return [declared_draft(item, path, ctx, origin="declared")]


def implied_drafts(contract: Any) -> list[RuleDraft]:
    """Rules implied by the write: ``milestone_dates_ordered`` for accumulating snapshots (§13.6)."""
    fact = opt(opt(contract, "materialization"), "fact")
    if fact is None or str(opt(fact, "type")) != "accumulating_snapshot":
        return []
    milestones = [str(m) for m in as_list(opt(fact, "milestone_dates"))]
    path = "materialization.fact.milestone_dates"
    if not milestones:
        milestones = [str(opt(f, "name")) for f in model_fields(contract) if opt(f, "milestone", False)]
        path = "model.fields"
    if len(milestones) < 2:
        return []
    pairs = []
    for earlier, later in itertools.pairwise(milestones):
        a, b = quote_ident(earlier), quote_ident(later)
        pairs.append(f"({a} IS NULL OR {b} IS NULL OR {a} <= {b})")
    return [
        _generated(
            "milestone_dates_ordered", " AND ".join(pairs), "consistency", "implied", path, tuple(milestones)
        )
    ]


def declared_draft(rule: Any, path: str, ctx: RuleContext, *, origin: Any) -> RuleDraft:
    name = opt(rule, "name")
    if not name:
        raise PlanError("a rule with 'sql' needs a 'name'", yaml_path=f"{path}.name")
    sql = opt(rule, "sql")
    compiled = compile_row_sql(
        str(sql),
        what=f"rule {name!r}",
        yaml_path=f"{path}.sql",
        links=ctx.links,
        new_probe_column=ctx.new_probe_column,
    )
    between = opt(rule, "must_be_between")
    greater, less = opt(rule, "must_be_greater_than"), opt(rule, "must_be_less_than")
    predicate = P.with_bounds(compiled.predicate, between, greater, less, yaml_path=path)
    detail = compiled.detail
    if detail is not None and P.has_bounds(between, greater, less):
        detail = P.with_bounds(detail, between, greater, less, yaml_path=path)
    return RuleDraft(
        base_name=str(name),
        explicit=True,
        predicate=predicate,
        category=category_of(opt(rule, "category"), "correctness"),
        severity=parse_severity(opt(rule, "severity"), path),
        phase=parse_phase(opt(rule, "phase") if explicitly_set(rule, "phase") else None, path),
        origin=origin,
        yaml_path=path,
        reads=compiled.reads,
        description=opt(rule, "description"),
        detail=detail,
        probes=compiled.probes,
    )
