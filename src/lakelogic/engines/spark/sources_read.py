"""Step 1 on Spark: the run's input frame, from a DataFrame, a path, or the contract's ``source``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakelogic.engines.spark.context import SparkRunContext
from lakelogic.engines.spark.source_bounds import PROCESSED_AT
from lakelogic.errors import PlanError, UnsupportedError
from lakelogic.plan.steps import ReadSource
from lakelogic.report import SourceInfo
from lakelogic.sources.columns import SOURCE_FILE_COLUMN
from lakelogic.sources.date_folders import in_date_folders
from lakelogic.sources.delta_cursor import DELTA_VERSION_STRATEGY, stored_version
from lakelogic.sources.files import SourceRead, read_files, resolve_path
from lakelogic.sources.manifest import MANIFEST_STRATEGY
from lakelogic.sources.window_apply import SourceWindowState, filter_rows, observe_watermark
from lakelogic.sources.windows import (
    BY_DATE_COLUMN,
    INCREMENTAL_MODES,
    WINDOW_NOT_APPLICABLE,
    WindowDecision,
    decide,
    file_mtime,
)
from lakelogic.tables.delta_files import read_delta, read_delta_since
from lakelogic.types import LogicalType

_FILE_TYPES = {"landing", "sftp", "file", "files"}
_TABLE_TYPES = {"table", "delta", "iceberg"}
_TEMPORAL = {"date", "timestamp", "timestamp_ntz"}  # model types a date column may have


@dataclass
class SourceOutcome:
    frame: DataFrame | None  # None: nothing to read (no qualifying file)
    info: SourceInfo
    empty_behavior: str
    # §14 `_lakelogic_source` of rows whose own file cannot be traced (a `sql` op dropped it): the one
    # file read, else the location read (file, directory, glob or table); None for in-memory input.
    location: str | None = None
    files_read: list[str] = field(default_factory=list)  # local files taken (§17 cleans them up)
    # the run took only some rows of its files (a partition filter on a data column): §17 leaves them
    some_rows_only: bool = False


def read_plan_source(
    ctx: SparkRunContext,
    step: ReadSource | None,
    source: DataFrame | str | Path | None,
    *,
    with_file_path: bool,
    model_fields: Sequence[str] = (),
    model_types: Mapping[str, LogicalType] | None = None,
) -> SourceOutcome:
    """The run's input: a DataFrame as given; a path or the contract's source read, with the source's
    ``partition_filters`` applied (a DataFrame stands for data already read). ``model_fields`` name the
    columns of header-less CSV files, in order; ``model_types`` the fields' types, which
    decide how JSON values are read where Spark's inference would change them (sources/files.py)."""
    outcome = _read(
        ctx, step, source, with_file_path=with_file_path, model_fields=model_fields, model_types=model_types
    )
    if (
        step is not None
        and step.partition_filters
        and outcome.frame is not None
        and not isinstance(source, DataFrame)
    ):
        outcome.frame = _partition_filtered(outcome.frame, step.partition_filters)
        folders = _folder_keys(outcome.files_read)
        if any(column not in folders for column in step.partition_filters):
            # a filter on a data column takes some rows of every file: the files were all read, and
            # cleaning them up would lose the rows the filter left
            outcome.some_rows_only = True
        # the run takes only the filtered partitions' files (the report's list, what §17 cleanup may touch)
        elif outcome.files_read:
            outcome.files_read = [f for f in outcome.files_read if _in_partitions(f, step.partition_filters)]
            outcome.info.files_count = len(outcome.files_read)
            outcome.info.files = [f for f in outcome.info.files if _in_partitions(f, step.partition_filters)]
    return outcome


def _folder_keys(files: Sequence[str]) -> set[str]:
    """The ``key`` of every ``key=value`` folder the files sit in."""
    return {part.split("=", 1)[0] for f in files for part in Path(f).parent.parts if "=" in part}


