"""Lineage columns (SEMANTICS §14) and ``preserve_upstream`` copies, as constant/cheap expressions.

Values are fixed per run (the processing time is the run's start, not per row), so good and quarantined
rows of one run carry identical lineage and re-reads of a lazy frame stay deterministic.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakelogic.plan.sqlutil import quote_ident
from lakelogic.plan.steps import AddLineage, PreserveUpstream
from lakelogic.sources.columns import SOURCE_FILE_COLUMN


def preserve_upstream(frame: DataFrame, step: PreserveUpstream, warnings: list[str]) -> DataFrame:
    present = set(frame.columns)
    copies: dict[str, Column] = {}
    for column in step.columns:
        if column not in present:
            warnings.append(f"preserve_upstream: column {column!r} is not in the input; skipped")
            continue
        target = step.prefix + column  # `_upstream` + `_lakelogic_run_id` (same naming as the compiler)
        copies[target] = F.col(quote_ident(column))
    if not copies:
        return frame
    # An input that is itself a LakeLogic output may carry its own upstream copy: this run's copy (the
    # input's lineage) replaces it in place instead of making the name ambiguous.
    kept = [F.col(quote_ident(c)) for c in frame.columns if c not in copies]
    return frame.select(*kept, *[value.alias(name) for name, value in copies.items()])


def lineage_values(
    step: AddLineage, *, run_id: str, pipeline_run_id: str | None, processed_at: datetime
) -> dict[str, Column]:
    """Output column -> expression for every lineage column the step asks for."""
    values: Mapping[str, str] = step.values
    out: dict[str, Column] = {}
    for column, kind in step.columns.items():
        if kind == "source_path":
            out[column] = F.col(SOURCE_FILE_COLUMN)  # filled at read time; NULL for in-memory input
        elif kind in ("processed_at", "created_at"):
            out[column] = F.lit(processed_at).cast("timestamp")
        elif kind == "run_id":
            out[column] = F.lit(run_id)
        elif kind == "pipeline_run_id":
            out[column] = F.lit(pipeline_run_id or run_id)
        elif kind == "created_by":
            out[column] = F.lit(values.get(column) or values.get("created_by") or _os_user())
        else:  # contract_name, domain, system: constants resolved by the compiler
            out[column] = F.lit(values.get(column, values.get(kind))).cast("string")
    return out


def add_lineage(
    frame: DataFrame, columns: Mapping[str, Column], *, source_location: str | None = None
) -> DataFrame:
    """Replace same-named columns in place, append the others (re-stamping upstream lineage).

    ``source_location`` stands in for the row's file where an op did not carry it (§14)."""
    if not columns:
        return frame
    if SOURCE_FILE_COLUMN not in frame.columns:
        frame = frame.withColumn(SOURCE_FILE_COLUMN, F.lit(source_location).cast("string"))
    existing = [columns[c].alias(c) if c in columns else F.col(quote_ident(c)) for c in frame.columns]
    added = [col.alias(name) for name, col in columns.items() if name not in frame.columns]
    return frame.select(*existing, *added)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"
