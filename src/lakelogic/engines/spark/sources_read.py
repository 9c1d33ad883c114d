"""Step 1 on Spark: the run's input frame, from a DataFrame, a path, or the contract's ``source``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.errors import PlanError, UnsupportedError
from lakelogic.plan.steps import ReadSource
from lakelogic.report import SourceInfo
from lakelogic.sources.files import read_files, read_table

_FILE_TYPES = {"landing", "sftp", "file", "files"}
_TABLE_TYPES = {"table", "delta", "iceberg"}


@dataclass
class SourceOutcome:
    frame: DataFrame | None  # None: nothing to read (no qualifying file)
    info: SourceInfo
    empty_behavior: str


def read_plan_source(
    ctx: SparkRunContext,
    step: ReadSource | None,
    source: DataFrame | str | Path | None,
    *,
    with_file_path: bool,
) -> SourceOutcome:
    empty = step.empty_behavior if step is not None else "fail"
    if isinstance(source, DataFrame):
        return SourceOutcome(source, SourceInfo(type="dataframe"), empty)
    if source is not None:
        read = read_files(
            ctx.spark,
            path=str(source),
            fmt=step.format if step is not None and step.source_type in _FILE_TYPES else None,
            options=step.options if step is not None else None,
            pattern=step.pattern if step is not None else None,
            base_dir=Path.cwd(),
            with_file_path=with_file_path,
            source_type=step.source_type if step is not None else "landing",
        )
        return SourceOutcome(read.frame, read.info, empty)
    if step is None or not step.path:
        raise PlanError(
            "the contract has no source path; pass a DataFrame or a path to run()", yaml_path="source.path"
        )
    kind = step.source_type.lower()
    if kind in _TABLE_TYPES:
        fmt = kind if kind != "table" else (step.format or None)
        frame = read_table(ctx.spark, step.path, fmt=fmt)
        return SourceOutcome(frame, SourceInfo(type=kind, path=step.path), empty)
    if kind not in _FILE_TYPES:
        raise UnsupportedError(f"source type {step.source_type!r} is not supported by the Spark engine yet")
    read = read_files(
        ctx.spark,
        path=step.path,
        fmt=step.format,
        options=step.options,
        pattern=step.pattern,
        base_dir=ctx.contract_dir,
        with_file_path=with_file_path,
        source_type=kind,
    )
    return SourceOutcome(read.frame, read.info, empty)
