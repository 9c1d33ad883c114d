"""Load a contract: YAML 1.2 → overrides → credential check → ``${ENV}`` → strict models.

Every problem found on the way is collected and raised at once in one :class:`ContractError`
whose problems name the file, line:column, YAML path, bad value and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lakelogic.contract.interpolate import check_credentials, interpolate
from lakelogic.contract.models import Contract
from lakelogic.contract.overrides import apply_overrides, attribute_overrides
from lakelogic.contract.problems import problems_from_validation
from lakelogic.contract.yaml_io import Positions, load_yaml
from lakelogic.errors import ContractError, Problem

__all__ = ["apply_overrides", "load_contract", "load_yaml", "prepare_document", "validate_document"]


def load_contract(
    source: str | Path | Mapping[str, Any],
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Contract:
    """Load and validate a contract from a file path or an in-memory mapping.

    ``overrides`` are ``--set`` style ``{"dotted.path[0].key": value}`` (string values are parsed
    as YAML scalars); ``env`` replaces ``os.environ`` for ``${NAME}`` interpolation.
    """
    duplicates: list[Problem] = []
    if isinstance(source, Mapping):
        file_name = "<contract>"
        data: Any = source
        positions: Positions = {}
        source_file: Path | None = None
    else:
        source_file = Path(source).resolve()
        file_name = str(source)
        # problems name the file as the caller wrote it
        data, positions = load_yaml(Path(source), duplicates=duplicates)
    doc, problems = _prepare(data, file=file_name, positions=positions, overrides=overrides, env=env)
    try:
        contract = validate_document(doc, file=file_name, positions=positions)
    except ContractError as exc:
        problems = _combine(problems, exc.problems)
    problems = duplicates + attribute_overrides(problems, overrides or {})
    if problems:
        ordered = sorted(problems, key=lambda p: (p.line or 10**9, p.column, p.path))
        raise ContractError(ordered, document=doc)
    contract._source_file = source_file
    return contract


def prepare_document(
    data: Any,
    *,
    file: str,
    positions: Positions,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Apply overrides, check credentials and interpolate ``${…}``; raise on any problem."""
    doc, problems = _prepare(data, file=file, positions=positions, overrides=overrides, env=env)
    if problems:
        raise ContractError(problems)
    return doc


def _prepare(
    data: Any,
    *,
    file: str,
    positions: Positions,
    overrides: Mapping[str, Any] | None,
    env: Mapping[str, str] | None,
) -> tuple[dict[str, Any], list[Problem]]:
    if not isinstance(data, Mapping):
        raise ContractError(
            Problem(
                file=file, path="", message="a contract must be a YAML mapping", value=type(data).__name__
            )
        )
    doc: dict[str, Any] = apply_overrides(data, overrides) if overrides else dict(data)
    problems = check_credentials(doc, file=file, positions=positions)
    doc, unset = interpolate(doc, os.environ if env is None else env, file=file, positions=positions)
    return doc, problems + unset


def _combine(prepared: list[Problem], model: list[Problem]) -> list[Problem]:
    """Document-level and model problems together, each path reported once.

    A misspelt key (``busines_key``) is reported as an unknown key rather than by the credential
    rule its name happens to match; a value whose variable is unset is reported by interpolation.
    """
    unknown = {p.path for p in model if p.message.startswith("unknown key")}
    kept = [p for p in prepared if p.path not in unknown]
    taken = {p.path for p in kept}
    return kept + [p for p in model if p.path not in taken]


def validate_document(data: Mapping[str, Any], *, file: str, positions: Positions) -> Contract:
    """Validate prepared data into a :class:`Contract`; all problems in one :class:`ContractError`."""
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation(exc, Contract, data, file=file, positions=positions)
        raise ContractError(
            problems + _cross_block_problems(exc, data, file, positions), document=data
        ) from None


# Stand-ins for required top-level blocks that failed validation, so the other blocks' cross-block
# checks can still run; findings under a stand-in are discarded.
_PLACEHOLDERS: dict[str, Any] = {
    "version": "0.0.0",
    "info": {"title": "placeholder"},
    "model": {"fields": []},
}
# Checks whose finding depends on a block other than the one it is reported at.
_DEPENDS_ON = {"dataset": ("info",), "info": ("dataset",), "materialization": ("primary_key", "natural_key")}


def _cross_block_problems(
    exc: ValidationError, data: Mapping[str, Any], file: str, positions: Positions
) -> list[Problem]:
    """Pydantic runs the document-level checks (duplicate names, merge without a key, ...) only when
    every block is valid. Run them on the blocks that are, so one ``validate`` lists both kinds."""
    if any(err["type"] == "document" for err in exc.errors()):
        return []  # they ran already
    failed = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
    if not failed or any(not err["loc"] for err in exc.errors()):
        return []
    kept = {k: v for k, v in data.items() if k not in failed}
    kept.update({k: v for k, v in _PLACEHOLDERS.items() if k in failed})
    try:
        Contract.model_validate(kept)
    except ValidationError as second:
        found = problems_from_validation(second, Contract, kept, file=file, positions=positions)
        return [p for p in found if not _touches(p.path, failed)]
    return []


def _touches(path: str, failed: set[str]) -> bool:
    top = path.split(".", 1)[0].split("[", 1)[0]
    return top in failed or any(dep in failed for dep in _DEPENDS_ON.get(top, ()))
