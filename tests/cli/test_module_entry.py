"""``python -m lakelogic`` runs the same CLI as the ``lakelogic`` console script."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_lakelogic_is_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lakelogic", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: lakelogic" in done.stdout and "validate" in done.stdout
