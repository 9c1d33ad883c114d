"""Empty or drop a contract's outputs (target and quarantine sink) in any supported format.

``empty_outputs`` keeps schema and commit history (one stamped commit per table, role ``reset``), so a
reset is visible in the table's history; ``drop_outputs`` removes the tables entirely.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _sinks(resolved: ResolvedTarget) -> list[ResolvedTarget]:
    return [resolved] + ([resolved.quarantine] if resolved.quarantine is not None else [])


def empty_outputs(
    spark: SparkSession, resolved: ResolvedTarget, *, contract: str = ""
) -> list[tuple[str, bool]]:
    """Delete every row of the target and its quarantine sink; ``(name, existed)`` per table."""
    from lakelogic.tables.spark_write import adapter_for

    stamp = CommitStamp(run_id=f"reset-{uuid.uuid4()}", contract=contract, role="reset")
    return [(sink.name, adapter_for(spark, sink).empty(stamp)) for sink in _sinks(resolved)]


def drop_outputs(spark: SparkSession, resolved: ResolvedTarget) -> list[tuple[str, bool]]:
    """Drop the target and its quarantine sink (Iceberg ``DROP TABLE ... PURGE``; paths deleted)."""
    from lakelogic.tables.spark_write import adapter_for

    return [(sink.name, adapter_for(spark, sink).drop()) for sink in _sinks(resolved)]
