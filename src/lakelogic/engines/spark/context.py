"""What a Spark step needs besides its input frame."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class SparkRunContext:
    """Per-run state shared by the executor and the op implementations.

    ``links`` are loaded once per run (name -> DataFrame); ``warnings`` collect report warnings
    (e.g. ``lookup_duplicate_keys``); ``contract_dir`` resolves relative paths.
    """

    spark: SparkSession
    run_id: str
    as_of: datetime
    links: dict[str, DataFrame] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    contract_dir: Path | None = None
    pipeline_run_id: str | None = None
    # Warnings only known once the run's actions have executed (read from Spark observations, e.g.
    # lookup_duplicate_keys); lakelogic.engines.spark.ops.resolve_pending_warnings moves them to
    # ``warnings``.
    pending_warnings: list[Callable[[float], list[str]]] = field(default_factory=list)
    # The run's processing window as the source reader applies it (lakelogic.sources.windows), and
    # what the read did with it (lakelogic.sources.window_apply.SourceWindowState, for the report).
    source_window: Any = None
    source_window_state: Any = None
    # the pipeline run's reference cache (lakelogic.engines.spark.link_cache), None when not caching
    link_cache: Any = None
    # The file manifest of a `manifest` watermark strategy (lakelogic.sources.manifest), None otherwise.
    manifest: Any = None
    # A window's date column the source lacks: (read step, model types) until the pre transformations
    # have run (engines.spark.sources_read.pending_date_filter).
    pending_date_window: Any = None
