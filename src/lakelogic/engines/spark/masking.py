"""Masking at step 12 (SEMANTICS §5.4), on good and quarantined rows, as Spark SQL expressions.

``encrypt`` uses Spark's built-in ``aes_encrypt(.., 'GCM', 'DEFAULT', iv)``, whose output is exactly
``12-byte nonce || ciphertext || tag``; we prefix ``enc:`` and use base64url. No Python UDFs.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakelogic.engines.pii import pii_key
from lakelogic.engines.spark.casting import json_string_sql
from lakelogic.errors import ContractError, EngineError
from lakelogic.plan.sqlutil import quote_ident, sql_string
from lakelogic.plan.steps import FieldSpec

REDACTED = "***REDACTED***"
_STRATEGIES = {"nullify", "null", "hash", "redact", "partial", "encrypt", "tokenize"}
_NAMED_FORMATS = {
    "email": "{first1}***@{domain}",
    "phone": "***-***-{last4}",
    "credit_card": "****-****-****-{last4}",
}
_TOKEN = re.compile(r"\{(first[1-9]|last[1-9]|domain)\}")


def mask_frame(frame: DataFrame, fields: Sequence[FieldSpec], *, warnings: list[str]) -> DataFrame:
    """Replace each masked model column in place (columns absent from ``frame`` are skipped)."""
    present = set(frame.columns)
    exprs: dict[str, str] = {}
    for spec in fields:
        if spec.masking is None or spec.name not in present:
            continue
        exprs[spec.name] = masking_sql(spec, warnings=warnings)
    if not exprs:
        return frame
    return frame.select(
        *[F.expr(exprs[c]).alias(c) if c in exprs else F.col(quote_ident(c)) for c in frame.columns]
    )


def masking_sql(spec: FieldSpec, *, warnings: list[str]) -> str:
    strategy = (spec.masking or "").lower()
    col = quote_ident(spec.name)
    text = f"CAST({col} AS STRING)"
    if strategy not in _STRATEGIES:
        raise ContractError(
            f"model.fields[{spec.name}].masking: unknown strategy {spec.masking!r}; "
            f"allowed: {', '.join(sorted(_STRATEGIES))}"
        )
    if strategy in ("nullify", "null"):
        return f"CASE WHEN false THEN {col} END"  # NULL of the column's own type
    if strategy == "redact":
        return f"CASE WHEN {col} IS NOT NULL THEN {sql_string(REDACTED)} END"
    if strategy == "hash":
        return hash_sql(text, warnings=warnings)
    if strategy == "partial":
        return partial_sql(text, spec.masking_format)
    return _encrypt_sql(text, spec)


def masked_raw_json_sql(spec: FieldSpec, text: str) -> str:
    """How a cast-failure message shows a masked field's raw value (§5.3, "raw value masked"): ``text`` (the
    raw value as a STRING expression) masked by the field's strategy, as JSON. Encryption shows the redacted
    text: its ciphertext differs on every run and would tell the reader nothing."""
    strategy = (spec.masking or "").lower()
    if strategy in ("nullify", "null"):
        return "'null'"
    if strategy == "hash":
        # the unset-salt warning is the masking step's to give, once per run (step 12)
        masked = hash_sql(text, warnings=[])
    elif strategy == "partial":
        masked = partial_sql(text, spec.masking_format)
    else:
        masked = sql_string(REDACTED)
    return f"coalesce({json_string_sql(masked)}, 'null')"


def pii_salt(*, warnings: list[str]) -> str:
    """§5.4's hash salt, ``LAKELOGIC_PII_SALT``; unset means empty, with a warning."""
    salt = os.environ.get("LAKELOGIC_PII_SALT")
    if salt is None:
        warnings.append("LAKELOGIC_PII_SALT is not set: hash masking uses an empty salt")
        return ""
    return salt


