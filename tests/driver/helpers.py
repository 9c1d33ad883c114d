"""Builders of in-memory nodes and a fake contract runner (no Spark, no files)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakelogic.driver.nodes import Node, build_node
from lakelogic.driver.registry import RegistryEntry, UpstreamRef
from lakelogic.driver.runner import RunRequest
from lakelogic.report import Counts, DatasetRuleResult, RunReport
from lakelogic.types import RunStatus


def node(
    name: str,
    layer: str,
    *,
    upstream: tuple[str, ...] = (),
    entry_upstream: tuple[str | tuple[str, bool], ...] = (),
    entity: str | None = None,
    kind: str | None = None,
    enabled: bool = True,
    metadata: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    max_quarantine_ratio: float | None = None,
    retries: int | None = None,
) -> Node:
    refs = tuple(
        UpstreamRef(u, True, f"reg.yaml: entries[0]: upstream[{i}]")
        if isinstance(u, str)
        else UpstreamRef(u[0], u[1], f"reg.yaml: entries[0]: upstream[{i}]")
        for i, u in enumerate(entry_upstream)
    )
    entry = RegistryEntry(
        contract_path=Path(f"/contracts/{name}.yaml"),
        registry_file=Path("/contracts/_registry.yaml"),
        index=0,
        entity=entity,
        layer=layer,
        enabled=enabled,
        upstream=refs,
        kind=kind,
        max_quarantine_ratio=max_quarantine_ratio,
        retries=retries,
    )
    data: dict[str, Any] = {"version": "1.0.0", "info": {"title": name, "target_layer": layer}, "model": {}}
    if upstream:
        data["upstream"] = list(upstream)
    if metadata:
        data["metadata"] = dict(metadata)
    data.update(extra or {})
    return build_node(entry, data)


Behaviour = Callable[[RunRequest], RunReport]


class FakeRunner:
    """Records calls with start/end instants; per-contract behaviour (default: succeed)."""

    def __init__(self, behaviours: Mapping[str, Behaviour] | None = None, sleep: float = 0.0) -> None:
        self.behaviours = dict(behaviours or {})
        self.sleep = sleep
        self.calls: list[RunRequest] = []
        self.spans: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def __call__(self, request: RunRequest) -> RunReport:
        start = time.monotonic()
        with self._lock:
            self.calls.append(request)
        if self.sleep:
            time.sleep(self.sleep)
        behaviour = self.behaviours.get(request.node.name, ok)
        report = behaviour(request)
        with self._lock:
            self.spans[request.node.id] = (start, time.monotonic())
        return report

    def ran(self) -> list[str]:
        return [c.node.id for c in self.calls]


def report_for(request: RunRequest, **fields: Any) -> RunReport:
    report = RunReport(
        run_id=request.run_id,
        pipeline_run_id=request.pipeline_run_id,
        contract=request.node.name,
        layer=request.node.layer,
        started_at=datetime.now(UTC),
        **fields,
    )
    report.window.label = request.window.label
    report.window.start = request.window.start
    report.window.end = request.window.end
    report.finish()
    return report


def ok(request: RunRequest) -> RunReport:
    return report_for(request, counts=Counts(source=10, good=10))


def dataset_rule_fails(rule: str, severity: str = "error") -> Behaviour:
    def run(request: RunRequest) -> RunReport:
        return report_for(
            request,
            status=RunStatus.PARTIAL if severity == "error" else RunStatus.SUCCEEDED,
            counts=Counts(source=10, good=10),
            dataset_rules=[
                DatasetRuleResult(
                    name=rule, generated_name=rule, category="uniqueness", severity=severity, passed=False
                )
            ],
        )

    return run


def quarantines(good: int, bad: int) -> Behaviour:
    def run(request: RunRequest) -> RunReport:
        return report_for(request, counts=Counts(source=good + bad, good=good, quarantined=bad))

    return run


def raises(exc: BaseException) -> Behaviour:
    def run(request: RunRequest) -> RunReport:
        raise exc

    return run
