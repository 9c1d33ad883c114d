"""engines/spark. Importing it registers the Spark-backed run-log backend (``iceberg``)."""

from lakelogic.engines.spark import runlog_iceberg as _runlog_iceberg  # noqa: F401 - registers a backend
