"""StatsD metrics while the driver runs (DRIVER §15.3, ``--metrics-backend statsd``).

The same values as the Prometheus exporter, pushed over UDP as StatsD counters and gauges with
dot-joined names (StatsD has no labels):

* ``<prefix>[.<tag>.<value>…].contract.<layer>.<contract>.rows_read|rows_good|rows_quarantined|
  rows_filtered`` (counters), ``.runs.<status>`` (counter), ``.run_duration_seconds``,
  ``.quarantine_ratio``, ``.last_success_timestamp_seconds`` (gauges);
* ``<prefix>[.<tag>.<value>…].pipeline.contracts.<status>`` and ``.pipeline.duration_seconds`` (gauges).

Run ids never become names (one series per run would flood the server), so the info metric has no
StatsD counterpart. ``--metrics-tags`` become name segments, because plain StatsD has no tags.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from statsd import StatsClient

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")
_STATUSES = ("succeeded", "partial", "failed", "skipped", "no_new_data", "awaiting_approval")


def segment(value: str) -> str:
    """One name segment: StatsD separators (``.:|@``) and other odd characters become ``_``."""
    return _UNSAFE.sub("_", value) or "_"


class StatsdExporter:
    """Pushes each finished contract's metrics, then the pipeline's, to a StatsD server (UDP: a server
    that is down loses the values and never slows or fails the pipeline run)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8125,
        prefix: str = "lakelogic",
        tags: Mapping[str, str] | None = None,
        client: Any = None,
    ) -> None:
        parts = [segment(prefix)]
        for key, value in (tags or {}).items():
            parts += [segment(key), segment(value)]
        self.client = client or StatsClient(host, port)
        self.base = ".".join(parts)
        self._started = time.monotonic()

    def _name(self, *parts: str) -> str:
        return ".".join([self.base, *parts])

    def start(self, pipeline_run_id: str, engine: str, environment: str | None) -> None:
        self._started = time.monotonic()

    def observe(self, contract: Mapping[str, Any]) -> None:
        """One finished contract (the dict of ``driver.summary.contract_row``)."""
        layer = segment(str(contract["layer"]))
        node = str(contract["node_id"])
        name = node.split(".", 1)[1] if node.startswith(f"{contract['layer']}.") else node
        path = ("contract", layer, segment(name))
        for key, field in (
            ("rows_read", "rows_source"),
            ("rows_good", "rows_good"),
            ("rows_quarantined", "rows_quarantined"),
            ("rows_filtered", "rows_filtered"),
        ):
            self.client.incr(self._name(*path, key), int(contract.get(field) or 0))
        self.client.incr(self._name(*path, "runs", segment(str(contract["status"]))))
        self.client.gauge(
            self._name(*path, "run_duration_seconds"), float(contract.get("duration_seconds") or 0)
        )
        self.client.gauge(self._name(*path, "quarantine_ratio"), float(contract.get("quarantine_ratio") or 0))
        if contract["status"] in ("succeeded", "partial", "no_new_data"):
            self.client.gauge(self._name(*path, "last_success_timestamp_seconds"), int(time.time()))

    def finish(self, counters: Mapping[str, Any]) -> None:
        for status in _STATUSES:
            self.client.gauge(self._name("pipeline", "contracts", status), float(counters.get(status) or 0))
        self.client.gauge(self._name("pipeline", "duration_seconds"), time.monotonic() - self._started)

    def shutdown(self) -> None:
        close = getattr(self.client, "close", None)
        if callable(close):
            close()
