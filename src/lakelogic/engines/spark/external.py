"""``external_logic`` at step 3 (SEMANTICS §19): trusted Python code run in-process on the Spark frame.

The module is imported from its file path (a fresh module per run, so edits are picked up) and called
as ``entrypoint(frame, links=..., engine="spark", **args)``; ``contract=`` is passed only when the
function accepts it. The result must be a frame; pandas/Arrow results are converted to Spark.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakelogic.errors import ExternalLogicError, LakeLogicError, UnsupportedError
from lakelogic.plan.steps import ExternalLogic


def load_entrypoint(step: ExternalLogic) -> Callable[..., Any]:
    path = Path(step.path)
    if not path.is_file():
        raise ExternalLogicError(f"external_logic.path {step.path} does not exist")
    module_name = f"lakelogic_external_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ExternalLogicError(f"cannot import external_logic module {step.path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failed to import: a run error with its traceback
        raise ExternalLogicError(f"importing {step.path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.modules.pop(module_name, None)
    func = getattr(module, step.entrypoint, None)
    if not callable(func):
        raise ExternalLogicError(f"{step.path} has no callable {step.entrypoint!r}")
    return func


def _accepts_contract(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "contract" or p.kind == inspect.Parameter.VAR_KEYWORD for p in params)


def run_external_logic(
    spark: SparkSession,
    frame: DataFrame,
    step: ExternalLogic,
    *,
    links: Mapping[str, DataFrame],
    contract: Mapping[str, Any] | None,
) -> DataFrame:
    if step.type != "python":
        raise UnsupportedError(f"external_logic type {step.type!r} is not supported on the Spark engine yet")
    if step.engine.lower() != "spark":
        raise ExternalLogicError(
            f"external_logic is written for engine {step.engine!r}, but this run uses spark"
        )
    func = load_entrypoint(step)
    kwargs: dict[str, Any] = {"links": dict(links), "engine": "spark", **dict(step.args)}
    if contract is not None and _accepts_contract(func):
        kwargs["contract"] = dict(contract)
    try:
        result = func(frame, **kwargs)
    # user code failed: recorded in the report with its traceback. SystemExit too: `sys.exit()` in
    # user code must fail the run, not end the process with status 0 and no report
    except (Exception, SystemExit) as exc:
        raise ExternalLogicError(
            f"external_logic {step.path}: {step.entrypoint}() raised {type(exc).__name__}: {exc}"
        ) from exc
    if step.handles_output:
        return _read_back(spark, step)
    try:
        converted = to_spark_frame(spark, result)
    except LakeLogicError:
        raise
    except Exception as exc:  # a result this reader cannot convert is the code's error
        raise ExternalLogicError(
            f"external_logic {step.path}: the {type(result).__name__} {step.entrypoint}() returned could "
            f"not be turned into a Spark frame: {type(exc).__name__}: {exc}",
            hint="return a Spark DataFrame, a pandas DataFrame or a pyarrow Table",
        ) from exc
    return _distinct_columns(converted, step)


def _distinct_columns(frame: DataFrame, step: ExternalLogic) -> DataFrame:
    """A returned frame with two columns of one name (Spark matches names case-insensitively) would fail
    later as an ambiguous reference blamed on the contract's SQL; it is the code's result that is wrong."""
    seen: dict[str, str] = {}
    twice: list[str] = []
    for name in frame.columns:
        if name.lower() in seen:
            twice.append(name)
        seen.setdefault(name.lower(), name)
    if twice:
        raise ExternalLogicError(
            f"external_logic {step.entrypoint}() returned duplicate column(s) "
            f"{', '.join(sorted(set(twice)))}; each column name must be unique (case-insensitively)"
        )
    return frame


def to_spark_frame(spark: SparkSession, result: Any) -> DataFrame:
    if result is None:
        raise ExternalLogicError(
            "external_logic returned None; it must return a frame (handles_output: false)"
        )
    if isinstance(result, DataFrame):
        return result
    module = type(result).__module__
    if module.startswith("pandas"):
        import pyarrow as pa

        return _from_arrow(spark, pa.Table.from_pandas(result, preserve_index=False))
    if module.startswith("pyarrow"):
        return _from_arrow(spark, result)
    if module.startswith("polars"):
        return _from_arrow(spark, result.to_arrow())
    raise ExternalLogicError(f"external_logic returned {type(result).__name__}; expected a Spark DataFrame")


def _from_arrow(spark: SparkSession, table: Any) -> DataFrame:
    """An Arrow table as a Spark frame with Arrow's column types: missing values stay NULL (pandas' NaN
    and None included) and an all-NULL column keeps a NULL type for the model's cast to settle, where
    Spark's own pandas conversion turns None into 'NaN' text or cannot infer a type."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        schema = from_arrow_schema(table.schema)
    except Exception as exc:  # an Arrow type Spark cannot hold: a clear user error
        raise ExternalLogicError(f"external_logic returned columns Spark cannot hold: {exc}") from exc
    return spark.createDataFrame(table.to_pylist(), schema)


def _read_back(spark: SparkSession, step: ExternalLogic) -> DataFrame:
    if not step.output_path:
        raise ExternalLogicError("external_logic.handles_output needs output_path")
    fmt = (step.output_format or Path(step.output_path).suffix.lstrip(".") or "parquet").lower()
    fmt = {"jsonl": "json", "ndjson": "json"}.get(fmt, fmt)
    return spark.read.format(fmt).option("header", "true").load(step.output_path)
