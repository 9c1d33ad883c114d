"""``${NAME}`` interpolation in string scalars and the credential rule (SEMANTICS §1.3).

Interpolation runs after parsing and before validation, on values only (never keys).
``${NAME:-fallback}`` gives a default, ``$${`` is a literal ``${``. Hierarchy placeholders such as
``{catalog}`` are not touched here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lakelogic.contract.yaml_io import Positions, join_path
from lakelogic.errors import Problem

_TOKEN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

_CREDENTIAL_WORDS = ("password", "secret", "token", "api_key", "connection_string")
# OLC keys that look credential-like by the naming rule but name columns or settings.
_NOT_CREDENTIALS = frozenset(
    {
        "primary_key",
        "natural_key",
        "business_key",
        "surrogate_key",
        "event_key",
        "reference_key",
        "foreign_key",  # model.fields[].foreign_key: "orders.customer_id" names a column
        "grain_key",
        "partition_key",
        "sort_key",
        "join_key",
        "lookup_key",
        "merge_key",
        "max_tokens",
    }
)
_REFERENCE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|env://.+|keyvault://.+|databricks://.+)$|\$\{")


def interpolate(
    data: Any, env: Mapping[str, str], *, file: str, positions: Positions
) -> tuple[Any, list[Problem]]:
    """Return ``data`` with ``${…}`` resolved from ``env`` and the problems found (unset variables).

    Values of credential keys are left as written: they are secret references resolved at use
    (:func:`lakelogic.contract.secrets.resolve_secret`), so secrets never sit in a loaded model,
    a plan or a report, and validating a contract needs no secrets.
    """
    problems: list[Problem] = []

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {
                k: v if _is_secret_value(k, v) else walk(v, join_path(path, str(k))) for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v, join_path(path, i)) for i, v in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            return _substitute(value, path)
        return value

    def _substitute(text: str, path: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            line, col = positions.get(path, (0, 0))
            problems.append(
                Problem(
                    file=file,
                    path=path,
                    message=f"environment variable {name} is not set (${{{name}:-default}} gives a default)",
                    line=line,
                    column=col,
                    value=f"${{{name}}}",
                )
            )
            return match.group(0)

        return _TOKEN.sub(replace, text)

    return walk(data, ""), problems


def _is_secret_value(key: object, value: object) -> bool:
    return isinstance(key, str) and isinstance(value, str) and is_credential_key(key)


def is_credential_key(key: str) -> bool:
    """Names containing password/secret/token/api_key/connection_string, or ending ``_key``."""
    low = key.lower()
    if low in _NOT_CREDENTIALS:
        return False
    return any(word in low for word in _CREDENTIAL_WORDS) or low.endswith("_key")


def is_secret_reference(value: str) -> bool:
    """``env:NAME``, ``${NAME}``, ``keyvault://…``, ``databricks://…`` (and ``env://NAME``)."""
    return bool(_REFERENCE.search(value.strip()))


def check_credentials(data: Any, *, file: str, positions: Positions) -> list[Problem]:
    """Every credential-like key must hold a secret reference, never a literal (run on raw data)."""
    problems: list[Problem] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                child = join_path(path, str(k))
                # a number is a literal too (`db_password: 123456`); booleans are settings, not secrets
                literal_number = isinstance(v, int | float) and not isinstance(v, bool)
                valued = literal_number or (isinstance(v, str) and bool(v.strip()))
                if isinstance(k, str) and is_credential_key(k) and valued:
                    if literal_number or not is_secret_reference(str(v)):
                        line, col = positions.get(child, (0, 0))
                        problems.append(
                            Problem(
                                file=file,
                                path=child,
                                message="credential values must be secret references, not literals",
                                line=line,
                                column=col,
                                value="***",
                                allowed="env:NAME, ${NAME}, keyvault://vault/secret, databricks://scope/key",
                            )
                        )
                    continue
                walk(v, child)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, join_path(path, i))

    walk(data, "")
    return problems