def _in_partitions(path: str, filters: Mapping[str, Any]) -> bool:
    folders = dict(part.split("=", 1) for part in Path(path).parent.parts if "=" in part)
    for column, value in filters.items():
        wanted = [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
        if folders.get(column) not in wanted:
            return False
    return True


def _partition_filtered(frame: DataFrame, filters: Mapping[str, Any]) -> DataFrame:
    """``partition_filters`` (SEMANTICS §3.1): ``column = value`` (a list: any of the values) for each
    entry. Spark prunes directory partitions and pushes the predicate into the file scan."""
    from pyspark.sql import functions as F

    for column, value in filters.items():
        if column not in frame.columns:
            raise PlanError(
                f"partition filter column {column!r} is not in the source",
                yaml_path=f"source.partition_filters.{column}",
                hint=f"source columns (partition directories included): {', '.join(frame.columns)}",
            )
        target = F.col("`" + column.replace("`", "``") + "`")
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        frame = frame.where(target.isin(values))
    return frame


def _read(
    ctx: SparkRunContext,
    step: ReadSource | None,
    source: DataFrame | str | Path | None,
    *,
    with_file_path: bool,
    model_fields: Sequence[str],
    model_types: Mapping[str, LogicalType] | None,
) -> SourceOutcome:
    empty = step.empty_behavior if step is not None else "fail"
    dated = window_date_column(step, model_types) if step is not None else None
    if isinstance(source, DataFrame):
        window = ctx.source_window
        if window is None or step is None or not (step.watermark_field or _by_date(step, window, dated)):
            return SourceOutcome(source, SourceInfo(type="dataframe"), empty)
        # data already read: of a window only a row filter can apply (SEMANTICS §3.4, DRIVER §8)
        read = SourceRead(source, SourceInfo(type="dataframe"), "dataframe")
        return _windowed(ctx, step, read, empty, dated, model_types)
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
            select=_selector(ctx, step, dated),
            headerless_names=model_fields,
            model_types=model_types,
        )
        ctx.warnings.extend(read.warnings)
        return _windowed(ctx, step, read, empty, dated, model_types)
    if step is None or not step.path:
        raise PlanError(
            "the contract has no source path; pass a DataFrame or a path to run()", yaml_path="source.path"
        )
    kind = step.source_type.lower()
    if kind in _TABLE_TYPES:
        fmt = kind if kind != "table" else (step.format or None)
        if _reads_delta_versions(ctx, step):
            return _delta_version_read(ctx, step, fmt, empty, with_file_path=with_file_path)
        frame = read_table(ctx.spark, step.path, fmt=fmt)
        if with_file_path:  # §14 _lakelogic_source: the source file of the row, or the table name
            frame = frame.withColumn(SOURCE_FILE_COLUMN, F.lit(step.path))
        # a table has no files to select: of a window only the watermark row filter applies (§3.4)
        table = SourceRead(frame, SourceInfo(type=kind, path=step.path), kind)
        outcome = _windowed(ctx, step, table, empty, dated, model_types)
        outcome.location = step.path
        return outcome
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
        select=_selector(ctx, step, dated),
        headerless_names=model_fields,
        model_types=model_types,
    )
    ctx.warnings.extend(read.warnings)
    return _windowed(ctx, step, read, empty, dated, model_types)


def read_table(spark: SparkSession, name: str, *, fmt: str | None) -> DataFrame:
    """A catalog table (``catalog.ns.table`` or ``table:...``) or a Delta/Iceberg path."""
    ref = name.removeprefix("table:")
    if fmt == "delta" or (fmt is None and "/" in ref):
        return read_delta(spark, ref)
    if "/" in ref and fmt == "iceberg":
        return spark.read.format("iceberg").load(ref)
    return spark.table(ref)


def _reads_delta_versions(ctx: SparkRunContext, step: ReadSource) -> bool:
    """An incremental ``delta_version`` source under a window it bounds itself: standalone, or the
    driver's ``last_success``/full windows. Explicit windows (range, backfill, reprocess) select rows by
    their dates as for any table."""
    window = ctx.source_window
    return (
        window is not None
        and not window.explicit
        and step.load_mode.lower() in INCREMENTAL_MODES
        and str(step.settings.get("watermark_strategy") or "").lower() == DELTA_VERSION_STRATEGY
    )


