"""`lakelogic decrypt` (SEMANTICS §5.4) on values laid out as Spark's aes_encrypt(.., 'GCM') writes them."""

from __future__ import annotations

import base64
import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from typer.testing import CliRunner

from lakelogic.cli.main import app

KEY = base64.b64encode(bytes(range(32))).decode()


def _encrypt(text: str, key: str = KEY) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(base64.b64decode(key)).encrypt(nonce, text.encode(), None)
    return "enc:" + base64.urlsafe_b64encode(nonce + sealed).decode()


def test_decrypt_values_from_arguments_and_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARD_KEY", KEY)
    runner = CliRunner()
    args = ["decrypt", "--pii-vault", "env://CARD_KEY"]
    one = runner.invoke(app, [*args, _encrypt("4111 1111"), _encrypt("é")])
    assert one.exit_code == 0 and one.stdout.splitlines() == ["4111 1111", "é"]
    piped = runner.invoke(app, args, input=f"{_encrypt('a')}\n{_encrypt('b')}\n")
    assert piped.exit_code == 0 and piped.stdout.splitlines() == ["a", "b"]


def test_decrypt_with_the_wrong_or_no_key_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.delenv("LAKELOGIC_PII_KEY", raising=False)
    missing = runner.invoke(app, ["decrypt", _encrypt("x")])
    assert missing.exit_code == 2 and "LAKELOGIC_PII_KEY is not set" in missing.stderr
    monkeypatch.setenv("LAKELOGIC_PII_KEY", base64.b64encode(bytes(32)).decode())
    wrong = runner.invoke(app, ["decrypt", _encrypt("x")])
    assert wrong.exit_code == 1 and "does not decrypt with this key" in wrong.stderr
