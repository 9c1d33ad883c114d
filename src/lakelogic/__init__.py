"""LakeLogic: contract-driven medallion pipelines (Open Lakehouse Contract v1) on Apache Spark.

``import lakelogic`` stays light: the public API below is loaded on first use, and no engine library
(pyspark, duckdb, polars, pyiceberg, deltalake) is imported until an engine runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["DataProcessor", "RunResult", "__version__", "load_contract", "spark_session"]

if TYPE_CHECKING:
    from lakelogic.api import DataProcessor, RunResult
    from lakelogic.contract.loader import load_contract
    from lakelogic.engines.spark.session import spark_session

_LAZY = {
    "DataProcessor": "lakelogic.api",
    "RunResult": "lakelogic.api",
    "load_contract": "lakelogic.contract.loader",
    "spark_session": "lakelogic.engines.spark.session",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lakelogic' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
