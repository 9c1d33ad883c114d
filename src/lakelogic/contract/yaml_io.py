"""YAML 1.2 reading with source positions (SEMANTICS §1.1).

``yes/no/on/off`` stay strings, dates stay strings (no implicit timestamps), duplicate keys are
an error, exactly one document per file, anchors/aliases/``<<`` merges are resolved. The result
is plain Python data (dict/list/str/int/float/bool/None) plus a map from YAML path to
(line, column), both 1-based, used to point problems at the source.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import DuplicateKeyError, RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from lakelogic.errors import ContractError, Problem

Positions = dict[str, tuple[int, int]]


class _Constructor(RoundTripConstructor):
    """Round-trip constructor (keeps positions) that leaves timestamps as text.

    A duplicate key is recorded instead of raised (the first value is kept), so a document with one
    can still be validated and the duplicate reported at its YAML path with the other problems.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.duplicate_keys: list[tuple[Any, Any, Any]] = []  # (mapping, key, key mark)

    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        if key not in mapping:
            return True
        self.duplicate_keys.append((mapping, key, key_node.start_mark))
        return False


def _timestamp_as_text(constructor: RoundTripConstructor, node: Any) -> Any:
    return constructor.construct_scalar(node)


# YAML 1.2 core schema numbers. ruamel also resolves 1.1 forms in 1.2 mode (`1_000`, `0b101`, `+0x1F`);
# in the core schema those are strings.
_CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(
    r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)


def _core_int(constructor: RoundTripConstructor, node: Any) -> Any:
    if node.tag == "tag:yaml.org,2002:int" and node.style is None and not _CORE_INT.fullmatch(node.value):
        return constructor.construct_scalar(node)
    return RoundTripConstructor.construct_yaml_int(constructor, node)


def _core_float(constructor: RoundTripConstructor, node: Any) -> Any:
    if node.style is None and not _CORE_FLOAT.fullmatch(node.value):
        return constructor.construct_scalar(node)
    return RoundTripConstructor.construct_yaml_float(constructor, node)


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
_Constructor.add_constructor("tag:yaml.org,2002:int", _core_int)
_Constructor.add_constructor("tag:yaml.org,2002:float", _core_float)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.version = (1, 2)
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


