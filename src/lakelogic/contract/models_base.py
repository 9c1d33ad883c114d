"""Building blocks shared by every contract model: the strict base class and closed value sets.

Every typed block of a contract derives from :class:`OLCModel` (frozen, unknown keys rejected).
Closed value sets (SEMANTICS §1.2) are plain strings validated case-insensitively by
:func:`closed`, so callers compare with ordinary strings while errors list the allowed values
and the closest one. Errors raised here are pydantic custom errors whose ``ctx`` carries
``allowed``/``suggestion``; the loader turns them into :class:`lakelogic.errors.Problem`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from lakelogic.types import Phase, Severity

NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"

# A rule/contract identifier (SEMANTICS §2, §10.1).
Identifier = Annotated[str, StringConstraints(pattern=NAME_PATTERN, min_length=1)]


def closest(value: str, allowed: Sequence[str]) -> str | None:
    """The allowed value most similar to ``value`` (difflib), or None when nothing is close."""
    matches = difflib.get_close_matches(value, list(allowed), n=1, cutoff=0.6)
    return matches[0] if matches else None


def closed_value_error(value: object, allowed: Sequence[str], what: str = "value") -> PydanticCustomError:
    """The error every closed value set raises: names the bad value, the allowed ones, the closest."""
    suggestion = closest(str(value).lower(), allowed) if isinstance(value, str) else None
    return PydanticCustomError(
        "closed_value",
        "unknown {what}",
        {"what": what, "value": value, "allowed": ", ".join(allowed), "suggestion": suggestion},
    )


class ClosedSet:
    """``Annotated[str, ClosedSet(values)]``: one of ``values`` (case-insensitive), aliases normalised.

    The JSON Schema shows the canonical values plus the aliases as an enum.
    """

    def __init__(
        self, values: Sequence[str], *, aliases: Mapping[str, str] | None = None, what: str = "value"
    ) -> None:
        self.values = tuple(values)
        self.aliases = {k.lower(): v for k, v in (aliases or {}).items()}
        self.what = what
        self._accepted = {v.lower(): v for v in self.values}

    def check(self, value: object) -> object:
        if not isinstance(value, str):
            return value  # the str validator reports the wrong type
        low = value.strip().lower()
        if low in self._accepted:
            return self._accepted[low]
        if low in self.aliases:
            return self.aliases[low]
        raise closed_value_error(value, [*self.values, *self.aliases], self.what)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "enum": [*self.values, *self.aliases]}


def _to_phase(value: object) -> object:
    if isinstance(value, str) and not isinstance(value, Phase):
        low = value.strip().lower()
        if low not in {p.value for p in Phase}:
            raise closed_value_error(value, [p.value for p in Phase], "phase")
        return Phase(low)
    return value


def _to_severity(value: object) -> object:
    if isinstance(value, str) and not isinstance(value, Severity):
        low = value.strip().lower()
        if low not in {s.value for s in Severity}:
            raise closed_value_error(value, [s.value for s in Severity], "severity")
        return Severity(low)
    return value


PhaseValue = Annotated[Phase, BeforeValidator(_to_phase)]
SeverityValue = Annotated[Severity, BeforeValidator(_to_severity)]


def _yaml_bool(value: object) -> object:
    """YAML 1.2 booleans only; the text ``true``/``false`` (e.g. from ``${VAR}``) is accepted too."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    raise PydanticCustomError(
        "bool_value",
        "expected true or false",
        {"value": value, "allowed": "true, false (YAML 1.2: yes/no/on/off are strings)"},
    )


# A boolean that refuses ``yes``/``on``/``1`` (pydantic's lax bool would accept them).
Flag = Annotated[bool, BeforeValidator(_yaml_bool), WithJsonSchema({"type": "boolean"})]


class OLCModel(BaseModel):
    """Base of every typed contract block: frozen, unknown keys rejected.

    ``KEY_ALIASES`` maps an accepted alias key to its canonical key; aliases are renamed before
    validation so attributes always carry the canonical name. Writing both is an error.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    KEY_ALIASES: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _rename_aliases(cls, data: Any) -> Any:
        if not cls.KEY_ALIASES or not isinstance(data, Mapping):
            return data
        return rename_aliases(data, cls.KEY_ALIASES)


def rename_aliases(data: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """Return ``data`` with alias keys renamed to canonical ones; alias + canonical together is an error."""
    out = dict(data)
    for alias, canonical in aliases.items():
        if alias not in out:
            continue
        if canonical in out:
            raise PydanticCustomError(
                "alias_conflict",
                "'{alias}' is an alias of '{canonical}'; write only one of them",
                {"alias": alias, "canonical": canonical},
            )
        out[canonical] = out.pop(alias)
    return out


def str_list(value: object) -> object:
    """Accept a single string where a list of column names is expected (``on: id``)."""
    return [value] if isinstance(value, str) else value


_COLUMNS_SCHEMA = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}

# A list of column names that also accepts a single name.
Columns = Annotated[list[str], BeforeValidator(str_list), WithJsonSchema(_COLUMNS_SCHEMA)]
