"""The embedded session's JVM options reach the JVM the tests (and a local run) execute in."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _jvm_arguments(spark: Any) -> list[str]:
    jvm = spark.sparkContext._jvm
    return [str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()]


def test_generated_code_of_any_size_is_jit_compiled(spark: Any) -> None:
    # Without it HotSpot interprets a contract's whole-stage code forever once it passes 8,000 bytecodes.
    assert "-XX:-DontCompileHugeMethods" in _jvm_arguments(spark)


def test_the_jvm_runs_in_utc_with_an_english_locale(spark: Any) -> None:
    arguments = _jvm_arguments(spark)
    assert "-Duser.timezone=UTC" in arguments
    assert "-Duser.language=en" in arguments
    jvm = spark.sparkContext._jvm
    assert str(jvm.java.util.TimeZone.getDefault().getID()) == "UTC"
