"""Delivery of one rendered message to one channel (§16). A delivery failure is returned as text for the
run report, never raised: notifications must not change a run's outcome.

* ``apprise`` (and any ``scheme://`` destination of the other types that is not http(s)): Apprise
  decides the service from the URL scheme.
* ``slack`` / ``teams`` with an https webhook: the service's incoming-webhook JSON. A Slack channel name
  (``#data``, ``@someone``) posts with ``SLACK_BOT_TOKEN`` (``chat.postMessage``), else through the
  ``SLACK_WEBHOOK_URL`` webhook with the channel named.
* ``webhook``: a JSON document with the event, the subject, the message and the run's facts.
* ``email`` / ``smtp`` to an address: SMTP to ``LAKELOGIC_SMTP_HOST`` (default ``localhost``) and
  ``LAKELOGIC_SMTP_PORT`` (25), optional ``LAKELOGIC_SMTP_USER``/``LAKELOGIC_SMTP_PASSWORD``,
  ``LAKELOGIC_SMTP_STARTTLS=true``, sender ``LAKELOGIC_SMTP_FROM``.
* ``sendgrid`` to an address: SendGrid's v3 mail API with ``SENDGRID_API_KEY``.
* ``console``: the message on the process's standard error.

HTTP deliveries are retried twice on connection errors and 5xx/429 answers.
"""

from __future__ import annotations

import os
import smtplib
import socket
import sys
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlsplit

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

HTTP_TIMEOUT_SECONDS = 10.0
SENDGRID_URL = "https://api.sendgrid.com/v3/mail/send"
SLACK_POST_URL = "https://slack.com/api/chat.postMessage"


@dataclass(frozen=True)
class Message:
    event: str
    subject: str
    text: str
    body: str | None
    facts: dict[str, Any]


class _Transient(Exception):
    """An HTTP answer worth retrying (5xx, 429)."""


def deliver(kind: str, destination: str, message: Message) -> str | None:
    """Send ``message``; None when delivered, else why not."""
    try:
        if kind == "console":
            _console(message)
            return None
        scheme = urlsplit(destination).scheme.lower()
        if kind in ("slack", "teams", "webhook") and scheme in ("http", "https"):
            return _http(destination, _payload(kind, message))
        if kind == "slack" and destination.startswith(("#", "@")):
            return _slack_channel(destination, message)
        if kind in ("email", "smtp") and "://" not in destination:
            return _smtp(destination.removeprefix("mailto:"), message)
        if kind == "sendgrid":
            return _sendgrid(destination.removeprefix("mailto:"), message)
        return _apprise(destination, message)
    except Exception as exc:  # noqa: BLE001 - a failed delivery is reported, never fatal (§16)
        return f"{type(exc).__name__}: {exc}"


def _console(message: Message) -> None:
    sys.stderr.write(f"[lakelogic notification] {message.subject}\n{message.text}\n")
    sys.stderr.flush()


def _payload(kind: str, message: Message) -> dict[str, Any]:
    if kind == "slack":
        return {"text": f"*{message.subject}*\n{message.text}"}
    if kind == "teams":
        return {
            "@type": "MessageCard",
            "@context": "https://schema.org/extensions",
            "summary": message.subject,
            "title": message.subject,
            "text": message.text.replace("\n", "<br>"),
        }
    return {
        "event": message.event,
        "subject": message.subject,
        "message": message.text,
        **({"body": message.body} if message.body is not None else {}),
        **message.facts,
    }


@retry(
    retry=retry_if_exception_type((_Transient, ConnectionError, TimeoutError)),
    stop=stop_after_attempt(3),
    wait=wait_exponential(multiplier=0.5, max=4),
    reraise=True,
)
def _post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    import requests

    try:
        answer = requests.post(url, json=payload, headers=headers, timeout=HTTP_TIMEOUT_SECONDS)
    except requests.ConnectionError as exc:
        raise ConnectionError(str(exc)) from exc
    except requests.Timeout as exc:
        raise TimeoutError(str(exc)) from exc
    if answer.status_code >= 500 or answer.status_code == 429:
        raise _Transient(f"HTTP {answer.status_code}")
    return answer


def _http(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> str | None:
    answer = _post(url, payload, headers)
    if answer.status_code >= 300:
        return f"HTTP {answer.status_code}: {answer.text[:200]}"
    return None


def _slack_channel(channel: str, message: Message) -> str | None:
    text = _payload("slack", message)["text"]
    token = os.environ.get("SLACK_BOT_TOKEN")
    if token:
        url = os.environ.get("LAKELOGIC_SLACK_API_URL", SLACK_POST_URL)
        answer = _post(url, {"channel": channel, "text": text}, {"Authorization": f"Bearer {token}"})
        if answer.status_code >= 300:
            return f"HTTP {answer.status_code}: {answer.text[:200]}"
        reply = answer.json() if answer.content else {}
        return None if reply.get("ok", True) else f"Slack: {reply.get('error', 'not ok')}"
    return _http(os.environ["SLACK_WEBHOOK_URL"], {"channel": channel, "text": text})


def _smtp(address: str, message: Message) -> str | None:
    email = EmailMessage()
    email["Subject"] = message.subject
    email["From"] = os.environ.get("LAKELOGIC_SMTP_FROM") or f"lakelogic@{socket.getfqdn()}"
    email["To"] = address
    email.set_content(message.text)
    if message.body is not None:
        email.add_alternative(message.body, subtype="html")
    host = os.environ.get("LAKELOGIC_SMTP_HOST", "localhost")
    port = int(os.environ.get("LAKELOGIC_SMTP_PORT", "25"))
    with smtplib.SMTP(host, port, timeout=HTTP_TIMEOUT_SECONDS) as server:
        if os.environ.get("LAKELOGIC_SMTP_STARTTLS", "").lower() in ("1", "true", "yes"):
            server.starttls()
        user = os.environ.get("LAKELOGIC_SMTP_USER")
        if user:
            server.login(user, os.environ.get("LAKELOGIC_SMTP_PASSWORD", ""))
        server.send_message(email)
    return None


def _sendgrid(address: str, message: Message) -> str | None:
    key = os.environ.get("SENDGRID_API_KEY")
    if not key:
        return "SENDGRID_API_KEY is not set"
    sender = os.environ.get("LAKELOGIC_SMTP_FROM") or f"lakelogic@{socket.getfqdn()}"
    content = [{"type": "text/plain", "value": message.text}]
    if message.body is not None:
        content.append({"type": "text/html", "value": message.body})
    payload = {
        "personalizations": [{"to": [{"email": address}]}],
        "from": {"email": sender},
        "subject": message.subject,
        "content": content,
    }
    url = os.environ.get("LAKELOGIC_SENDGRID_URL", SENDGRID_URL)
    return _http(url, payload, {"Authorization": f"Bearer {key}"})


def _apprise(url: str, message: Message) -> str | None:
    import apprise

    notifier = apprise.Apprise()
    if not notifier.add(url):
        return f"no notification service understands {urlsplit(url).scheme!r}"
    with apprise.LogCapture(level=apprise.logging.WARNING) as captured:
        delivered = notifier.notify(title=message.subject, body=message.text)
    if delivered:
        return None
    detail = captured.getvalue().strip().splitlines() if hasattr(captured, "getvalue") else []
    return "apprise could not deliver" + (f": {detail[-1]}" if detail else "")
