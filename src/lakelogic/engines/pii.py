"""PII encryption keys and decryption (SEMANTICS §5.4 ``encrypt``), engine-neutral.

Values are ``enc:`` + base64url(12-byte nonce ‖ AES-256-GCM ciphertext ‖ 16-byte tag) of the UTF-8
text, the layout Spark's ``aes_encrypt(.., 'GCM')`` writes. The key is a base64 32-byte key from
``pii_vault`` (``env://NAME``) or ``LAKELOGIC_PII_KEY``.
"""

from __future__ import annotations

import base64
import binascii
import os

from lakelogic.errors import EngineError

DEFAULT_KEY_VARIABLE = "LAKELOGIC_PII_KEY"
PREFIX = "enc:"


def key_variable(pii_vault: str | None, *, field: str | None = None) -> str:
    """The environment variable that holds the key a ``pii_vault`` reference names."""
    if not pii_vault:
        return DEFAULT_KEY_VARIABLE
    if pii_vault.startswith(("env://", "env:")):
        return pii_vault.split(":", 1)[1].lstrip("/")
    where = f"model.fields[{field}].pii_vault: " if field else ""
    raise EngineError(
        f"{where}{pii_vault!r} cannot be resolved on this runtime",
        hint=f"use env://NAME with a base64 32-byte key, or set {DEFAULT_KEY_VARIABLE}",
    )


def pii_key(pii_vault: str | None, *, field: str | None = None) -> bytes:
    """The 32-byte AES key; a clear error when it is missing or malformed."""
    name = key_variable(pii_vault, field=field)
    value = os.environ.get(name)
    if not value:
        subject = f" for field {field!r}" if field else ""
        raise EngineError(
            f"encryption key{subject} is missing ({name} is not set)",
            hint="set a base64-encoded 32-byte AES key",
        )
    try:
        key = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EngineError(f"{name} is not valid base64") from exc
    if len(key) != 32:
        raise EngineError(f"{name} must decode to 32 bytes (AES-256), got {len(key)}")
    return key


def decrypt_value(value: str, key: bytes) -> str:
    """The plain text of an ``enc:`` value; an error naming the value when it is not one of ours or the
    key does not open it."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not value.startswith(PREFIX):
        raise EngineError(f"{_shown(value)} is not an encrypted value (no {PREFIX!r} prefix)")
    body = value[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as exc:
        raise EngineError(f"{_shown(value)} is not valid base64url") from exc
    if len(raw) < 12 + 16:
        raise EngineError(f"{_shown(value)} is too short to be an AES-GCM value")
    try:
        plain = AESGCM(key).decrypt(raw[:12], raw[12:], None)
    except InvalidTag:
        raise EngineError(f"{_shown(value)} does not decrypt with this key") from None
    return plain.decode("utf-8")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:37] + "...")
