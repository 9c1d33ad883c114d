"""The quarantine frame (SEMANTICS §11): malformed records, pre failures and post failures in one frame.

Rows keep every column they had when they failed (union schema; absent = NULL) plus
``_lakelogic_errors``, ``_lakelogic_categories`` (same order and length), ``_lakelogic_run_id`` (always)
and ``_lakelogic_quarantined_at`` (UTC, the run's start so every row of a run agrees).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark.counting import Observations
from lakelogic.engines.spark.rules import CATEGORIES_COLUMN, ERRORS_COLUMN
from lakelogic.plan.sqlutil import quote_ident
from lakelogic.sources.columns import CORRUPT_COLUMN, CORRUPT_REASON_COLUMN, SOURCE_FILE_COLUMN

RUN_ID_COLUMN = "_lakelogic_run_id"
QUARANTINED_AT_COLUMN = "_lakelogic_quarantined_at"
MALFORMED_RULE = "malformed_record"


@dataclass
class QuarantineParts:
    malformed: DataFrame | None
    pre: DataFrame
    post: DataFrame | None


def has_malformed_column(frame: DataFrame) -> bool:
    """True when the reader kept unparseable records in a corrupt-record column."""
    return CORRUPT_COLUMN in frame.columns


# The source observation's count of unparseable records: the one-job split knows from it, without a
# scan of its own, whether the malformed branch has rows to write.
MALFORMED_ROWS = "malformed_rows"


def source_metrics(frame: DataFrame) -> dict[str, Column]:
    """Extra metrics of the source observation: the unparseable records, when the reader keeps them."""
    if CORRUPT_COLUMN not in frame.columns:
        return {}
    return {MALFORMED_ROWS: F.expr(f"count_if({quote_ident(CORRUPT_COLUMN)} IS NOT NULL)")}


def malformed_split(frame: DataFrame, observations: Observations) -> tuple[DataFrame, DataFrame | None]:
    """Separate records the reader could not parse; they go straight to quarantine (never into ops)."""
    if CORRUPT_COLUMN not in frame.columns:
        return frame, None
    corrupt = F.col(CORRUPT_COLUMN)
    good = frame.where(corrupt.isNull()).drop(CORRUPT_COLUMN, CORRUPT_REASON_COLUMN)
    data = [c for c in frame.columns if c not in (CORRUPT_COLUMN, CORRUPT_REASON_COLUMN)]
    # Spark refuses scans of raw JSON/CSV that read only the corrupt-record column; the observation
    # reads one data column too, so column pruning can never reduce the malformed branch to it.
    keep = {"data_values": F.count(F.col(quote_ident(data[0])))} if data else {}
    malformed = observations.observe(frame.where(_malformed(corrupt, data)), "malformed", keep, branch=True)
    return good, malformed


def _malformed(corrupt: Column, data: list[str]) -> Column:
    """``corrupt IS NOT NULL``, written so the scan parses every data column. A record is malformed only
    where the read parses the value that breaks it (a JSON number too large for a decimal field's read
    type): a scan of the corrupt column and one data column read such a record as clean, and its row
    was in neither output. The added clause is never true (a length is never negative), but the
    optimizer cannot fold it away with its column references."""
    if not data:
        return corrupt.isNotNull()
    reads = reduce(lambda a, b: a | b, [F.col(quote_ident(c)).isNull() for c in data])
    return corrupt.isNotNull() | ((F.length(corrupt) < 0) & reads)


def _malformed_rows(malformed: DataFrame, like: DataFrame, *, include_reason: bool) -> DataFrame:
    """Malformed records shaped like the pre-failure rows: data columns NULL, one schema message."""
    corrupt = F.col(CORRUPT_COLUMN)
    raw = set(malformed.columns)
    cols = []
    for f in like.schema.fields:
        if f.name in (ERRORS_COLUMN, CATEGORIES_COLUMN):
            continue
        if f.name == SOURCE_FILE_COLUMN and f.name in raw:
            cols.append(F.col(SOURCE_FILE_COLUMN))
        elif f.name in raw:
            # Referencing the real column (always NULL here) keeps Spark from reading only the
            # corrupt-record column, which its JSON/CSV readers refuse. The raw column is only tested,
            # never cast: its raw type (CSV text) need not cast to the field's (text to an array does not).
            reads_the_column = F.col(quote_ident(f.name)).isNull() & corrupt.isNull()
            cols.append(F.when(reads_the_column, F.lit(None)).cast(f.dataType).alias(f.name))
        else:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
    reason = F.lit("unparseable record")
    if CORRUPT_REASON_COLUMN in raw:
        reason = F.coalesce(F.col(CORRUPT_REASON_COLUMN), reason)
    detail = F.concat(F.lit(f"Rule failed: {MALFORMED_RULE} ("), reason, F.lit(": "), corrupt, F.lit(")"))
    message = detail if include_reason else F.lit(f"Rule failed: {MALFORMED_RULE}")
    return malformed.select(
        *cols, F.array(message).alias(ERRORS_COLUMN), F.array(F.lit("schema")).alias(CATEGORIES_COLUMN)
    )


def assemble_quarantine(
    parts: QuarantineParts,
    *,
    run_id: str,
    quarantined_at: datetime,
    include_reason: bool,
    model_fields: Sequence[str] = (),
    only_malformed: bool = False,
    model_types: Mapping[str, str] | None = None,
) -> DataFrame:
    """The quarantine frame of ``parts`` (``only_malformed``: of its malformed records alone, in the
    columns the whole frame would have: the one-job split writes them apart from the rows it rebuilds)."""
    frames = []
    if parts.malformed is not None:
        frames.append(_malformed_rows(parts.malformed, parts.pre, include_reason=include_reason))
    frames.append(parts.pre.limit(0) if only_malformed else parts.pre)
    if parts.post is not None:
        frames.append(parts.post.limit(0) if only_malformed else parts.post)
    bad = frames[0]
    for other in frames[1:]:
        bad = bad.unionByName(other, allowMissingColumns=True)
    reserved = (ERRORS_COLUMN, CATEGORIES_COLUMN, RUN_ID_COLUMN, QUARANTINED_AT_COLUMN)
    others = [c for c in bad.columns if c not in reserved]
    # Model fields first (model order), then whatever else the rows carried when they failed.
    data = [c for c in model_fields if c in others] + [c for c in others if c not in model_fields]
    # §8/§11: a model column only a post op creates is NULL for rows quarantined before it, whichever
    # ops ran (without a post phase that quarantines, no part of the union carried it at all)
    missing = [c for c in model_fields if c not in others and (model_types or {}).get(c)]
    columns = [F.col(quote_ident(c)) for c in data] + [
        F.lit(None).cast((model_types or {})[c]).alias(c) for c in missing
    ]
    order = {c: i for i, c in enumerate(model_fields)}
    ranked = sorted(zip([*data, *missing], columns, strict=True), key=lambda p: order.get(p[0], len(order)))
    return bad.select(
        *[column for _, column in ranked],
        F.col(ERRORS_COLUMN),
        F.col(CATEGORIES_COLUMN),
        F.lit(run_id).alias(RUN_ID_COLUMN),
        F.lit(quarantined_at).cast("timestamp").alias(QUARANTINED_AT_COLUMN),
    )
