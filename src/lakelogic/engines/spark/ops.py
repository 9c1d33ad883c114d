"""Spark execution of transformation ops (SEMANTICS §9): ``apply_transform`` for every op but ``cast``.

Ops compose lazily: each returns a new DataFrame over the previous one, with no Spark action. The one
exception is a ``pivot`` without ``values``, which needs the distinct pivot values (one small
aggregate, recorded as a warning). Row counting around steps is the engine core's job (it reads
``Transform.row_effect``); ops never count.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.spark import ops_columns as columns
from lakelogic.engines.spark import ops_dates as dates
from lakelogic.engines.spark import ops_links as links
from lakelogic.engines.spark import ops_reshape as reshape
from lakelogic.engines.spark import ops_rows as rows
from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.ops_frame import NO_OUTPUT_ROW, op_error
from lakelogic.engines.spark.ops_sqlviews import run_query
from lakelogic.engines.spark.ops_warnings import resolve_pending_warnings
from lakelogic.errors import EngineError, PlanError
from lakelogic.plan.sqlutil import first_line
from lakelogic.plan.steps import Transform

__all__ = ["IMPLEMENTATIONS", "apply_transform", "resolve_pending_warnings"]

OpImpl = Callable[[Transform, DataFrame, SparkRunContext], DataFrame]

IMPLEMENTATIONS: dict[str, OpImpl] = {
    "sql": run_query,
    "rename": columns.apply_rename,
    "derive": columns.apply_derive,
    "filter": columns.apply_filter,
    "select": columns.apply_select,
    "drop": columns.apply_drop,
    "trim": columns.apply_trim,
    "lower": columns.apply_lower,
    "upper": columns.apply_upper,
    "coalesce": columns.apply_coalesce,
    "map_values": columns.apply_map_values,
    "split": columns.apply_split,
    "json_extract": columns.apply_json_extract,
    "bucket": columns.apply_bucket,
    "date_diff": dates.apply_date_diff,
    "deduplicate": rows.apply_deduplicate,
    "deduplicate_by_latest": rows.apply_deduplicate,
    "explode": rows.apply_explode,
    "date_range_explode": dates.apply_date_range_explode,
    "lookup": links.apply_lookup,
    "join": links.apply_join,
    "rollup": reshape.apply_rollup,
    "pivot": reshape.apply_pivot,
    "unpivot": reshape.apply_unpivot,
}


def apply_transform(
    step: Transform, frame: DataFrame, ctx: SparkRunContext, *, keep_dropped: bool = False
) -> DataFrame:
    """Apply one op to ``frame`` (lazily). ``cast`` is executed by the engine core (its failures feed
    the quarantine), so it is not handled here.

    ``keep_dropped``: the input rows the op drops stay, marked by ``NO_OUTPUT_ROW`` (ops that also add
    rows: the executor counts them before removing them). Raises :class:`PlanError` (op index and YAML
    path) when the op names a missing column or link.
    """
    out = _apply(step, frame, ctx)
    if keep_dropped or NO_OUTPUT_ROW not in out.columns:
        return out
    return out.where(~F.col(NO_OUTPUT_ROW)).drop(NO_OUTPUT_ROW)


def _apply(step: Transform, frame: DataFrame, ctx: SparkRunContext) -> DataFrame:
    impl = IMPLEMENTATIONS.get(step.op)
    if impl is None:
        if step.op == "cast":
            raise EngineError(
                "the `cast` op is applied by the engine core (strict casting), not apply_transform"
            )
        raise PlanError(f"unknown transformation op {step.op!r}", yaml_path=step.yaml_path)
    try:
        return impl(step, frame, ctx)
    except AnalysisException as exc:
        # Spark analyses eagerly, so a bad column/table/type in contract SQL surfaces here: report it
        # as the contract's problem, at the op's YAML path, instead of a Spark stack trace.
        raise op_error(
            step, f"Spark cannot analyse this op: {first_line(exc)}", _SQL_KEYS.get(step.op)
        ) from exc


# The parameter holding the op's SQL, for error paths (`transformations[2].derive.sql`).
_SQL_KEYS = {"derive": "sql", "filter": "sql", "rollup": "aggregations"}
