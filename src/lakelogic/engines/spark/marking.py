"""Single-chain evaluation: mark rows instead of splitting them when the post phase allows it (§12 note).

When every post op keeps the row count and only adds new columns (``derive``, ``json_extract``,
``lookup``, ``bucket``, ...), the post ops can run on *all* rows: rows that already failed a pre check
just ride along and their post-created columns are blanked in the quarantine. The whole run is then
one linear chain — scan, pre checks, post ops, post checks, messages — so the good rows, the
quarantined rows and the dataset rules all derive from one (optionally persisted) frame instead of
re-running the pre phase for each branch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.rules import (
    CATEGORIES_COLUMN,
    ERRORS_COLUMN,
    HIDDEN_PREFIX,
    Check,
    PhaseResult,
    array_sql,
)
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import Transform

# Ops that rebuild or reshape the frame, or drop/rename columns: they need the real split.
_FRAME_OPS = frozenset({"sql", "select", "drop", "rename", "pivot", "unpivot", "rollup", "cast"})
MARK_COLUMN = f"{HIDDEN_PREFIX}bad"


def can_mark(post_ops: Sequence[Transform], columns: Sequence[str]) -> bool:
    """True when running ``post_ops`` on every row cannot change what pre-failed rows carry."""
    present = set(columns)
    for op in post_ops:
        if op.row_effect != "none" or op.op in _FRAME_OPS or not op.creates:
            return False
        if any(c in present for c in op.creates):
            return False  # would overwrite a value the quarantined row must keep
        present |= set(op.creates)
    return True


def pushdown_barrier(frame: DataFrame) -> DataFrame:
    """``frame`` under a node no filter is pushed through (an observation nobody reads).

    A re-evaluation's chain has no observation points, and Spark pushes a filter through every projection
    by inlining the columns it reads: the flags of a post re-cast, inlined into the casts they read, grew
    the plan exponentially (millions of characters, then out of memory), and the pre flags inlined into
    the scan's filter made its generated code too large to compile."""
    return frame.observe(f"ll_barrier_{uuid.uuid4().hex}", F.count(F.lit(1)).alias("rows"))


def gate_post_checks(checks: Sequence[Check], pre_bad_flag: str) -> list[Check]:
    """Post checks apply only to rows that passed the pre phase."""
    return [replace(c, fail_sql=f"(NOT {pre_bad_flag} AND {c.fail_sql})") for c in checks]


@dataclass
class MarkedFrame:
    """All rows with ``_lakelogic_errors``/``_lakelogic_categories`` (NULL for good rows) and a bad mark."""

    frame: DataFrame
    data_columns: list[str]
    post_created: list[str]
    pre_bad_flag: str
    # Error-severity checks in message order with their flag columns (kept hidden in ``frame``).
    message_checks: list[tuple[str, Check]] = field(default_factory=list)
    # Extra condition on quarantined rows (a re-evaluation restricted to some of them).
    bad_filter: str | None = None

    def good(self, drop: Sequence[str] = ()) -> DataFrame:
        keep = [F.col(quote_ident(c)) for c in self.data_columns if c not in set(drop)]
        return self.frame.where(f"NOT {MARK_COLUMN}").select(*keep)

    def _kept_columns(self) -> list[Column]:
        """The data columns a quarantined row keeps: post-created ones are NULL after a pre failure."""
        created = set(self.post_created)
        return [
            F.when(~F.col(self.pre_bad_flag), F.col(quote_ident(c))).alias(c)
            if c in created
            else F.col(quote_ident(c))
            for c in self.data_columns
        ]

    def bad(self) -> DataFrame:
        frame, where = self.frame, MARK_COLUMN
        if self.bad_filter is not None:
            frame = pushdown_barrier(frame)
            where = f"{MARK_COLUMN} AND ({self.bad_filter})"
        return frame.where(where).select(
            *self._kept_columns(), F.col(ERRORS_COLUMN), F.col(CATEGORIES_COLUMN)
        )

    def blanked(self) -> DataFrame:
        """Every row with the columns a quarantined row keeps, its messages (NULL for good rows) and the
        hidden flags: the input of the one-job split (engines.spark.fanout). Good rows are unchanged by
        the blanking."""
        hidden = [MARK_COLUMN, self.pre_bad_flag, *[flag for flag, _ in self.message_checks]]
        return self.frame.select(
            *self._kept_columns(),
            F.col(ERRORS_COLUMN),
            F.col(CATEGORIES_COLUMN),
            *[F.col(h) for h in hidden],
        )


def mark(pre: PhaseResult, post: PhaseResult, pre_columns: Sequence[str]) -> MarkedFrame:
    """One projection: message arrays (pre messages, then post) for failing rows, and the bad mark."""
    pre_msgs, pre_cats = pre.message_items()
    post_msgs, post_cats = post.message_items()
    bad = f"({pre.bad_flag} OR {post.bad_flag})"
    data = [
        c for c in post.data_columns if not c.startswith(HIDDEN_PREFIX) and not c.startswith("__lakelogic_")
    ]
    message_checks = [*pre.quarantining(), *post.quarantining()]
    marked = post.flagged.select(
        *[F.col(quote_ident(c)) for c in data],
        F.expr(f"CASE WHEN {bad} THEN {array_sql(pre_msgs + post_msgs)} END").alias(ERRORS_COLUMN),
        F.expr(f"CASE WHEN {bad} THEN {array_sql(pre_cats + post_cats)} END").alias(CATEGORIES_COLUMN),
        F.expr(bad).alias(MARK_COLUMN),
        F.col(pre.bad_flag),
        *[F.col(flag) for flag, _ in message_checks],
    )
    created = [c for c in data if c not in set(pre_columns)]
    return MarkedFrame(marked, data, created, pre.bad_flag, message_checks)
