"""Parquet outputs of a run (``output_good`` / ``output_bad``) written to a staging directory first and
moved into place only when the run passes its gates, through the Hadoop FileSystem API (local paths
and object stores alike). Also the no-op action used when a frame is not written anywhere.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession


def hadoop_filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(Hadoop FileSystem, Hadoop Path) for ``path``: local paths and object stores alike."""
    jvm = spark.sparkContext._jvm  # the Hadoop FileSystem API has no Python binding
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    return hpath.getFileSystem(conf), hpath


def noop_action(frame: DataFrame) -> None:
    """Execute ``frame`` fully without writing (fills its observations); no data reaches the driver."""
    frame.write.format("noop").mode("overwrite").save()


class StagedOutput:
    """Staged in ``<path>.__lakelogic_staging_<run>`` (:meth:`write`), moved to ``path`` (:meth:`commit`)."""

    def __init__(self, spark: SparkSession, path: str, run_id: str) -> None:
        self.spark = spark
        self.path = path.rstrip("/")
        self.staging = f"{self.path}.__lakelogic_staging_{run_id.replace('-', '')[:12]}"
        self._written = False

    def filesystem(self, path: str) -> tuple[Any, Any]:
        return hadoop_filesystem(self.spark, path)

    def write(self, frame: DataFrame) -> None:
        frame.write.mode("overwrite").parquet(self.staging)
        self._written = True

    def adopt(self, staging: str) -> None:
        """Use ``staging``, written by another job (engines.spark.fanout), as this output's staged data."""
        self.staging = staging.rstrip("/")
        self._written = True

    def read(self) -> DataFrame:
        """The staged rows (lazily; valid until :meth:`commit` or :meth:`discard`)."""
        return self.spark.read.parquet(self.staging)

    def commit(self) -> None:
        """Replace ``path`` with the staged output (overwrite semantics)."""
        if not self._written:
            return
        fs, final = self.filesystem(self.path)
        _, staging = self.filesystem(self.staging)
        if fs.exists(final):
            fs.delete(final, True)
        parent = final.getParent()
        if parent is not None and not fs.exists(parent):
            fs.mkdirs(parent)
        if not fs.rename(staging, final):
            raise OSError(f"could not move {self.staging} to {self.path}")
        self._written = False

    def discard(self) -> None:
        fs, staging = self.filesystem(self.staging)
        if fs.exists(staging):
            fs.delete(staging, True)
        self._written = False


SCRATCH_CONF = "spark.lakelogic.scratchDir"


def scratch_root(spark: SparkSession) -> str | None:
    """Where a materialized run may stage its evaluated rows: ``LAKELOGIC_SCRATCH_DIR``, else the Spark
    setting ``spark.lakelogic.scratchDir`` (for a cluster's configuration), each any Hadoop path every
    executor can reach; else the system temp directory for a local master; else None (a cluster needs a
    shared location; without one the run keeps the two-action path)."""
    import os
    import tempfile

    configured = configured_location(spark, "LAKELOGIC_SCRATCH_DIR", SCRATCH_CONF)
    if configured is not None:
        return configured
    if is_local(spark):
        return os.path.join(tempfile.gettempdir(), "lakelogic-scratch")
    return None


def configured_location(spark: SparkSession, env_var: str, conf_key: str) -> str | None:
    """A shared location from the environment variable, else the Spark setting (a cluster's
    configuration); None when neither is set."""
    import os

    configured = os.environ.get(env_var, "").strip() or str(spark.conf.get(conf_key, "") or "").strip()
    return configured.rstrip("/") if configured else None


def is_local(spark: SparkSession) -> bool:
    """A local master: the driver's disk is every executor's disk."""
    return (spark.sparkContext.master or "").startswith("local")


class ScratchSpace:
    """A run-private directory for staged rows that only feed the materialization; removed at the end of
    the run whether it commits or not (it is in the run's staged list for that)."""

    def __init__(self, spark: SparkSession, root: str, run_id: str) -> None:
        self.spark = spark
        self.path = f"{root}/{run_id.replace('-', '')}"

    def good_path(self) -> str:
        return f"{self.path}/good"

    def commit(self) -> None:
        self.discard()

    def discard(self) -> None:
        fs, path = hadoop_filesystem(self.spark, self.path)
        if fs.exists(path):
            fs.delete(path, True)
