"""Identity and locked-path checks of the effective contract (DRIVER §2.4), and error attribution.

A problem names the file the offending value came from: the contract, ``--set``, a hierarchy file or a pack.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lakelogic.contract.hierarchy.merge import Origin, get_path
from lakelogic.contract.hierarchy.models import DomainFile, SystemFile
from lakelogic.errors import Problem


def check_identity(
    merged: Mapping[str, Any],
    origins: Mapping[str, Origin],
    domain: DomainFile | None,
    system: SystemFile | None,
    files: tuple[Path | None, Path | None],
) -> list[Problem]:
    problems: list[Problem] = []
    system_file = files[1]
    if domain and system and system.domain and system.domain != domain.domain:
        problems.append(
            Problem(
                file=str(system_file),
                path="domain",
                message="differs from the locked domain name",
                value=system.domain,
                allowed=domain.domain,
            )
        )
    for key, doc in (("domain", domain), ("system", system)):
        if doc is None:
            continue
        expected = doc.domain if isinstance(doc, DomainFile) else doc.system
        actual = get_path(merged, f"info.{key}")
        if actual is not None and actual != expected:
            origin = origins.get(f"info.{key}")
            problems.append(
                Problem(
                    file=file_of(origin, "<contract>"),
                    path=f"info.{key}",
                    message=f"must equal the enclosing {key} name"
                    + (" (locked by the domain)" if key == "domain" else ""),
                    value=str(actual),
                    allowed=str(expected),
                )
            )
    return problems


def file_of(origin: Origin | None, default: str) -> str:
    if origin is None:
        return default
    source = origin.source
    for prefix in ("domain:", "system:", "contract:", "policy_pack:"):
        if source.startswith(prefix):
            return source[len(prefix) :]
    return source


def check_locked(
    merged: Mapping[str, Any],
    origins: Mapping[str, Origin],
    locked: Mapping[str, Any],
    domain_file: Path | None,
) -> list[Problem]:
    problems: list[Problem] = []
    for path, value in locked.items():
        actual = get_path(merged, path)
        if actual != value:
            origin = origins.get(path)
            problems.append(
                Problem(
                    file=file_of(origin, "<contract>"),
                    path=path,
                    message=f"is locked by the domain ({domain_file}) and may not be changed",
                    value=str(actual),
                    allowed=str(value),
                )
            )
    return problems


def reattribute(problem: Problem, origins: Mapping[str, Origin], default: str) -> Problem:
    """A bad value inherited from a hierarchy file (or given by ``--set``) is reported against its source."""
    origin = _origin_at(problem.path, origins)
    file = file_of(origin, default) if origin and not origin.source.startswith("contract:") else problem.file
    if file == problem.file:
        return problem
    return dataclasses.replace(problem, file=file, line=0, column=0)


def _origin_at(path: str, origins: Mapping[str, Origin]) -> Origin | None:
    """Origin of ``path`` or of its nearest recorded ancestor. List items have origins only when a
    ``--set`` wrote inside one, keyed ``a[0].b`` or ``a.0.b`` as it was typed: both forms match."""
    by_key = {_dotted(p): o for p, o in origins.items()}
    probe = _dotted(path)
    while probe:
        if probe in by_key:
            return by_key[probe]
        probe = probe.rsplit(".", 1)[0] if "." in probe else ""
    return None


def _dotted(path: str) -> str:
    return re.sub(r"\[(\d+)\]", r".\1", path)


def check_hierarchy_locks(
    domain: DomainFile | None, system: SystemFile | None, domain_file: Path | None, system_file: Path | None
) -> list[Problem]:
    """A system may not change the domain's ``notifications_enabled`` or ``cost.currency``."""
    if domain is None or system is None:
        return []
    problems = []
    pairs = [
        ("notifications_enabled", domain.notifications_enabled, system.notifications_enabled),
        (
            "cost.currency",
            (domain.cost or {}).get("currency"),
            (system.cost or {}).get("currency"),
        ),
    ]
    for key, locked_value, value in pairs:
        if locked_value is not None and value is not None and value != locked_value:
            problems.append(
                Problem(
                    file=str(system_file),
                    path=key,
                    message=f"is locked by the domain ({domain_file}) and may not be changed",
                    value=str(value),
                    allowed=str(locked_value),
                )
            )
    return problems
