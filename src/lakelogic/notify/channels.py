"""§16 channels: what a contract's ``quarantine.notifications`` (with the hierarchy's channels already
merged in) resolve to, and why a channel cannot be resolved.

A channel is one destination of one notification entry. ``target``, ``targets``, ``to``, ``channel`` and
``url`` are combined; secret references (``env:NAME``, ``${NAME}``, vault schemes) are resolved right
before use and never shown. An e-mail channel (``email``, ``smtp``, ``sendgrid``) written without a
destination is addressed to the contract's owner contacts (``info.contact``): that is how ownership feeds
routing. Channels are de-duplicated by type + destination; duplicates subscribe to the union of events.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from email.utils import getaddresses
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lakelogic.contract.models import Contract, Notification
from lakelogic.contract.models_meta import NOTIFICATION_EVENT_ALIASES
from lakelogic.contract.secrets import is_reference, resolve_secret
from lakelogic.errors import LakeLogicError, Problem

EMAIL_TYPES = frozenset({"email", "smtp", "sendgrid"})
HTTP_TYPES = frozenset({"slack", "teams", "webhook"})
_EMAIL = re.compile(r"^[^@\s:/]+@[^@\s:/]+\.[^@\s:/]+$")
_TEMPLATE_KEYS = ("subject_template", "message_template", "body_template")
_APPRISE_LOG_LOCK = threading.Lock()


@dataclass(frozen=True)
class Templates:
    subject: str | None = None
    message: str | None = None
    body: str | None = None


@dataclass(frozen=True)
class Subscription:
    """What one notification entry says for one event: its texts and where it was written."""

    templates: Templates
    template_context: dict[str, Any]
    yaml_path: str


@dataclass
class Channel:
    """One destination. Entries repeating a destination are merged; for each event the last entry
    subscribing to it decides the texts (later entries and inheriting contracts override)."""

    type: str
    destination: str  # as written: a secret reference stays a reference
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    @property
    def events(self) -> set[str]:
        return set(self.subscriptions)

    @property
    def label(self) -> str:
        """What the report shows: never a secret (references as written, URLs as scheme://host). A URL
        gets a short digest of the whole destination, so two webhooks on one host stay two channels in
        the report and in alert suppression."""
        if self.type == "console":
            return "console"
        shown = display_destination(self.destination)
        if shown == self.destination:
            return f"{self.type}:{shown}"
        digest = hashlib.sha256(self.destination.encode("utf-8")).hexdigest()[:8]
        return f"{self.type}:{shown}#{digest}"

    def resolved_destination(self) -> str:
        """The destination with a secret reference resolved (call right before delivery)."""
        if self.type == "console":
            return ""
        return resolve_secret(self.destination) if is_reference(self.destination) else self.destination


def display_destination(destination: str) -> str:
    """A destination as the report may show it: references as written, e-mail addresses, http(s) URLs as
    scheme://host; any other URL as its scheme only (services such as pover:// or tgram:// carry their
    token where a host would be)."""
    if is_reference(destination) or _EMAIL.match(destination):
        return destination
    parts = urlsplit(destination)
    if parts.scheme.lower() in ("http", "https"):
        return f"{parts.scheme}://{parts.hostname or ''}"
    if parts.scheme:
        return f"{parts.scheme}://***"
    return "***"


def contact_addresses(contract: Contract) -> list[str]:
    """E-mail addresses among the owner contacts (``info.contact``: text or a map of roles to text)."""
    contact = contract.info.contact
    values = [contact] if isinstance(contact, str) else list((contact or {}).values())
    found: list[str] = []
    for _, address in getaddresses([str(v).replace("mailto:", "") for v in values]):
        if _EMAIL.match(address) and address.lower() not in (f.lower() for f in found):
            found.append(address)
    return found


def entry_templates(note: Notification, base_dir: Path, path: str, problems: list[Problem]) -> Templates:
    texts: dict[str, str | None] = {}
    for key in _TEMPLATE_KEYS:
        text = getattr(note, key)
        file_name = getattr(note, f"{key}_file")
        if file_name is not None:
            file = Path(file_name) if Path(file_name).is_absolute() else base_dir / file_name
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(_problem(f"{path}.{key}_file", f"template file not readable: {exc}"))
        texts[key] = text
    return Templates(texts["subject_template"], texts["message_template"], texts["body_template"])


def _problem(path: str, message: str, *, allowed: str | None = None) -> Problem:
    return Problem(file="<contract>", path=path, message=message, allowed=allowed)


def _destination_problem(kind: str, destination: str) -> str | None:
    """Why ``destination`` cannot be delivered to by a ``kind`` channel, or None."""
    try:
        value = resolve_secret(destination) if is_reference(destination) else destination
    except LakeLogicError as exc:
        return f"the secret cannot be resolved: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - a registered vault resolver may fail in any way
        return f"the secret cannot be resolved: {type(exc).__name__}"
    if not value.strip():
        return "the destination is empty"
    scheme = urlsplit(value).scheme.lower()
    if kind == "slack" and value.startswith(("#", "@")):
        if os.environ.get("SLACK_BOT_TOKEN") or os.environ.get("SLACK_WEBHOOK_URL"):
            return None
        return "a Slack channel name needs SLACK_BOT_TOKEN or SLACK_WEBHOOK_URL in the environment"
    if kind == "sendgrid" and not os.environ.get("SENDGRID_API_KEY"):
        return "the SENDGRID_API_KEY environment variable is not set"
    if kind in EMAIL_TYPES and _EMAIL.match(value.removeprefix("mailto:")):
        return None
    if kind in HTTP_TYPES and scheme in ("http", "https"):
        return None
    if kind == "webhook":
        return "a webhook destination is an http(s) URL"
    if kind == "sendgrid":
        return "a sendgrid destination is an e-mail address"
    return _apprise_problem(value)


def _apprise_problem(url: str) -> str | None:
    try:
        import apprise
    except ImportError:  # pragma: no cover - a declared dependency
        return "the apprise package is not installed"
    # apprise logs every URL it cannot parse at ERROR level; here that is the answer, not an incident
    log = logging.getLogger("apprise")
    with _APPRISE_LOG_LOCK:  # driver threads check channels at once; the logger is process-wide
        was_disabled, log.disabled = log.disabled, True
        try:
            service = apprise.Apprise.instantiate(url, suppress_exceptions=True)
        finally:
            log.disabled = was_disabled
    if service is None:
        scheme = urlsplit(url).scheme
        what = f"{scheme!r}" if scheme else "a destination without a scheme"
        return f"no notification service understands {what} (an Apprise URL such as slack://, msteams://, mailto://)"
    return None


def _destination_key(kind: str, destination: str) -> str:
    """The de-duplication key of a destination, by what a secret reference resolves to (digested: a
    resolved secret is kept nowhere); a reference that does not resolve was reported by
    :func:`_destination_problem` already."""
    value = destination
    if is_reference(destination):
        try:
            value = resolve_secret(destination)
        except Exception:  # noqa: BLE001 - a vault that fails now: keyed as written (no merge, no loss)
            value = destination
    return hashlib.sha256(_same_destination(kind, value).encode("utf-8")).hexdigest()


def _same_destination(kind: str, destination: str) -> str:
    """The de-duplication form: e-mail addresses without ``mailto:`` and case."""
    if kind in EMAIL_TYPES and _EMAIL.match(destination.removeprefix("mailto:")):
        return destination.removeprefix("mailto:").lower()
    return destination


def resolve_channels(contract: Contract) -> tuple[list[Channel], list[Problem]]:
    """Every channel of the contract, and every problem that makes a channel unusable.

    ``notifications_enabled: false`` gives no channels at all."""
    quarantine = contract.quarantine
    if quarantine is None or not quarantine.notifications_enabled:
        return [], []
    problems: list[Problem] = []
    channels: dict[tuple[str, str], Channel] = {}
    contacts = contact_addresses(contract)
    for i, note in enumerate(quarantine.notifications):
        path = f"quarantine.notifications[{i}]"
        templates = entry_templates(note, contract.contract_dir, path, problems)
        destinations = note.destinations
        if note.type == "console":
            destinations = ["console"]
        elif not destinations and note.type in EMAIL_TYPES:
            destinations = contacts
        if not destinations:
            allowed = "target, targets, to, channel or url" + (
                " (or an info.contact e-mail address)" if note.type in EMAIL_TYPES else ""
            )
            problems.append(_problem(path, "the channel has no destination", allowed=allowed))
            continue
        events = [NOTIFICATION_EVENT_ALIASES.get(e, e) for e in note.on_events]
        subscription = Subscription(templates, dict(note.template_context), path)
        for destination in destinations:
            reason = None if note.type == "console" else _destination_problem(note.type, destination)
            if reason is not None:
                shown = display_destination(destination)
                problems.append(_problem(path, f"{note.type} channel {shown}: {reason}"))
                continue
            # keyed on what the reference resolves to: `env:HOOK` and `${HOOK}` are one destination
            key = (note.type, _destination_key(note.type, destination))
            channel = channels.setdefault(key, Channel(type=note.type, destination=destination))
            for event in events:
                channel.subscriptions[event] = subscription
    return list(channels.values()), problems


def check_channels(contract: Contract, *, file: str | None = None) -> list[Problem]:
    """The problems a strict contract (``strict_notifications``, the default) must not load with."""
    quarantine = contract.quarantine
    if quarantine is None or not quarantine.strict_notifications:
        return []
    _, problems = resolve_channels(contract)
    where = file or (str(contract.source_file) if contract.source_file else "<contract>")
    return [Problem(file=where, path=p.path, message=p.message, allowed=p.allowed) for p in problems]