def join_path(parent: str, key: str | int) -> str:
    """Render a YAML path: ``quality.row_rules[2].sql``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _plain(node: Any, path: str, positions: Positions, map_paths: dict[int, str] | None = None) -> Any:
    """Convert ruamel's round-trip nodes to plain Python values, recording positions (and the path of
    each mapping, by identity, in ``map_paths``)."""
    if isinstance(node, CommentedMap):
        if map_paths is not None:
            map_paths.setdefault(id(node), path)
        out: dict[Any, Any] = {}
        for key, value in node.items():  # merged (<<) keys included
            key_plain = _plain_scalar(key)
            child = join_path(path, str(key_plain))
            try:
                line, col = node.lc.key(key)
                positions[child] = (line + 1, col + 1)
            except (KeyError, TypeError):
                pass  # keys that came from a << merge have no own position
            out[key_plain] = _plain(value, child, positions, map_paths)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, value in enumerate(node):
            child = join_path(path, i)
            try:
                line, col = node.lc.item(i)
                positions[child] = (line + 1, col + 1)
            except (KeyError, TypeError, IndexError):
                pass
            items.append(_plain(value, child, positions, map_paths))
        return items
    return _plain_scalar(node)


def _plain_scalar(value: Any) -> Any:
    # ruamel wraps scalars (ScalarFloat, ScalarInt, LiteralScalarString, ...): unwrap to builtins.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value) if type(value).__name__ == "ScalarBoolean" else int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (dict, list)):
        return _plain(value, "", {})
    if isinstance(value, TaggedScalar):  # `!!str 5`, or a tag we do not interpret: the text itself
        return str(value.value)
    return value


def parse_yaml_text(
    text: str, *, file: str = "<string>", duplicates: list[Problem] | None = None
) -> tuple[Any, Positions]:
    """Parse one YAML 1.2 document from ``text``.

    A duplicate mapping key raises, unless ``duplicates`` is given: then each one is appended to it as a
    problem at its YAML path, the first value is kept and parsing goes on.
    """
    yaml = _yaml()
    try:
        docs = list(yaml.load_all(text))
    except DuplicateKeyError as exc:  # a repeated `<<` merge key: never recoverable
        raise ContractError(_problem_from_mark(exc, file, "duplicate key")) from None
    except MarkedYAMLError as exc:
        raise ContractError(_problem_from_mark(exc, file, "invalid YAML")) from None
    except YAMLError as exc:
        raise ContractError(Problem(file=file, path="", message=f"invalid YAML: {exc}")) from None
    if len(docs) != 1:
        raise ContractError(
            Problem(file=file, path="", message=f"expected exactly one YAML document, found {len(docs)}")
        )
    positions: Positions = {}
    map_paths: dict[int, str] = {}
    data = _plain(docs[0], "", positions, map_paths)
    constructor = yaml.constructor
    found = (
        _duplicate_problems(constructor.duplicate_keys, map_paths, file)
        if isinstance(constructor, _Constructor)
        else []
    )
    if found and duplicates is None:
        raise ContractError(found)
    if duplicates is not None:
        duplicates.extend(found)
    return data, positions


def _duplicate_problems(
    recorded: list[tuple[Any, Any, Any]], map_paths: dict[int, str], file: str
) -> list[Problem]:
    problems = []
    for mapping, key, mark in recorded:
        path = join_path(map_paths.get(id(mapping), ""), str(_plain_scalar(key)))
        try:
            first = f" (first written at line {mapping.lc.key(key)[0] + 1})"
        except (KeyError, TypeError):
            first = ""
        problems.append(
            Problem(
                file=file,
                path=path,
                message=f"duplicate key{first}",
                line=mark.line + 1,
                column=mark.column + 1,
                allowed="each key once per mapping",
            )
        )
    return problems


def load_yaml(path: str | Path, *, duplicates: list[Problem] | None = None) -> tuple[Any, Positions]:
    """Read a YAML file: ``(data, positions)``; problems raise :class:`ContractError`.

    ``duplicates``: collect duplicate-key problems there instead of raising (see :func:`parse_yaml_text`).
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractError(Problem(file=str(file), path="", message=f"cannot read file: {exc}")) from None
    except UnicodeDecodeError as exc:
        raise ContractError(Problem(file=str(file), path="", message=not_utf8(exc))) from None
    return parse_yaml_text(text, file=str(file), duplicates=duplicates)


def not_utf8(exc: UnicodeDecodeError) -> str:
    """Why a YAML file could not be decoded, where, and what it must be (YAML 1.2 files are UTF-8 here)."""
    byte = exc.object[exc.start : exc.start + 1].hex()
    return f"the file is not UTF-8 text (byte 0x{byte} at offset {exc.start}); save it as UTF-8"


_NULLS = ("null", "Null", "NULL", "~")


def parse_scalar(text: str) -> Any:
    """``--set key=value`` (DRIVER §9): ``text`` as a YAML 1.2 flow value (a scalar, ``[a, b]``,
    ``{k: v}``, quoted text), anything else as the text itself. A document-level reading would turn
    ``Note: see wiki`` into a mapping and ``- x`` into a list, drop ``#x`` as a comment and refuse
    ``*.csv`` as an alias."""
    stripped = text.strip()
    if not stripped:
        return ""
    try:
        data, _ = parse_yaml_text(stripped, file="--set")
    except ContractError:
        return text
    if isinstance(data, dict | list):
        return data if stripped[0] in "[{" else text
    if data is None:
        return None if stripped in _NULLS else text
    if isinstance(data, str) and stripped[0] not in "'\"" and data != stripped:
        return text  # a plain scalar YAML shortened (a trailing `# comment`): the user's whole text
    return data


def _problem_from_mark(exc: MarkedYAMLError, file: str, what: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    detail = exc.problem or exc.context or str(exc)
    return Problem(file=file, path="", message=f"{what}: {detail}".strip(), line=line, column=col)