def hash_sql(text: str, *, warnings: list[str]) -> str:
    """Lowercase hex SHA-256 of salt + ``text`` (a STRING expression); NULL stays NULL."""
    hashed = f"sha2(concat({sql_string(pii_salt(warnings=warnings))}, {text}), 256)"
    # A value that already is a SHA-256 hex digest is kept (no double hashing on re-runs).
    return f"CASE WHEN {text} RLIKE '^[0-9a-f]{{64}}$' THEN {text} ELSE {hashed} END"


def partial_sql(text: str, template: str | None) -> str:
    if template:
        named = _NAMED_FORMATS.get(template.lower())
        if named is not None:
            digits = f"regexp_replace({text}, '[^0-9]', '')"
            source = digits if template.lower() in ("phone", "credit_card") else text
            return f"CASE WHEN {text} IS NOT NULL THEN {_render_template(named, source, text)} END"
        return f"CASE WHEN {text} IS NOT NULL THEN {_render_template(template, text, text)} END"
    digits = f"regexp_replace({text}, '[^0-9]', '')"
    email = f"concat(substring({text}, 1, 1), '***@', substring_index({text}, '@', -1))"
    phone = f"concat('***-***-', right({digits}, 4))"
    other = f"concat(substring({text}, 1, 1), '***', right({text}, 1))"
    return (
        f"CASE WHEN {text} IS NULL THEN NULL "
        f"WHEN {text} RLIKE '^[^@]+@[^@]+$' THEN {email} "
        f"WHEN length({digits}) >= 7 THEN {phone} "
        f"ELSE {other} END"
    )


def _render_template(template: str, source: str, text: str) -> str:
    parts: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(template):
        if m.start() > pos:
            parts.append(sql_string(template[pos : m.start()]))
        token = m.group(1)
        if token == "domain":
            # no '@': no domain (substring_index would give the whole value away)
            parts.append(
                f"CASE WHEN instr({text}, '@') > 0 THEN substring_index({text}, '@', -1) ELSE '' END"
            )
        elif token.startswith("first"):
            parts.append(f"substring({source}, 1, {token[5:]})")
        else:
            parts.append(f"right({source}, {token[4:]})")
        pos = m.end()
    if pos < len(template):
        parts.append(sql_string(template[pos:]))
    return f"concat({', '.join(parts)})" if parts else "''"


def _encrypt_key(spec: FieldSpec) -> bytes:
    try:
        return pii_key(spec.pii_vault, field=spec.name)
    except EngineError as exc:
        raise EngineError(f"{exc.message}; nothing was written", hint=exc.hint) from None


def _encrypt_sql(text: str, spec: FieldSpec) -> str:
    """``enc:`` + base64url(nonce ‖ AES-256-GCM ciphertext ‖ tag), the nonce derived from the value.

    A random nonce made every run write different ciphertext for the same value: a merge rewrote every
    row of an identical batch, an SCD2 tracking an encrypted column opened versions for unchanged values,
    and an encrypted merge key matched nothing and duplicated rows. The nonce is the first 12 bytes of a
    keyed SHA-256 of the value (a synthetic IV, as in SIV modes): equal values encrypt equally, which tells
    a reader no more than ``hash`` masking already does, and distinct values get distinct nonces except
    with the probability of a random nonce collision. The layout is unchanged, so decryption needs no
    nonce rule. Spark chunks ``base64`` output with CRLF every 76 characters by default
    (``spark.sql.chunkBase64String.enabled``): ``translate`` drops the line breaks with ``+/`` → ``-_``."""
    key = _encrypt_key(spec)
    nonce_key = hashlib.sha256(b"lakelogic encrypt nonce\0" + key).hexdigest()
    plain = f"encode({text}, 'UTF-8')"
    nonce = f"unhex(substr(sha2(concat(unhex('{nonce_key}'), {plain}), 256), 1, 24))"
    cipher = f"aes_encrypt({plain}, unhex('{key.hex()}'), 'GCM', 'DEFAULT', {nonce})"
    b64url = f"translate(base64({cipher}), concat('+/', chr(13), chr(10)), '-_')"  # base64url, padded
    return (
        f"CASE WHEN {text} IS NULL THEN NULL WHEN startswith({text}, 'enc:') THEN {text} "
        f"ELSE concat('enc:', {b64url}) END"
    )
