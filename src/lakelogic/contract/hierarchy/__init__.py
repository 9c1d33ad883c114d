"""Domain → system → contract inheritance (DRIVER §2): the effective contract and where each value came from.

Public API: :func:`resolve_effective`, :class:`EffectiveContract`, :class:`Origin`, :func:`find_hierarchy`.
"""

from __future__ import annotations

from lakelogic.contract.hierarchy.merge import Origin
from lakelogic.contract.hierarchy.models import DomainFile, Storage, SystemFile
from lakelogic.contract.hierarchy.resolve import (
    EffectiveContract,
    find_hierarchy,
    find_project_root,
    resolve_effective,
)

__all__ = [
    "DomainFile",
    "EffectiveContract",
    "Origin",
    "Storage",
    "SystemFile",
    "find_hierarchy",
    "find_project_root",
    "resolve_effective",
]
