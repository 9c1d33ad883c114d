"""Live Prometheus metrics while the driver runs (DRIVER §15.3, ``--metrics-backend prometheus``).

One private registry per exporter (never the process-global default), served on ``/metrics`` by
``prometheus_client``'s HTTP server. Labels are ``contract`` (node id) and ``layer``; run ids appear only on
the info metric.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class MetricsExporter(Protocol):
    """What the driver calls on a metrics backend (Prometheus, StatsD) during a pipeline run."""

    def start(self, pipeline_run_id: str, engine: str, environment: str | None) -> None: ...

    def observe(self, contract: Mapping[str, Any]) -> None: ...

    def finish(self, counters: Mapping[str, Any]) -> None: ...

    def shutdown(self) -> None: ...


class PrometheusExporter:
    def __init__(self, *, prefix: str = "lakelogic", tags: Mapping[str, str] | None = None) -> None:
        self.registry = CollectorRegistry()
        self.tags = dict(tags or {})
        labels = ["contract", "layer", *self.tags]
        p = prefix

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{p}_{name}", doc, [*labels, *extra], registry=self.registry)

        self.rows = {
            key: counter(f"contract_{key}", f"Rows {key.split('_')[1]} per contract run")
            for key in ("rows_read", "rows_good", "rows_quarantined", "rows_filtered")
        }
        self.runs = counter("contract_runs", "Contract runs by status", ("status",))
        self.duration = Histogram(
            f"{p}_contract_run_duration_seconds", "Contract run duration", labels, registry=self.registry
        )
        self.ratio = Gauge(
            f"{p}_contract_quarantine_ratio",
            "Quarantined / (good + quarantined)",
            labels,
            registry=self.registry,
        )
        self.last_success = Gauge(
            f"{p}_contract_last_success_timestamp_seconds",
            "Unix time of the last success",
            labels,
            registry=self.registry,
        )
        self.pipeline = Gauge(
            f"{p}_pipeline_contracts", "Contracts by status", ["status", *self.tags], registry=self.registry
        )
        self.pipeline_duration = Gauge(
            f"{p}_pipeline_duration_seconds", "Pipeline run duration", list(self.tags), registry=self.registry
        )
        self.info = Gauge(
            f"{p}_pipeline_info",
            "Pipeline run identity",
            ["pipeline_run_id", "engine", "environment", *self.tags],
            registry=self.registry,
        )
        self._server: Any = None
        self._started = time.monotonic()

    def serve(self, port: int = 9100, host: str = "0.0.0.0") -> None:
        self._server, _thread = start_http_server(port, addr=host, registry=self.registry)

    def start(self, pipeline_run_id: str, engine: str, environment: str | None) -> None:
        self._started = time.monotonic()
        self.info.clear()  # one current pipeline run: a backfill's earlier windows stop being reported
        self.info.labels(pipeline_run_id, engine, environment or "", *self.tags.values()).set(1)

    def observe(self, contract: Mapping[str, Any]) -> None:
        """One finished contract (the dict of ``driver.summary.contract_rows``)."""
        labels = (contract["node_id"], contract["layer"], *self.tags.values())
        for key, field in (
            ("rows_read", "rows_source"),
            ("rows_good", "rows_good"),
            ("rows_quarantined", "rows_quarantined"),
            ("rows_filtered", "rows_filtered"),
        ):
            self.rows[key].labels(*labels).inc(float(contract.get(field) or 0))
        self.runs.labels(*labels, contract["status"]).inc()
        self.duration.labels(*labels).observe(float(contract.get("duration_seconds") or 0))
        self.ratio.labels(*labels).set(float(contract.get("quarantine_ratio") or 0))
        if contract["status"] in ("succeeded", "partial", "no_new_data"):
            self.last_success.labels(*labels).set(time.time())

    def finish(self, counters: Mapping[str, Any]) -> None:
        for status in ("succeeded", "partial", "failed", "skipped", "no_new_data", "awaiting_approval"):
            self.pipeline.labels(status, *self.tags.values()).set(float(counters.get(status) or 0))
        gauge = self.pipeline_duration.labels(*self.tags.values()) if self.tags else self.pipeline_duration
        gauge.set(time.monotonic() - self._started)

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None
