"""Keeps the package layering of docs/architecture.md true mechanically.

Each package may import only the packages listed for it; `import lakelogic` must not pull in any engine
library. Imports under ``if TYPE_CHECKING:`` are ignored (they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "lakelogic"

BASE = {"errors", "types", "report"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "types": {"errors"},
    "report": {"types", "errors"},
    "contract": BASE,
    "plan": BASE | {"contract"},
    "sources": BASE | {"contract"},
    "runlog": BASE,
    "notify": BASE | {"contract", "runlog"},
    "tables": BASE | {"plan", "contract", "engines"},
    "engines": BASE | {"plan", "contract", "tables", "runlog", "sources"},
    "api": BASE | {"plan", "contract", "engines", "tables", "sources", "runlog", "notify"},
    "driver": BASE | {"contract", "plan", "engines", "tables", "sources", "runlog", "api", "notify"},
    "cli": BASE | {"contract", "plan", "engines", "tables", "sources", "runlog", "driver", "api", "notify"},
    "__main__": {"cli"},  # `python -m lakelogic`: the CLI entry point and nothing else
}


def _package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py") if rel.parts else ""


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def _lakelogic_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if node.lineno in skip if hasattr(node, "lineno") else False:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "lakelogic" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def test_packages_import_only_what_the_architecture_allows() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        package = _package_of(path)
        if package in {"__init__", ""}:
            continue
        allowed = ALLOWED.get(package)
        assert allowed is not None, f"{path}: package {package!r} is not in the architecture table"
        for line, target in _lakelogic_imports(path):
            if target != package and target not in allowed:
                violations.append(f"{path.relative_to(SRC.parent)}:{line} ({package} -> {target})")
    assert not violations, "imports against the layering:\n" + "\n".join(violations)


@pytest.mark.parametrize("heavy", ["pyspark", "duckdb", "polars", "pyiceberg", "deltalake"])
def test_import_lakelogic_stays_light(heavy: str) -> None:
    code = (
        "import sys, lakelogic, lakelogic.contract, lakelogic.plan, lakelogic.report\n"
        f"print({heavy!r} in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"import lakelogic imported {heavy}"
