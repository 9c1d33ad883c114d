"""CSV files of one source grouped by their header line.

Spark's CSV reader takes the column names from one file's header and maps every other file's fields to
them by position. A directory where one export has `amount,id` and another `id,amount` then loads each
file's values under the other's names, and the rows pass as good. Each group of files that share a
header is read on its own, and the groups are combined by column name. A column that a file lacks is
NULL there (SEMANTICS §7.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def first_line(spark: SparkSession, uri: str, charset: str) -> str | None:
    """The first line of ``uri`` (any Hadoop file system), decoded with ``charset``; None when empty."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).open(path)  # type: ignore[union-attr]
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, charset))
        line = reader.readLine()
    finally:
        stream.close()
    if line is None:
        return None
    return str(line).removeprefix("\ufeff").rstrip("\r")


def files_by_header(spark: SparkSession, files: list[str], charset: str) -> list[list[str]]:
    """``files`` grouped by identical header lines, in order of first appearance. Empty files join the
    first group (they hold no rows); one group when every file has the same header."""
    groups: dict[str | None, list[str]] = {}
    for uri in files:
        groups.setdefault(first_line(spark, uri, charset), []).append(uri)
    empty = groups.pop(None, [])
    ordered = list(groups.values()) or [[]]
    ordered[0].extend(empty)
    return ordered
