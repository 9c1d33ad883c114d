"""``--set key=value`` overrides: dotted paths with list indices, values parsed as YAML 1.2 scalars."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from lakelogic.contract.yaml_io import parse_scalar
from lakelogic.errors import ContractError, Problem

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
# The "file" of a problem whose bad key or value was given on the command line, not in a file.
SET_SOURCE = "override:--set"


def parse_override_path(path: str) -> list[str | int]:
    """``a.b[0].c`` → ``["a", "b", 0, "c"]``; a malformed path is a :class:`ContractError`."""
    segments: list[str | int] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == "." and segments and pos + 1 < len(text):
            pos += 1
        match = _SEGMENT.match(text, pos)
        if match is None:
            raise ContractError(Problem(file="--set", path=path, message="malformed override path"))
        segments.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        pos = match.end()
    if not segments or not isinstance(segments[0], str):
        raise ContractError(Problem(file="--set", path=path, message="malformed override path"))
    return segments


def parse_set_option(option: str) -> tuple[str, str]:
    """Split one ``key=value`` CLI option."""
    key, sep, value = option.partition("=")
    if not sep or not key.strip():
        raise ContractError(Problem(file="--set", path=option, message="expected key=value"))
    return key.strip(), value


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``data`` with each dotted path set; string values are parsed as YAML scalars.

    Missing mappings on the way are created; a list index must exist (or equal the length, which
    appends).
    """
    out: dict[str, Any] = copy.deepcopy(dict(data))
    for path, raw in overrides.items():
        value = parse_scalar(raw) if isinstance(raw, str) else raw
        segments = parse_override_path(path)
        node: Any = out
        for i, seg in enumerate(segments):
            if isinstance(seg, str) and seg.isdigit() and isinstance(node, list):
                seg = int(seg)  # DRIVER §9: transformations.0.phase means transformations[0].phase
            last = i == len(segments) - 1
            nxt: Any = None if last else ({} if isinstance(segments[i + 1], str) else [])
            if isinstance(seg, str):
                if not isinstance(node, dict):
                    raise ContractError(
                        Problem(file="--set", path=path, message=f"'{seg}' is not inside a mapping")
                    )
                if last:
                    node[seg] = value
                else:
                    if node.get(seg) is None:
                        node[seg] = nxt
                    node = node[seg]
            else:
                if not isinstance(node, list) or seg > len(node):
                    raise ContractError(
                        Problem(file="--set", path=path, message=f"index [{seg}] does not exist")
                    )
                if seg == len(node):
                    node.append(value if last else nxt)
                elif last:
                    node[seg] = value
                if not last:
                    node = node[seg]
    return out


def attribute_overrides(problems: list[Problem], overrides: Mapping[str, Any]) -> list[Problem]:
    """Problems at or under a path a ``--set`` wrote name the override instead of the contract file:
    the typo is on the command line, and the file's line would point at an innocent neighbour."""
    written = [key for key in (_segment_key(path) for path in overrides) if key]
    out = []
    for problem in problems:
        key = _segment_key(problem.path)
        if key and any(key[: len(w)] == w for w in written):
            problem = dataclasses.replace(problem, file=SET_SOURCE, line=0, column=0)
        out.append(problem)
    return out


def _segment_key(path: str) -> tuple[str, ...]:
    """``a[0].b`` and ``a.0.b`` alike (``--set`` accepts both forms of a list index); () when malformed."""
    try:
        return tuple(str(seg) for seg in parse_override_path(path))
    except ContractError:
        return ()