def _delta_version_read(
    ctx: SparkRunContext, step: ReadSource, fmt: str | None, empty: str, *, with_file_path: bool
) -> SourceOutcome:
    """§3.4 ``delta_version``: the rows of the commits after the stored version, up to the latest one;
    the new cursor is that version."""
    assert step.path is not None and ctx.source_window is not None
    if fmt not in ("delta", None) or (fmt is None and "/" not in step.path):
        raise PlanError(
            "watermark_strategy delta_version reads Delta sources only; this source is "
            f"{fmt or 'a catalog table'}",
            yaml_path="source.watermark_strategy",
            hint="use max_target or pipeline_log with a watermark_field for other tables",
        )
    window = ctx.source_window
    previous = stored_version(window.cursor_field, window.cursor)
    changes = read_delta_since(ctx.spark, step.path.removeprefix("table:"), previous)
    frame = changes.frame
    if with_file_path:  # §14 _lakelogic_source: the table name
        frame = frame.withColumn(SOURCE_FILE_COLUMN, F.lit(step.path))
    decision = WindowDecision([], basis=DELTA_VERSION_STRATEGY, applied=previous is not None)
    ctx.source_window_state = SourceWindowState(
        window,
        decision,
        versions=(previous, changes.current),
        versions_idle=previous is not None and changes.added_files == 0,
    )
    if changes.rewritten_files:
        ctx.warnings.append(
            f"delta_version: commits after version {previous} updated or deleted rows in "
            f"{changes.rewritten_files} file(s) of the source; the rows those files kept are read again "
            "with the files that replaced them (a merge or SCD2 target absorbs them, an append target "
            "gets them twice)"
        )
    info = SourceInfo(type=step.source_type, path=step.path, files_count=changes.added_files)
    return SourceOutcome(frame, info, empty, step.path)


def _selector(ctx: SparkRunContext, step: ReadSource | None, dated: str | None) -> Any:
    """File selection: the date folders of ``source.partition`` (§3.1), then the run's window (§3.4),
    whose decision is recorded on ``ctx``. ``dated``: :func:`window_date_column`."""
    window = ctx.source_window
    partition = step.settings.get("partition") if step is not None else None
    if step is None or (window is None and not partition):
        return None
    root = resolve_path(step.path, ctx.contract_dir) if step.path else None

    def select(files: list[str]) -> list[str]:
        if partition and root is not None:
            files = in_date_folders(files, root, partition, ctx.as_of.date())
        if window is None:
            return files
        if ctx.manifest is not None and not window.explicit:
            # §3.4 `manifest`: the files the manifest does not list yet, whenever they landed, up to the
            # run's as_of (a file still being written is left to the next run)
            chosen = [
                f for f in ctx.manifest.unprocessed(files) if window.end is None or file_mtime(f) < window.end
            ]
            decision = WindowDecision(
                chosen, basis=MANIFEST_STRATEGY, applied=True, skipped_files=len(files) - len(chosen)
            )
            ctx.source_window_state = SourceWindowState(window, decision)
            return chosen
        decision = decide(
            files,
            window,
            load_mode=step.load_mode,
            watermark_field=step.watermark_field,
            date_column=dated,
        )
        ctx.source_window_state = SourceWindowState(window, decision)
        return decision.files

    return select


def _windowed(
    ctx: SparkRunContext,
    step: ReadSource | None,
    read: SourceRead,
    empty: str,
    dated: str | None,
    model_types: Mapping[str, LogicalType] | None = None,
) -> SourceOutcome:
    """The row filter of a window (watermark, or a full contract's date column ``dated``), the cursor
    observation and the "no new data" rule of a window."""
    window = ctx.source_window
    if step is None or window is None:
        return SourceOutcome(read.frame, read.info, empty, _location(read), read.selected)
    state: SourceWindowState | None = ctx.source_window_state
    if state is None:  # tables and remote paths are not listed: only a row window can apply
        mode, field = step.load_mode, step.watermark_field
        decision = decide([], window, load_mode=mode, watermark_field=field, date_column=dated)
        columns = read.frame.columns if read.frame is not None else []
        if field is None and decision.row_window is None and PROCESSED_AT in columns:
            # §3.4: `watermark_field` defaults to `_lakelogic_processed_at`; max_target took its lower
            # bound from that column, so the rows are windowed by it too (files go by arrival instead)
            decision = decide([], window, load_mode=mode, watermark_field=PROCESSED_AT)
        if decision.row_window is None and decision.applied:
            decision = WindowDecision([], "remote_files_not_windowed")
        state = ctx.source_window_state = SourceWindowState(window, decision)
    frame = read.frame
    rows = state.decision.row_window
    by_date = state.decision.basis == BY_DATE_COLUMN
    if frame is not None and rows is not None and by_date and rows.field not in frame.columns:
        # a pre transformation may make the column: the executor filters there (pending_date_window)
        ctx.pending_date_window = (step, model_types)
        rows = None
    if frame is not None and rows is not None:
        typed = None
        if by_date or _declared_temporal(rows.field, frame, model_types):
            # as enforcement will read it: the model's type and the source's date/timestamp formats
            # (a `dd/MM/yyyy HH:mm` watermark read as ISO was NULL, so every later window dropped it)
            typed = _date_value(frame, step, rows.field, model_types)
        frame = filter_rows(frame, rows, value=typed)
        if state.decision.watermark is not None:  # a full contract's date column is no cursor
            frame, state.watermark = observe_watermark(frame, rows.field, ctx.run_id, value=typed)
    return SourceOutcome(frame, read.info, empty, _location(read), read.selected)


