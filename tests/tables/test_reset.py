"""Emptying and dropping a contract's outputs in every format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lakelogic.tables.reset import drop_outputs, empty_outputs
from lakelogic.tables.spark_write import adapter_for, write_frame
from lakelogic.tables.spec import WriteSpec
from lakelogic.tables.stamp import CommitStamp
from lakelogic.tables.target import ResolvedTarget
from tests.tables.conftest import FORMATS, read_back

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_keeps_schema_then_drop_removes(
    spark: Any, make_target: Callable[..., ResolvedTarget], fmt: str, tmp_path: Path
) -> None:
    target = make_target(fmt)
    sink = replace(make_target(fmt, "q"), quarantine=None)
    resolved = replace(target, quarantine=sink)
    batch = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
    write_frame(spark, batch, target, WriteSpec(), CommitStamp("r1", "c"))
    assert empty_outputs(spark, resolved, contract="c") == [(target.name, True), (sink.name, False)]
    assert read_back(spark, target) == []
    schema = adapter_for(spark, target).schema()
    assert schema is not None and schema.fieldNames() == ["id", "v"]
    assert adapter_for(spark, target).already_committed(CommitStamp("r1", "c")), "history is kept"
    write_frame(spark, batch, target, WriteSpec(), CommitStamp("r2", "c"))
    assert len(read_back(spark, target)) == 2
    assert drop_outputs(spark, resolved) == [(target.name, True), (sink.name, False)]
    assert not adapter_for(spark, target).exists()
