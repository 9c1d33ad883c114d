"""Deep merge with origin tracking (DRIVER §2.4).

Mappings merge per key; lists and scalars from a higher layer replace lower ones; ``notifications``
lists are concatenated (de-duplicated by type + destination); an explicit ``null`` clears an inherited
value. Every leaf path remembers which file put it there and how.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Lists whose items from every layer are kept (DRIVER §2.4).
CONCAT_KEYS = frozenset({"notifications"})


@dataclass(frozen=True)
class Origin:
    """Where a leaf of the effective contract came from.

    ``source``: ``default``, ``domain:<file>``, ``system:<file>``, ``environment:<env>``, ``contract:<file>``,
    ``override:--set``. ``how``: ``declared`` (only this layer sets it), ``inherited`` (from the hierarchy,
    not overridden), ``overridden`` (replaces a lower layer's value), ``deep-merged`` (a mapping built from
    several layers), ``concatenated`` (a list joined across layers), ``locked`` (a locked domain value).
    """

    source: str
    how: str

    def render(self) -> str:
        return f"{self.source} ({self.how})"


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _notification_key(item: Any) -> str:
    if not isinstance(item, Mapping):
        return json.dumps(item, sort_keys=True, default=str)
    dests = [item.get(k) for k in ("target", "to", "channel", "url")] + list(item.get("targets") or [])
    return json.dumps([item.get("type", "apprise"), sorted(str(d) for d in dests if d)])


_DEFAULT_EVENTS = ["quarantine", "failure"]


def _concat_channels(current: list[Any], overlay: list[Any]) -> list[Any]:
    """Channels of a lower layer, then the overlay's. A channel the overlay repeats (same type and
    destinations) is merged in place: the overlay's settings win, and it is subscribed to the events
    of both (a contract repeating a domain channel adds its events, it does not lose them)."""
    joined = list(current)
    index = {_notification_key(item): i for i, item in enumerate(joined)}
    for item in overlay:
        key = _notification_key(item)
        if key not in index:
            index[key] = len(joined)
            joined.append(item)
            continue
        earlier = joined[index[key]]
        if isinstance(earlier, Mapping) and isinstance(item, Mapping):
            events = list(earlier.get("on_events") or _DEFAULT_EVENTS)
            events += [e for e in (item.get("on_events") or _DEFAULT_EVENTS) if e not in events]
            joined[index[key]] = {**earlier, **item, "on_events": events}
    return joined


def leaf_paths(value: Any, path: str = "") -> list[str]:
    """Every leaf path of a nested mapping (lists are leaves)."""
    if isinstance(value, Mapping) and value:
        out: list[str] = []
        for key, child in value.items():
            out.extend(leaf_paths(child, join(path, str(key))))
        return out
    return [path] if path else []


class Merger:
    """Accumulates layers from lowest to highest precedence."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.origins: dict[str, Origin] = {}

    def add(self, overlay: Mapping[str, Any], source: str, *, hierarchy: bool, at: str = "") -> None:
        """Merge ``overlay`` (placed at dotted path ``at``) on top of what is there."""
        if at:
            target: dict[str, Any] = self.data
            parts = at.split(".")
            for part in parts[:-1]:
                nxt = target.get(part)
                if not isinstance(nxt, dict):
                    nxt = {}
                    target[part] = nxt
                target = nxt
            # the same rules as a nested overlay: a ``notifications`` list placed at a path is joined
            # with the one already there (a file's own quarantine block and its top-level channels)
            self._merge_into(target, {parts[-1]: overlay}, ".".join(parts[:-1]), source, hierarchy)
            return
        self._merge_into(self.data, overlay, "", source, hierarchy)

    def _how(self, path: str, hierarchy: bool) -> str:
        if self._has_lower(path):
            return "overridden"
        return "inherited" if hierarchy else "declared"

    def _has_lower(self, path: str) -> bool:
        prefix = path + "."
        return path in self.origins or any(p.startswith(prefix) for p in self.origins)

    def _drop_below(self, path: str) -> None:
        prefix = path + "."
        for p in [p for p in self.origins if p == path or p.startswith(prefix)]:
            del self.origins[p]

    def _set(
        self, target: dict[str, Any], key: str, value: Any, path: str, source: str, hierarchy: bool
    ) -> None:
        how = self._how(path, hierarchy)
        self._drop_below(path)
        target[key] = copy.deepcopy(value)
        if isinstance(value, Mapping) and value:
            for leaf in leaf_paths(value, path):
                self.origins[leaf] = Origin(source, how)
        else:
            self.origins[path] = Origin(source, how)

    def _merge_into(
        self, target: dict[str, Any], overlay: Mapping[str, Any], path: str, source: str, hierarchy: bool
    ) -> None:
        for raw_key, value in overlay.items():
            key = str(raw_key)
            child = join(path, key)
            current = target.get(key)
            if isinstance(value, Mapping) and isinstance(current, dict):
                # an empty mapping adds nothing: only an explicit null clears what is inherited (§2.4)
                self._merge_into(current, value, child, source, hierarchy)
            elif key in CONCAT_KEYS and isinstance(value, list) and isinstance(current, list):
                target[key] = copy.deepcopy(_concat_channels(current, value))
                self._drop_below(child)
                self.origins[child] = Origin(source, "concatenated")
            else:
                self._set(target, key, value, child, source, hierarchy)

    def mark_deep_merged(self) -> dict[str, Origin]:
        """Origins plus one entry per mapping whose leaves came from more than one source."""
        out = dict(self.origins)
        sources: dict[str, set[str]] = {}
        for leaf, origin in self.origins.items():
            parts = leaf.split(".")
            for i in range(1, len(parts)):
                sources.setdefault(".".join(parts[:i]), set()).add(origin.source)
        for path, found in sources.items():
            if len(found) > 1:
                out[path] = Origin(", ".join(sorted(found)), "deep-merged")
        return out


def get_path(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def has_path(data: Mapping[str, Any], path: str) -> bool:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def drop_nulls(value: Any) -> Any:
    """Remove keys whose value is ``null``: an explicit null clears, so the contract default applies."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value
