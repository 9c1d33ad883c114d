"""The Spark session LakeLogic runs on.

When a session is already active (Databricks, spark-submit, a notebook) it is used as is: catalogs and
Delta support are the cluster's business. Otherwise a local session is built with the embedded Iceberg
catalog (hadoop type) over the project warehouse. Settings come from configuration (environment
variables below), never from code paths, so the same contract runs on a cluster unchanged.

Environment:
  LAKELOGIC_WAREHOUSE       embedded Iceberg warehouse directory (default ./.lakelogic/warehouse)
  LAKELOGIC_CATALOG         name of the default catalog (default ``lakelogic``)
  LAKELOGIC_SPARK_MASTER    master for the local session (default ``local[*]``)
  LAKELOGIC_SPARK_CONF      extra ``key=value`` pairs separated by ``;`` (they override the defaults, e.g.
                            ``spark.sql.shuffle.partitions``: 4 per local thread)
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakelogic.errors import MissingDependencyError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_CATALOG = "lakelogic"


def default_catalog() -> str:
    return os.environ.get("LAKELOGIC_CATALOG", DEFAULT_CATALOG)


def warehouse_dir() -> Path:
    return Path(os.environ.get("LAKELOGIC_WAREHOUSE", ".lakelogic/warehouse")).resolve()


@lru_cache(maxsize=1)
def iceberg_runtime_jar() -> str:
    """Path of the Iceberg Spark runtime jar shipped by ``snowpark-connect-deps-iceberg`` (Scala 2.12)."""
    try:
        import snowpark_connect_deps_iceberg as pkg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "the Iceberg runtime jar is missing",
            hint="pip install 'lakelogic[spark]' (snowpark-connect-deps-iceberg==1.0.1)",
        ) from exc
    jars = Path(pkg.__file__).parent / "jars"
    found = sorted(jars.glob("iceberg-spark-runtime-3.5_2.12-*.jar"))
    if not found:  # pragma: no cover
        raise MissingDependencyError(f"no iceberg-spark-runtime-3.5_2.12 jar under {jars}")
    return str(found[-1])


def _require_java() -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise MissingDependencyError(
            "Java is not installed: Spark needs a Java 17 runtime",
            hint="install OpenJDK 17 (apt-get install openjdk-17-jre-headless) or set JAVA_HOME",
        )


# -XX:-DontCompileHugeMethods: HotSpot never JIT-compiles a method over 8,000 bytecodes, and the
# whole-stage generated code of a contract (every cast, op and rule of a phase in one loop) is larger than
# that once its observation points no longer split it: such a stage then runs interpreted, about 2.5x
# slower (docs/decisions.md, "Session 13 decisions"). Spark's own hugeMethodLimit (64 KB) still guards
# the extreme.
_JAVA_OPTIONS = "-Duser.timezone=UTC -Duser.language=en -Duser.country=US -XX:-DontCompileHugeMethods"


def _local_shuffle_partitions(master: str) -> dict[str, str]:
    """Four shuffle partitions per local thread instead of Spark's fixed 200. Every map task of a shuffle
    writes one block per reduce partition, so 200 costs each task 200 files and serializers however small
    its input (a keyed write's scans of a 100k-row batch: about half their CPU time), and adaptive
    execution only coalesces the reduce side afterwards. Four per thread keeps tasks even across the
    threads; adaptive execution still coalesces small ones and splits skewed ones. Not set for a cluster
    master, and LAKELOGIC_SPARK_CONF overrides it."""
    threads = local_threads(master)
    return {} if threads is None else {"spark.sql.shuffle.partitions": str(4 * threads)}


def _usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def local_threads(master: str) -> int | None:
    """The worker threads of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master; None for
    any other master (a cluster sizes its own shuffles)."""
    found = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if found is None:
        return None
    threads = found.group(1)
    if threads is None:
        return 1
    if threads == "*":  # the cores this process may run on (a container's share), as the JVM counts
        return _usable_cores()
    return max(int(threads), 1)


def local_spark_conf(
    master: str | None = None, *, for_tests: bool = False, extra: dict[str, Any] | None = None
) -> dict[str, str]:
    """Configuration of the embedded local session (also used by the test fixture).
    ``LAKELOGIC_SPARK_CONF`` and then ``extra`` (the caller's settings) override the defaults. The
    shuffle partitions follow the master the session ends up with, unless a setting names them."""
    catalog = default_catalog()
    conf: dict[str, str] = {
        "spark.master": master or os.environ.get("LAKELOGIC_SPARK_MASTER", "local[*]"),
        "spark.app.name": "lakelogic",
        # Python workers (external logic, test fixtures) must run the interpreter that has our packages.
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.jars": iceberg_runtime_jar(),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog}.type": "hadoop",
        f"spark.sql.catalog.{catalog}.warehouse": str(warehouse_dir()),
        "spark.sql.session.timeZone": "UTC",
        # Partitioned writes (the one-job split of engines.spark.fanout) keep a writer per key open
        # instead of sorting each task's rows by key first (~10% of that job at 10M rows).
        "spark.sql.maxConcurrentOutputFileWriters": "32",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.scheduler.mode": "FAIR",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": os.environ.get("LAKELOGIC_SPARK_DRIVER_MEMORY", "4g"),
        # UTC times; an English JVM locale so lower/upper never use locale rules (Turkish dotless i).
        "spark.driver.extraJavaOptions": _JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": _JAVA_OPTIONS,
    }
    if for_tests:
        conf.update(
            {
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.sql.adaptive.enabled": "false",
                "spark.driver.memory": "2g",
                "spark.sql.codegen.wholeStage": "true",
            }
        )
    for pair in filter(None, os.environ.get("LAKELOGIC_SPARK_CONF", "").split(";")):
        key, _, value = pair.partition("=")
        conf[key.strip()] = value.strip()
    conf.update({key: str(value) for key, value in (extra or {}).items()})
    if "spark.sql.shuffle.partitions" not in conf:
        conf.update(_local_shuffle_partitions(conf["spark.master"]))
    return conf


def spark_session(*, master: str | None = None, conf: dict[str, Any] | None = None) -> SparkSession:
    """Return the active Spark session, or build the embedded local one.

    An active session is returned untouched (its catalogs are the cluster's configuration).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise MissingDependencyError(
            "pyspark is not installed", hint="pip install 'lakelogic[spark]'"
        ) from exc
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    _require_java()
    builder = SparkSession.builder
    for key, value in local_spark_conf(master, extra=conf).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def has_native_delta(spark: SparkSession) -> bool:
    """True when the session can write Delta itself (Databricks, or delta-spark on the classpath)."""
    conf = spark.conf
    ext = conf.get("spark.sql.extensions", "") or ""
    catalog = conf.get("spark.sql.catalog.spark_catalog", "") or ""
    return "io.delta" in ext or "DeltaCatalog" in catalog or "DATABRICKS_RUNTIME_VERSION" in os.environ
