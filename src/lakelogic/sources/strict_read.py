"""The reader of source files: a corrupt or vanished file fails the read, never a silent skip.

``spark.sql.files.ignoreCorruptFiles`` and ``ignoreMissingFiles`` (common on Databricks) make Spark skip a
truncated file, or one removed between the listing and the scan, and the run then reports the rows it
did read as the whole source: counts reconcile, and the missing rows are lost without a trace. A run pins
both settings off (engines.spark.pinned), but the frames a run returns are planned again when they are
evaluated later, after the session's own values are back, so the source read names them itself. A
source's ``engine_options`` may still set them: that is the contract's own choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession

STRICT_FILE_OPTIONS = {"ignoreCorruptFiles": "false", "ignoreMissingFiles": "false"}


def source_reader(spark: SparkSession) -> DataFrameReader:
    """``spark.read`` with :data:`STRICT_FILE_OPTIONS`."""
    return spark.read.options(**STRICT_FILE_OPTIONS)
