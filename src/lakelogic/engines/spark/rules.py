"""Row checks of one phase, evaluated in ONE projection (SEMANTICS §10.2, §11).

A *check* is anything that can fail a row: a row rule, a strict-cast failure (``<field>_type``), the
unknown-fields policy. For a phase, every check's failure flag is computed once (one projection), the
per-check failure counts are observed on the same scan (no extra job), and one more projection builds the
row's ``_lakelogic_errors`` / ``_lakelogic_categories`` arrays from the flags. Warning and info checks
are counted but never add a message, so they never quarantine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.counting import Observations, sum_flag
from lakelogic.plan.sqlutil import quote_ident, sql_string
from lakelogic.types import Phase, Severity

ERRORS_COLUMN = "_lakelogic_errors"
CATEGORIES_COLUMN = "_lakelogic_categories"
HIDDEN_PREFIX = "__ll_"


@dataclass(frozen=True)
class Check:
    """One way a row can fail in a phase.

    ``fail_sql`` is TRUE when the row fails; ``message_sql`` (a SQL string expression, evaluated only
    for failing rows) overrides the default ``Rule failed: <name> (<sql>)``.
    """

    name: str
    category: str
    severity: Severity
    phase: Phase
    origin: str
    sql: str
    fail_sql: str
    message_sql: str | None = None

    @property
    def quarantines(self) -> bool:
        return self.severity == Severity.ERROR


def rule_fail_sql(predicate: str) -> str:
    """A row passes only when the predicate is TRUE: FALSE and NULL fail (SEMANTICS §10.2)."""
    return f"NOT coalesce(({predicate}), false)"


def message_for(check: Check, *, include_reason: bool) -> str:
    if not include_reason:
        return sql_string(f"Rule failed: {check.name}")
    if check.message_sql is not None:
        return check.message_sql
    return sql_string(f"Rule failed: {check.name} ({check.sql})")


def evaluate_checks(
    frame: DataFrame,
    checks: Sequence[Check],
    *,
    observations: Observations,
    label: str,
    include_reason: bool,
) -> DataFrame:
    """Add the error/category arrays for ``checks`` (observation ``label`` gets ``c<i>`` fail counts)."""
    flags = [f"{HIDDEN_PREFIX}f{i}" for i in range(len(checks))]
    flagged = frame.select(
        "*", *[F.expr(c.fail_sql).alias(flag) for c, flag in zip(checks, flags, strict=True)]
    )
    # Observed on the flag projection: counts come from the scan that evaluates the rules.
    flagged = observations.observe(flagged, label, {f"c{i}": sum_flag(flag) for i, flag in enumerate(flags)})
    messages: list[str] = []
    categories: list[str] = []
    for check, flag in zip(checks, flags, strict=True):
        if not check.quarantines:
            continue
        messages.append(f"CASE WHEN {flag} THEN {message_for(check, include_reason=include_reason)} END")
        categories.append(f"CASE WHEN {flag} THEN {sql_string(check.category.lower())} END")
    keep = [F.col(quote_ident(c)) for c in frame.columns]
    return flagged.select(
        *keep,
        F.expr(_array_sql(messages)).alias(ERRORS_COLUMN),
        F.expr(_array_sql(categories)).alias(CATEGORIES_COLUMN),
    )


def _array_sql(items: list[str]) -> str:
    if not items:
        return "CAST(array() AS ARRAY<STRING>)"
    return f"array_compact(array({', '.join(items)}))"


def is_good_sql() -> str:
    return f"size({ERRORS_COLUMN}) = 0"


def is_bad_sql() -> str:
    return f"size({ERRORS_COLUMN}) > 0"
