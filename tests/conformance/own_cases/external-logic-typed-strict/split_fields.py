"""External step for this case: split ``raw`` on ``separator`` into the text columns named by ``columns``."""

import re
from typing import Any


def run(
    frame: Any,
    links: dict | None = None,
    engine: str = "spark",
    separator: str = ",",
    columns: list | None = None,
    **_: Any,
) -> Any:
    names = list(columns or [])
    if type(frame).__module__.startswith("pyspark"):
        from pyspark.sql import functions as F

        parts = F.split(F.col("raw"), re.escape(separator))
        for i, name in enumerate(names):
            frame = frame.withColumn(name, parts.getItem(i))
        return frame.drop("raw")
    import polars as pl

    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    parts = pl.col("raw").str.split(separator)
    return frame.with_columns(parts.list.get(i).alias(name) for i, name in enumerate(names)).drop("raw")