def window_date_column(step: ReadSource, model_types: Mapping[str, LogicalType] | None) -> str | None:
    """The column that windows the rows of a ``full`` contract without ``watermark_field`` under an
    explicit window: the date column when the model declares it a date or timestamp. A partition column
    of another type (a region, a country) holds no dates to window by: such a contract reads everything
    (``window_not_applicable``), as before."""
    column = step.reprocess_date_column
    declared = (model_types or {}).get(column) if column else None
    return column if declared is not None and declared.kind in _TEMPORAL else None


def _declared_temporal(column: str, frame: DataFrame, model_types: Mapping[str, LogicalType] | None) -> bool:
    """The model declares the (source) column a date or timestamp."""
    declared = (model_types or {}).get(column)
    return declared is not None and declared.kind in _TEMPORAL and column in frame.columns


def _date_value(
    frame: DataFrame, step: ReadSource, column: str, model_types: Mapping[str, LogicalType] | None
) -> Any:
    """The date column as the model reads it (its type, the source's date/timestamp formats), as a
    timestamp: the row filter then places each row by the date enforcement will give it."""
    from lakelogic.engines.spark.casting import formats_from, strict_cast_sql

    declared = (model_types or {})[column]
    formats = formats_from(
        step.options.get("date_formats") or (), step.options.get("timestamp_formats") or ()
    )
    raw = "`" + column.replace("`", "``") + "`"
    return F.expr(strict_cast_sql(raw, frame.schema[column].dataType, declared, formats)).cast("timestamp")


def _by_date(step: ReadSource, window: Any, dated: str | None) -> bool:
    """The window filters the rows by the contract's date column (a full contract, an explicit window)."""
    decision = decide([], window, load_mode=step.load_mode, watermark_field=None, date_column=dated)
    return decision.basis == BY_DATE_COLUMN


def pending_date_filter(ctx: SparkRunContext, made: set[str]) -> Callable[[DataFrame], DataFrame] | None:
    """The row filter of a window whose date column the source lacked, for the frame after the pre
    transformations (which made the columns in ``made``); None when there is nothing to filter there.

    Asked right after the pre transformations: a column they make windows the rows there, before
    any cast or rule sees them (the rows outside are counted as filtered); otherwise the window does not
    apply, and the report says so (a reprocess write still refuses rows outside its window)."""
    pending = ctx.pending_date_window  # kept: a re-evaluation of some rows filters them again
    state: SourceWindowState | None = ctx.source_window_state
    if pending is None or state is None or state.decision.row_window is None:
        return None
    rows = state.decision.row_window
    if rows.field not in made:
        ctx.pending_date_window = None
        ctx.source_window_state = _date_column_missing(ctx, state, rows.field)
        return None
    step, model_types = pending

    def window(frame: DataFrame) -> DataFrame:
        return filter_rows(frame, rows, value=_date_value(frame, step, rows.field, model_types))

    return window


def _date_column_missing(ctx: SparkRunContext, state: SourceWindowState, column: str) -> SourceWindowState:
    """The date column is neither read from the source nor made by a pre transformation: the rows cannot
    be windowed, so the window does not apply; a reprocess write still refuses rows outside its window
    (tables.spark_write)."""
    ctx.warnings.append(
        f"window {state.window.label}: the date column {column!r} is not a source column, so the read "
        "was not limited to the window"
    )
    decision = WindowDecision(state.decision.files, WINDOW_NOT_APPLICABLE)
    return SourceWindowState(state.window, decision)


def _location(read: SourceRead) -> str | None:
    """Written like the per-row value Spark gives (``file:/abs/path`` for a local file)."""
    where = read.files[0] if len(read.files) == 1 else read.info.path
    if where is None or "://" in where or where.startswith("file:"):
        return where
    return "file:" + where if where.startswith("/") else where
