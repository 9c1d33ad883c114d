"""Local HTTP and SMTP receivers for delivery tests: they record what arrives."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


@dataclass
class Received:
    posts: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)  # path, headers, JSON
    answers: list[int] = field(default_factory=list)  # status codes to give, in order; then 200


@contextmanager
def http_receiver(answers: list[int] | None = None) -> Iterator[tuple[str, Received]]:
    received = Received(answers=list(answers or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length).decode("utf-8")
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw
            received.posts.append((self.path, dict(self.headers), body))
            status = received.answers.pop(0) if received.answers else 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def smtp_receiver() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """A minimal SMTP server (EHLO/HELO, MAIL, RCPT, DATA, QUIT) collecting messages."""
    mails: list[dict[str, Any]] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(b"220 test ESMTP\r\n")
            mail: dict[str, Any] = {"rcpt": []}
            while True:
                line = self.rfile.readline().decode("utf-8", "replace")
                if not line:
                    return
                verb = line[:4].upper()
                if verb in ("EHLO", "HELO"):
                    self.wfile.write(b"250 test\r\n")
                elif verb == "MAIL":
                    mail["from"] = line.strip()
                    self.wfile.write(b"250 ok\r\n")
                elif verb == "RCPT":
                    mail["rcpt"].append(line.strip())
                    self.wfile.write(b"250 ok\r\n")
                elif verb == "DATA":
                    self.wfile.write(b"354 go\r\n")
                    data = []
                    while (chunk := self.rfile.readline().decode("utf-8", "replace")) not in (".\r\n", ""):
                        data.append(chunk)
                    mail["data"] = "".join(data)
                    mails.append(mail)
                    mail = {"rcpt": []}
                    self.wfile.write(b"250 queued\r\n")
                elif verb == "QUIT":
                    self.wfile.write(b"221 bye\r\n")
                    return
                else:
                    self.wfile.write(b"250 ok\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], mails
    finally:
        server.shutdown()
        server.server_close()
