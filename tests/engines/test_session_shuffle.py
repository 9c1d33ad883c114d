"""The embedded local session sizes its shuffles by its threads (no Spark needed: configuration only)."""

from __future__ import annotations

import pytest

from lakelogic.engines.spark.session import local_spark_conf, local_threads


@pytest.mark.parametrize(
    ("master", "threads"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[4, 2]", 4),
        ("local[4 ,2]", 4),
        ("local[0]", 1),
        ("spark://host:7077", None),
    ],
)
def test_local_threads_are_read_from_the_master(master: str, threads: int | None) -> None:
    assert local_threads(master) == threads


def test_local_star_is_the_machine_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert local_threads("local[*]") == 6


def test_four_shuffle_partitions_per_local_thread_and_none_set_for_a_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LAKELOGIC_SPARK_CONF", raising=False)
    assert local_spark_conf("local[3]")["spark.sql.shuffle.partitions"] == "12"
    assert "spark.sql.shuffle.partitions" not in local_spark_conf("spark://host:7077")
    assert local_spark_conf("local[3]", for_tests=True)["spark.sql.shuffle.partitions"] == "2"


def test_the_environment_overrides_the_shuffle_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOGIC_SPARK_CONF", "spark.sql.shuffle.partitions=64")
    assert local_spark_conf("local[3]")["spark.sql.shuffle.partitions"] == "64"


def test_the_partitions_follow_the_master_the_settings_end_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """A master changed by the environment or the caller's settings decides, not the one asked for first."""
    monkeypatch.setenv("LAKELOGIC_SPARK_CONF", "spark.master=spark://host:7077")
    assert "spark.sql.shuffle.partitions" not in local_spark_conf("local[3]")
    monkeypatch.delenv("LAKELOGIC_SPARK_CONF")
    clustered = local_spark_conf("local[3]", extra={"spark.master": "spark://host:7077"})
    assert "spark.sql.shuffle.partitions" not in clustered
    assert (
        local_spark_conf("spark://host:7077", extra={"spark.master": "local[2]"})[
            "spark.sql.shuffle.partitions"
        ]
        == "8"
    )
    # the caller's settings still win over the environment's
    monkeypatch.setenv("LAKELOGIC_SPARK_CONF", "spark.sql.shuffle.partitions=64")
    assert (
        local_spark_conf("local[3]", extra={"spark.sql.shuffle.partitions": 5})[
            "spark.sql.shuffle.partitions"
        ]
        == "5"
    )
