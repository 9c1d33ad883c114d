"""Reading driver-side YAML files (registries, hierarchy files) with the OLC YAML rules.

YAML 1.2 core (``yes`` stays a string), duplicate keys rejected, one document, ``${ENV}`` and
``${ENV:-default}`` interpolation in string scalars (SEMANTICS §1.1, §1.3). Contracts themselves are read by
the contract loader; these helpers serve files the loader does not own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lakelogic.errors import ContractError, InterpolationError, Problem

_ENV = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def read_yaml(path: Path) -> Any:
    """Parse one YAML file into plain dicts/lists/scalars; errors name the file and position."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    yaml.allow_duplicate_keys = False
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractError(Problem(file=str(path), path="", message=f"cannot read file: {exc}")) from exc
    try:
        data = yaml.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ContractError(
            Problem(
                file=str(path),
                path="",
                message=f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                line=(mark.line + 1) if mark else 0,
                column=(mark.column + 1) if mark else 0,
            )
        ) from exc
    return interpolate_env(data, file=str(path))


def interpolate_env(value: Any, *, file: str, path: str = "") -> Any:
    """Replace ``${NAME}`` / ``${NAME:-default}`` in string values (never keys); ``$${`` is literal."""
    if isinstance(value, dict):
        return {
            k: interpolate_env(v, file=file, path=f"{path}.{k}" if path else str(k)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [interpolate_env(v, file=file, path=f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise InterpolationError(
            Problem(
                file=file, path=path, message=f"environment variable {name} is not set", value=match.group(0)
            )
        )

    return _ENV.sub(replace, value)
