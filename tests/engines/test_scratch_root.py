"""Where a materialized run stages its rows (engines.spark.outputs.scratch_root): configuration first,
the temp directory only for a local master, nothing on a cluster without a shared location."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace
from typing import Any

import pytest

from lakelogic.engines.spark.outputs import SCRATCH_CONF, scratch_root


def _session(master: str, conf: dict[str, str] | None = None) -> Any:
    settings = dict(conf or {})
    return SimpleNamespace(
        sparkContext=SimpleNamespace(master=master),
        conf=SimpleNamespace(get=lambda key, default=None: settings.get(key, default)),
    )


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKELOGIC_SCRATCH_DIR", raising=False)


def test_the_environment_wins_over_the_spark_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_SCRATCH_DIR", "s3a://bucket/scratch/")
    assert scratch_root(_session("yarn", {SCRATCH_CONF: "/other"})) == "s3a://bucket/scratch"


def test_the_spark_setting_serves_a_cluster() -> None:
    assert scratch_root(_session("yarn", {SCRATCH_CONF: "abfss://c@a/scratch"})) == "abfss://c@a/scratch"


def test_a_local_master_defaults_to_the_temp_directory() -> None:
    root = scratch_root(_session("local[2]"))
    assert root is not None and root.startswith(tempfile.gettempdir())


def test_a_cluster_without_a_shared_location_has_none() -> None:
    assert scratch_root(_session("spark://master:7077")) is None
