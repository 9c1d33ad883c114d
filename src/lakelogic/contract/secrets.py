"""Resolving secret references at use (SEMANTICS §1.3).

Credential values in a contract are references, never literals: ``env:NAME``, ``env://NAME``,
``${NAME}``, ``keyvault://vault/secret``, ``databricks://scope/key``. The loader keeps them as
written; the code that opens a connection calls :func:`resolve_secret` right before use and never
logs the result. :func:`mask` gives the text to show instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from lakelogic.contract.interpolate import is_secret_reference
from lakelogic.errors import LakeLogicError, UnsupportedError

MASK = "***"

_ENV_REF = re.compile(r"^env:(?://)?([A-Za-z_][A-Za-z0-9_]*)$")
_DOLLAR_TOKEN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Resolvers for vault schemes, registered by the environment that has access (e.g. a Databricks
# runtime registers "databricks" with a function calling dbutils.secrets.get).
_RESOLVERS: dict[str, Callable[[str], str]] = {}


class SecretError(LakeLogicError):
    """A secret reference could not be resolved (the message never contains a secret)."""

    error_type = "secret"


def register_secret_resolver(scheme: str, resolver: Callable[[str], str]) -> None:
    """Resolve ``<scheme>://<rest>`` references with ``resolver(rest)``."""
    _RESOLVERS[scheme] = resolver


def is_reference(value: str) -> bool:
    """True when ``value`` is a secret reference the loader accepts (not a literal)."""
    return is_secret_reference(value)


def resolve_secret(value: str, *, env: Mapping[str, str] | None = None) -> str:
    """The secret a reference points to. A literal is refused (the loader already rejects them)."""
    environ = os.environ if env is None else env
    text = value.strip()
    if match := _ENV_REF.match(text):
        return _from_env(match.group(1), environ, None)
    if _DOLLAR_TOKEN.search(text):
        # `${NAME}` alone or inside a larger value (a connection string with `password=${PW}`).
        return _DOLLAR_TOKEN.sub(lambda m: _from_env(m.group(1), environ, m.group(2)), text)
    scheme, sep, rest = text.partition("://")
    if sep:
        resolver = _RESOLVERS.get(scheme)
        if resolver is None:
            raise UnsupportedError(
                f"no resolver for secret references of scheme {scheme!r}",
                hint="register one with lakelogic.contract.secrets.register_secret_resolver, or use env:NAME",
            )
        return resolver(rest)
    raise SecretError("a credential value must be a secret reference, not a literal")


def mask(value: object) -> str:
    """What to show for a credential value in plans, reports, logs and errors."""
    return MASK if value not in (None, "") else ""


def _from_env(name: str, environ: Mapping[str, str], default: str | None) -> str:
    if name in environ:
        return environ[name]
    if default is not None:
        return default
    raise SecretError(f"environment variable {name} (a secret reference) is not set")
