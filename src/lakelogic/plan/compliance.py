"""``compliance.data_residency`` against the environment's region (SEMANTICS §18): a mismatch is a run
warning, never an error (the region is configuration the runtime cannot verify on its own).

``data_residency`` is a region, a list of regions, or ``{allowed: [...]}`` / ``{region: ...}``. A region
matches itself and its sub-regions: residency ``eu`` admits ``eu-west-1``; comparison ignores case.
"""

from __future__ import annotations

from typing import Any


def _allowed(residency: Any) -> list[str]:
    if isinstance(residency, str):
        return [residency]
    if isinstance(residency, list):
        return [str(r) for r in residency if r is not None]
    if isinstance(residency, dict):
        for key in ("allowed", "allowed_regions", "regions", "region"):
            if key in residency:
                return _allowed(residency[key])
    return []


def _within(region: str, allowed: str) -> bool:
    region, allowed = region.strip().lower(), allowed.strip().lower()
    return region == allowed or region.startswith(allowed + "-")


def residency_warning(contract: Any) -> str | None:
    compliance = getattr(contract, "compliance", None) or {}
    allowed = _allowed(compliance.get("data_residency")) if isinstance(compliance, dict) else []
    region = contract.environment_region
    if not allowed or not region or any(_within(region, a) for a in allowed):
        return None
    return (
        f"data_residency: this run's environment region {region!r} is outside the contract's "
        f"data_residency ({', '.join(allowed)})"
    )
