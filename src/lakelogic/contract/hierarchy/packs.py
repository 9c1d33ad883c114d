"""Policy packs (DRIVER §10): organisation-wide defaults, enforced settings, rules and steps.

A pack contributes at three points of the merge: its ``defaults`` / ``<stage>_defaults`` / ``metadata`` /
``service_levels`` sit below the domain; its ``enforce`` / ``<stage>_enforce`` are merged above the contract
and ``--set``; its quality rules are appended and its transformations prepended/appended/replaced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakelogic.contract.hierarchy.yamlio import read_yaml
from lakelogic.errors import ContractError, Problem
from lakelogic.types import LAYERS

_MODES = ("prepend", "append", "replace")
_BASE_KEYS = {
    "name",
    "description",
    "defaults",
    "enforce",
    "quality",
    "service_levels",
    "metadata",
    "transformations",
    "transformations_mode",
}
_STAGE_SUFFIXES = ("_defaults", "_enforce", "_transformations", "_transformations_mode")


@dataclass(frozen=True)
class PolicyPack:
    name: str
    file: Path
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return f"policy_pack:{self.name}"

    def defaults(self, layer: str | None) -> list[Mapping[str, Any]]:
        """Default blocks, lowest first: ``defaults``, ``metadata``, ``service_levels``, stage defaults."""
        out: list[Mapping[str, Any]] = []
        base = dict(self.data.get("defaults") or {})
        base.pop("quality", None)  # pack rules are appended, never merged as defaults
        out.append(base)
        for key in ("metadata", "service_levels"):
            if self.data.get(key):
                out.append({key: self.data[key]})
        if layer and self.data.get(f"{layer}_defaults"):
            stage = dict(self.data[f"{layer}_defaults"])
            stage.pop("quality", None)
            out.append(stage)
        return out

    def enforced(self, layer: str | None) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = [dict(self.data.get("enforce") or {})]
        if layer and self.data.get(f"{layer}_enforce"):
            out.append(dict(self.data[f"{layer}_enforce"]))
        return out

    def rules(self, kind: str, layer: str | None) -> list[Any]:
        """Pack rules of ``kind`` (``row_rules``/``dataset_rules``) from every block that holds them."""
        blocks = [self.data, self.data.get("defaults") or {}]
        if layer:
            blocks.append(self.data.get(f"{layer}_defaults") or {})
        out: list[Any] = []
        for block in blocks:
            out.extend(((block.get("quality") or {}).get(kind)) or [])
        return out


def _check_keys(data: Mapping[str, Any], file: Path) -> list[Problem]:
    allowed = set(_BASE_KEYS) | {f"{layer}{suffix}" for layer in LAYERS for suffix in _STAGE_SUFFIXES}
    problems = [
        Problem(
            file=str(file),
            path=str(key),
            message="unknown policy pack key",
            allowed=", ".join(sorted(_BASE_KEYS)),
        )
        for key in data
        if key not in allowed
    ]
    # every block `rules` reads: a typo (`row_rule:`) must not drop the pack's rules silently
    quality_blocks = [("quality", data.get("quality"))]
    for key in ("defaults", *(f"{layer}_defaults" for layer in LAYERS)):
        block = data.get(key)
        if isinstance(block, Mapping):
            quality_blocks.append((f"{key}.quality", block.get("quality")))
    for where, quality in quality_blocks:
        if isinstance(quality, Mapping):
            problems += [
                Problem(
                    file=str(file),
                    path=f"{where}.{key}",
                    message="unknown policy pack quality key",
                    allowed="row_rules, dataset_rules",
                )
                for key in quality
                if key not in ("row_rules", "dataset_rules")
            ]
    for key in [k for k in data if str(k).endswith("transformations_mode")]:
        if data[key] not in _MODES:
            problems.append(
                Problem(
                    file=str(file),
                    path=str(key),
                    message="unknown mode",
                    value=str(data[key]),
                    allowed=", ".join(_MODES),
                )
            )
    return problems


def load_pack(ref: str | Path, *, relative_to: Path, pack_dir: Path | None) -> PolicyPack:
    """A pack by path (relative to the file naming it) or by name in ``pack_dir`` (.yaml, then .yml)."""
    text = str(ref)
    candidates: list[Path] = []
    if text.endswith((".yaml", ".yml")) or "/" in text:
        candidates.append((relative_to / text).resolve() if not Path(text).is_absolute() else Path(text))
    else:
        folder = pack_dir or Path("policy_packs")
        candidates += [folder / f"{text}.yaml", folder / f"{text}.yml"]
    for path in candidates:
        if path.is_file():
            data = read_yaml(path)
            if not isinstance(data, Mapping):
                raise ContractError(
                    Problem(file=str(path), path="", message="a policy pack must be a mapping")
                )
            problems = _check_keys(data, path)
            if problems:
                raise ContractError(problems)
            return PolicyPack(str(data.get("name") or path.stem), path, data)
    raise ContractError(
        Problem(
            file=str(relative_to),
            path="metadata.policy_pack",
            message=f"policy pack {text!r} not found",
            allowed=", ".join(str(c) for c in candidates),
        )
    )


def _rule_name(rule: Any) -> str | None:
    if not isinstance(rule, Mapping):
        return None
    if rule.get("name"):
        return str(rule["name"])
    for value in rule.values():
        if isinstance(value, Mapping) and value.get("name"):
            return str(value["name"])
    return None


def _field_rule_names(data: Mapping[str, Any]) -> set[str | None]:
    model = data.get("model")
    fields = model.get("fields") if isinstance(model, Mapping) else None
    names: set[str | None] = set()
    for declared in fields if isinstance(fields, list) else []:
        rules = declared.get("rules") if isinstance(declared, Mapping) else None
        names |= {_rule_name(r) for r in rules} if isinstance(rules, list) else set()
    return names - {None}


def append_rules(data: dict[str, Any], packs: Sequence[PolicyPack], layer: str | None) -> list[str]:
    """Append pack rules (a name the contract already uses is skipped); return the touched paths."""
    touched: list[str] = []
    for kind in ("row_rules", "dataset_rules"):
        extra = [rule for pack in packs for rule in pack.rules(kind, layer)]
        if not extra:
            continue
        quality = data.setdefault("quality", {})
        current = list(quality.get(kind) or [])
        names = {_rule_name(r) for r in current} - {None}
        if kind == "row_rules":  # field-level rules are row rules too (SEMANTICS §10.1)
            names |= _field_rule_names(data)
        for rule in extra:
            name = _rule_name(rule)
            if name is not None and name in names:
                continue
            current.append(rule)
            names.add(name)
        quality[kind] = current
        touched.append(f"quality.{kind}")
    return touched


def _combine(base: list[Any], steps: list[Any], mode: str) -> list[Any]:
    if mode == "append":
        return base + steps
    if mode == "replace":
        return list(steps)
    return steps + base


def apply_transformations(data: dict[str, Any], packs: Sequence[PolicyPack], layer: str | None) -> bool:
    """Root pack steps first, then ``<stage>_transformations``, each with its own mode."""
    steps = list(data.get("transformations") or [])
    changed = False
    for pack in packs:
        for key in ("transformations", f"{layer}_transformations" if layer else None):
            if key and pack.data.get(key):
                steps = _combine(steps, list(pack.data[key]), str(pack.data.get(f"{key}_mode") or "prepend"))
                changed = True
    if changed:
        data["transformations"] = steps
    return changed
