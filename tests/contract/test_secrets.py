"""Secret references are resolved at use (SEMANTICS §1.3)."""

from __future__ import annotations

import pytest

from lakelogic.contract.secrets import (
    SecretError,
    is_reference,
    mask,
    register_secret_resolver,
    resolve_secret,
)
from lakelogic.errors import UnsupportedError

ENV = {"PW": "s3cret", "USER": "bob"}


@pytest.mark.parametrize(
    ("reference", "secret"),
    [
        ("env:PW", "s3cret"),
        ("env://PW", "s3cret"),
        ("${PW}", "s3cret"),
        ("${MISSING:-fallback}", "fallback"),
        ("jdbc:pg://h/db?user=${USER}&password=${PW}", "jdbc:pg://h/db?user=bob&password=s3cret"),
    ],
)
def test_resolve_env_references(reference: str, secret: str) -> None:
    assert is_reference(reference)
    assert resolve_secret(reference, env=ENV) == secret


def test_unset_variable_and_literal_are_errors_without_the_secret() -> None:
    with pytest.raises(SecretError, match="MISSING") as info:
        resolve_secret("env:MISSING", env=ENV)
    assert "s3cret" not in str(info.value)
    with pytest.raises(SecretError, match="not a literal"):
        resolve_secret("hunter2", env=ENV)
    assert not is_reference("hunter2")


def test_vault_schemes_need_a_registered_resolver() -> None:
    with pytest.raises(UnsupportedError, match="vaultx"):
        resolve_secret("vaultx://kv/name", env=ENV)
    register_secret_resolver("vaultx", lambda rest: rest.upper())
    assert resolve_secret("vaultx://kv/name", env=ENV) == "KV/NAME"


def test_mask() -> None:
    assert mask("s3cret") == "***" and mask(None) == "" and mask("") == ""
