"""Run a Spark SQL statement so that its Iceberg commit carries extra snapshot-summary properties.

DataFrameWriterV2 takes ``snapshot-property.<k>`` options, but SQL statements (``MERGE INTO``) have no
options. Iceberg's ``CommitMetadata.withCommitProperties`` sets thread-local properties that the commit
of any write on the same JVM thread picks up; we call it through Py4J with a Python ``Callable``. The
Py4J client/server pairs the Python thread with one JVM thread, so the nested ``spark.sql`` call runs on
the thread that holds the properties.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from lakelogic.errors import CommitError
from lakelogic.tables.iceberg_java import java_class


class _JavaCallable:
    """A ``java.util.concurrent.Callable`` implemented in Python; keeps the Python exception."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self.error: BaseException | None = None

    def call(self) -> None:
        try:
            self._fn()
        except BaseException as exc:  # recorded and re-raised in the caller's Python frame
            self.error = exc
            raise
        return None

    class Java:
        implements = ["java.util.concurrent.Callable"]


def run_with_commit_properties(
    spark: SparkSession, properties: Mapping[str, str], fn: Callable[[], None]
) -> None:
    """Run ``fn`` (which performs one Iceberg write) with ``properties`` in its snapshot summary."""
    from pyspark.java_gateway import ensure_callback_server_started

    context: Any = spark.sparkContext
    gateway = context._gateway
    ensure_callback_server_started(gateway)
    jprops = java_class(spark, "java.util.HashMap")()
    for key, value in properties.items():
        jprops.put(key, value)
    callable_ = _JavaCallable(fn)
    exception_class = java_class(spark, "java.lang.Class").forName("java.lang.RuntimeException")
    try:
        java_class(spark, "org.apache.iceberg.spark.CommitMetadata").withCommitProperties(
            jprops, callable_, exception_class
        )
    except Exception as exc:
        if callable_.error is not None:
            raise callable_.error from None
        raise CommitError(f"Iceberg commit with properties failed: {exc}") from exc
