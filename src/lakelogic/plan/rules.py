"""Row rules: collect every source, name them (SEMANTICS §10.4) and settle their phase (§10.2)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import partial
from typing import Any

from lakelogic.errors import PlanError
from lakelogic.plan.collect import PlanProblems
from lakelogic.plan.naming import RuleNamer
from lakelogic.plan.rule_drafts import RuleDraft
from lakelogic.plan.rule_forms import RuleContext, field_drafts, implied_drafts, row_rule_drafts
from lakelogic.plan.sqlutil import parse_sql
from lakelogic.plan.steps import RowRule
from lakelogic.types import Phase


@dataclass(frozen=True)
class ColumnOrigins:
    """Where the frame's columns come from, as far as the contract tells.

    ``post_only``: columns some post op creates and nothing earlier does (rules reading them run post).
    ``known``: every column the contract itself declares or creates (model fields, op outputs,
    extraction outputs, preserved upstream columns). ``source_may_add``: False when columns outside
    ``known`` cannot reach the rules (``unknown_fields: quarantine`` removes them at step 5).
    """

    post_only: frozenset[str] = frozenset()
    known: frozenset[str] = frozenset()
    source_may_add: bool = True
    opaque_post: bool = False  # a post op whose output columns the compiler cannot know


def compile_row_rules(
    contract: Any,
    ctx: RuleContext,
    origins: ColumnOrigins,
    warnings: list[str],
    problems: PlanProblems | None = None,
) -> tuple[RowRule, ...]:
    """Every row rule of the contract; each rule's problem is recorded in ``problems`` (when given,
    else raised at the end) and the other rules are still checked."""
    collect = problems or PlanProblems()
    no_drafts: list[RuleDraft] = []
    drafts = (
        field_drafts(contract, ctx, collect)
        + row_rule_drafts(contract, ctx, collect)
        + collect.attempt(partial(implied_drafts, contract), no_drafts)
    )
    names = _assign_names(drafts)
    rules: list[RowRule] = []
    for draft, name in zip(drafts, names, strict=True):
        rule = collect.attempt(partial(_row_rule, draft, name, origins, warnings), None)
        if rule is not None:
            rules.append(rule)
    if problems is None:
        collect.raise_if_any()
    return tuple(rules)


def _row_rule(draft: RuleDraft, name: str, origins: ColumnOrigins, warnings: list[str]) -> RowRule:
    _check_columns(draft, name, origins, warnings)
    # Generated predicates are checked like contract SQL, so a quoting slip fails here, not on a cluster.
    parse_sql(draft.predicate, what=f"rule {name!r}", yaml_path=draft.yaml_path)
    return RowRule(
        name=name,
        predicate=draft.predicate,
        category=draft.category,
        severity=draft.severity,
        phase=_phase(draft, name, origins),
        deferrable=draft.phase is None and origins.opaque_post and bool(draft.reads),
        origin=draft.origin,
        yaml_path=draft.yaml_path,
        description=draft.description,
        probes=draft.probes,
        detail=draft.detail,
        reads=draft.reads,
    )


def _assign_names(drafts: list[RuleDraft]) -> list[str]:
    """Explicit names are reserved first, then generated names are handed out in order."""
    namer = RuleNamer("row rule")
    for draft in drafts:
        if draft.explicit:
            namer.reserve(draft.base_name, draft.yaml_path)
    return [d.base_name if d.explicit else namer.generate(d.base_name, d.yaml_path) for d in drafts]


def _phase(draft: RuleDraft, name: str, origins: ColumnOrigins) -> Phase:
    post_reads = [c for c in draft.reads if c in origins.post_only]
    if draft.phase is Phase.PRE and post_reads:
        raise PlanError(
            f"rule {name!r} is phase 'pre' but reads {', '.join(post_reads)}, created only by a post op",
            yaml_path=f"{draft.yaml_path}.phase",
            hint="drop 'phase: pre' (the rule then runs post), or give the creating op 'phase: pre'",
        )
    if draft.phase is not None:
        return draft.phase
    return Phase.POST if post_reads else Phase.PRE


def _check_columns(draft: RuleDraft, name: str, origins: ColumnOrigins, warnings: list[str]) -> None:
    """A rule reading a column that exists nowhere is an error when the source cannot supply it either;
    otherwise the column must come from the source, which only the run can tell, so warn."""
    if not origins.known:
        return
    missing = _missing(draft.reads, origins.known)
    if not missing:
        return
    cols = ", ".join(missing)
    if not origins.source_may_add:
        raise PlanError(
            f"rule {name!r} reads {cols}, which is neither a model field nor created by an op "
            "(unknown source columns are removed by unknown_fields: quarantine)",
            yaml_path=draft.yaml_path,
        )
    warnings.append(
        f"rule {name!r} ({draft.yaml_path}) reads {cols}, not declared in the model nor created by an op; "
        "it must come from the source"
    )


def _missing(reads: Collection[str], known: Collection[str]) -> list[str]:
    return [c for c in reads if c not in known]
