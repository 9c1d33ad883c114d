"""Compressed source files decompressed to their end before Spark reads them (sources/unreadable.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from lakelogic.errors import SourceError
from lakelogic.sources.unreadable import check_compressed


def test_a_truncated_local_gzip_is_a_source_error_naming_it(tmp_path: Path) -> None:
    packed = gzip.compress(b'{"id": 1}\n' * 1000)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    whole = tmp_path / "whole.json.gz"
    whole.write_bytes(packed)
    check_compressed([str(whole)])
    with pytest.raises(SourceError, match=r"cut\.json\.gz"):
        check_compressed([str(whole), str(cut)])


def test_remote_paths_and_globs_are_left_to_spark() -> None:
    """They are not listed here: opening them locally failed every remote compressed JSON source."""
    check_compressed(["s3a://bucket/landing/*.json.gz", "abfss://c@a.dfs.core.windows.net/x.json.gz"])
