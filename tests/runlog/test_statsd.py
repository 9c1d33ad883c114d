"""``--metrics-backend statsd`` (DRIVER §15.3): the values reach a real UDP socket as StatsD lines."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from lakelogic.runlog.statsd_exporter import StatsdExporter, segment


@pytest.fixture
def server() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    yield sock
    sock.close()


def received(sock: socket.socket, count: int) -> list[str]:
    lines: list[str] = []
    while len(lines) < count:
        lines += sock.recv(65535).decode().splitlines()
    return lines


def test_contract_and_pipeline_metrics_are_pushed(server: socket.socket) -> None:
    port = server.getsockname()[1]
    exporter = StatsdExporter(host="127.0.0.1", port=port, prefix="ll", tags={"env": "prod"})
    exporter.start("run-1", "spark", "prod")
    exporter.observe(
        {
            "node_id": "silver.silver_orders",
            "layer": "silver",
            "status": "succeeded",
            "rows_source": 10,
            "rows_good": 8,
            "rows_quarantined": 2,
            "rows_filtered": 0,
            "duration_seconds": 1.5,
            "quarantine_ratio": 0.2,
        }
    )
    lines = received(server, 8)
    base = "ll.env.prod.contract.silver.silver_orders"
    assert f"{base}.rows_read:10|c" in lines
    assert f"{base}.rows_good:8|c" in lines
    assert f"{base}.rows_quarantined:2|c" in lines
    assert f"{base}.runs.succeeded:1|c" in lines
    assert f"{base}.run_duration_seconds:1.5|g" in lines
    assert f"{base}.quarantine_ratio:0.2|g" in lines
    assert any(line.startswith(f"{base}.last_success_timestamp_seconds:") for line in lines)
    assert not any("run-1" in line for line in lines)  # run ids never become names

    exporter.finish({"succeeded": 3, "failed": 1})
    lines = received(server, 7)
    assert "ll.env.prod.pipeline.contracts.succeeded:3.0|g" in lines
    assert "ll.env.prod.pipeline.contracts.failed:1.0|g" in lines
    assert any(line.startswith("ll.env.prod.pipeline.duration_seconds:") for line in lines)
    exporter.shutdown()


def test_segments_never_carry_statsd_separators() -> None:
    assert segment("a.b:c|d@e f") == "a_b_c_d_e_f"
    assert segment("") == "_"
