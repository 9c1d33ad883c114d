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
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.counting import Observations, sum_flag
from lakelogic.engines.spark.regex_check import refuse_invalid_patterns
from lakelogic.errors import PlanError
from lakelogic.plan.sqlutil import first_line, quote_ident, sql_string
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
    yaml_path: str | None = None  # where the contract declares it (errors name it)

    @property
    def quarantines(self) -> bool:
        return self.severity == Severity.ERROR


def rule_fail_sql(predicate: str) -> str:
    """A row passes only when the predicate is TRUE: FALSE and NULL fail (SEMANTICS §10.2)."""
    return f"NOT coalesce(({predicate}), false)"


def message_literal(text: str) -> str:
    """Contract text inside a quarantine message, as a SQL literal. Messages never contain NUL: contract
    text has it replaced (U+FFFD) and raw values are quoted as JSON, which escapes it; so NUL can
    separate messages when the one-job split packs them (engines.spark.fanout)."""
    return sql_string(text.replace("\x00", "\ufffd"))


def message_for(check: Check, *, include_reason: bool) -> str:
    if not include_reason:
        return message_literal(f"Rule failed: {check.name}")
    if check.message_sql is not None:
        return check.message_sql
    return message_literal(f"Rule failed: {check.name} ({check.sql})")


@dataclass
class PhaseResult:
    """A frame with one failure flag per check plus a bad flag (any error-severity failure).

    The split uses only the boolean flags; the message arrays are built for quarantined rows only.
    """

    flagged: DataFrame
    checks: Sequence[Check]
    data_columns: list[str]
    include_reason: bool
    tag: str

    @property
    def flags(self) -> list[str]:
        return [f"{HIDDEN_PREFIX}{self.tag}_f{i}" for i in range(len(self.checks))]

    @property
    def bad_flag(self) -> str:
        return f"{HIDDEN_PREFIX}{self.tag}_bad"

    def message_items(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """Per error-severity check: (flag, message) and (flag, category) items of :func:`array_sql`."""
        messages: list[tuple[str, str]] = []
        categories: list[tuple[str, str]] = []
        for check, flag in zip(self.checks, self.flags, strict=True):
            if not check.quarantines:
                continue
            messages.append((flag, message_for(check, include_reason=self.include_reason)))
            categories.append((flag, sql_string(check.category.lower())))
        return messages, categories

    def quarantining(self) -> list[tuple[str, Check]]:
        """(flag column, check) of every error-severity check, in message order."""
        return [(flag, c) for c, flag in zip(self.checks, self.flags, strict=True) if c.quarantines]

    def good(self) -> DataFrame:
        keep = [F.col(quote_ident(c)) for c in self.data_columns]
        return self.flagged.where(f"NOT {self.bad_flag}").select(*keep)

    def bad(self) -> DataFrame:
        messages, categories = self.message_items()
        keep = [F.col(quote_ident(c)) for c in self.data_columns]
        return self.flagged.where(self.bad_flag).select(
            *keep,
            F.expr(array_sql(messages)).alias(ERRORS_COLUMN),
            F.expr(array_sql(categories)).alias(CATEGORIES_COLUMN),
        )

    def persist(self, level: Any) -> DataFrame:
        self.flagged = self.flagged.persist(level)
        return self.flagged


def evaluate_checks(
    frame: DataFrame,
    checks: Sequence[Check],
    *,
    observations: Observations,
    label: str,
    include_reason: bool,
    tag: str = "pre",
    defer: bool = False,
) -> PhaseResult:
    """Flag every check in one projection; observation ``label`` gets ``rows`` and ``c<i>`` fail counts
    (``defer``: counted at the chain's next observation point, which must see the same rows and flags)."""
    refuse_invalid_patterns(
        frame.sparkSession, ((c.name, c.fail_sql, c.yaml_path or "quality.row_rules") for c in checks)
    )
    result = PhaseResult(frame, checks, list(frame.columns), include_reason, tag)
    flags = result.flags
    error_flags = [flag for c, flag in zip(checks, flags, strict=True) if c.quarantines]
    try:
        flagged = frame.select(
            "*", *[F.expr(c.fail_sql).alias(flag) for c, flag in zip(checks, flags, strict=True)]
        )
    except AnalysisException as exc:
        located = _unresolvable_check(frame, checks)
        if located is None:
            raise
        raise located from exc
    # Observed on the flag projection: counts come from the scan that evaluates the rules.
    counts = {f"c{i}": sum_flag(flag) for i, flag in enumerate(flags)}
    if defer:
        observations.defer(label, counts)
    else:
        flagged = observations.observe(flagged, label, counts)
    bad = " OR ".join(error_flags) if error_flags else "false"
    result.flagged = flagged.select("*", F.expr(bad).alias(result.bad_flag))
    return result


def _unresolvable_check(frame: DataFrame, checks: Sequence[Check]) -> PlanError | None:
    """The contract error behind a phase projection Spark cannot analyse: the first check whose own
    expression fails (e.g. a rule on a column the frame does not have), named with its YAML path.
    Analysis only, no job; it runs only after the projection failed."""
    for check in checks:
        try:
            frame.select(F.expr(check.fail_sql))
        except AnalysisException as exc:
            return PlanError(
                f"row rule {check.name!r} cannot be evaluated on this data: {first_line(exc)}",
                yaml_path=check.yaml_path or "quality.row_rules",
                hint="columns available to the rule: "
                + ", ".join(c for c in frame.columns if not c.startswith(HIDDEN_PREFIX)),
            )
    return None


def array_sql(items: Sequence[tuple[str, str]]) -> str:
    """The array of the string ``value`` of every ``(condition, value)`` item whose condition holds, in
    order. Built from ``flatten``/``array``/``CASE`` rather than ``array_compact``, a higher-order function:
    those run without generated code and take the whole projection around them out of the pipeline's
    generated code (a row copy per row, on every row, not only on quarantined ones)."""
    empty = "CAST(array() AS ARRAY<STRING>)"
    if not items:
        return empty
    parts = [f"CASE WHEN {condition} THEN array({value}) ELSE {empty} END" for condition, value in items]
    return f"flatten(array({', '.join(parts)}))"
