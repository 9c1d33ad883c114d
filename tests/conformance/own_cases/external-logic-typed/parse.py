"""External step for this case: split ``raw`` ("sku=..;qty=..;price=..;day=..") into text columns.

Every output column is text; the contract's model types are applied by the runtime afterwards.
"""

from typing import Any

PARTS = {"sku": "sku", "qty": "qty", "price": "price", "sold_on": "day"}


def run(frame: Any, links: dict | None = None, engine: str = "spark", **_: Any) -> Any:
    if type(frame).__module__.startswith("pyspark"):
        from pyspark.sql import functions as F

        for column, key in PARTS.items():
            frame = frame.withColumn(column, F.regexp_extract("raw", rf"(?:^|;){key}=([^;]*)", 1))
        return frame
    import polars as pl

    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    return frame.with_columns(
        pl.col("raw").str.extract(rf"(?:^|;){key}=([^;]*)", 1).alias(column) for column, key in PARTS.items()
    )
