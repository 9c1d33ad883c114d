"""Reading hierarchy and registry YAML files with the contract loader's YAML rules.

YAML 1.2 core, duplicate keys rejected, one document (``yaml_io``), then ``${ENV}`` interpolation
(SEMANTICS §1.3); an unset variable is a :class:`ContractError` naming the file and YAML path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lakelogic.contract.interpolate import interpolate
from lakelogic.contract.yaml_io import load_yaml
from lakelogic.errors import ContractError


def read_yaml(path: Path) -> Any:
    """Plain data of one YAML file with ``${ENV}`` resolved."""
    data, positions = load_yaml(path)
    resolved, problems = interpolate(data, os.environ, file=str(path), positions=positions)
    if problems:
        raise ContractError(problems)
    return resolved
