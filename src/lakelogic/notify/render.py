"""§16 message texts: the template context of a run and Jinja2 rendering (sandboxed: templates come from
contracts and hierarchy files, and must not reach Python internals)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from lakelogic.contract.models import Contract
from lakelogic.report import RunReport

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

    from lakelogic.notify.channels import Templates

DEFAULT_SUBJECT = "[LakeLogic] {{ contract }}: {{ event }} ({{ status }})"
DEFAULT_MESSAGE = """\
{{ title or contract }} ({{ layer or "no layer" }}): {{ event }}, run {{ status }}
run {{ run_id }}{% if pipeline_run_id %} in pipeline run {{ pipeline_run_id }}{% endif %} at {{ timestamp }}
rows: {{ counts.source }} read, {{ counts.good }} good, {{ counts.quarantined }} quarantined \
({{ "%.2f" | format(quarantine_ratio * 100) }}%), {{ counts.filtered }} filtered
{%- if error %}
error ({{ error.type }}{% if error.step %} in {{ error.step }}{% endif %}): {{ error.message }}
{%- endif %}
{%- for rule in failed_rules[:10] %}
{% if loop.first %}failing rules:
{% endif %}  {{ rule.name }} [{{ rule.category }}, {{ rule.severity }}]: {{ rule.count }} row(s)
{%- endfor %}
{%- for rule in dataset_rules if rule.passed == false %}
{% if loop.first %}failed dataset rules:
{% endif %}  {{ rule.name }}: observed {{ rule.observed }}, expected {{ rule.expected }}
{%- endfor %}
{%- for slo in slos if slo.passed == false %}
{% if loop.first %}service levels missed:
{% endif %}  {{ slo.objective }}: observed {{ slo.observed }}, threshold {{ slo.threshold }}
{%- endfor %}
"""


@cache
def environment() -> SandboxedEnvironment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    # StrictUndefined: a misspelt variable is a delivery error naming it, not a silently empty text
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


def template_problem(text: str) -> str | None:
    """The syntax error of a template, or None."""
    from jinja2 import TemplateSyntaxError

    try:
        environment().from_string(text)
    except TemplateSyntaxError as exc:
        return f"template syntax error on line {exc.lineno}: {exc.message}"
    return None


def run_context(contract: Contract, report: RunReport) -> dict[str, Any]:
    """The variables every template sees (plus ``event`` and ``template_context``, added per message)."""
    dumped = report.model_dump(mode="json")
    # info rules are counted and logged only (SEMANTICS §10.2); errors and warnings are listed
    failing = sorted(
        (r for r in report.rules if r.failed > 0 and r.severity != "info"), key=lambda r: -r.failed
    )
    failed_rules = [
        {"name": r.name, "category": r.category, "severity": r.severity, "count": r.failed} for r in failing
    ]
    return {
        "contract": report.contract,
        "title": report.title or contract.info.title,
        "table": report.table_name or contract.info.table_name,
        "domain": report.domain,
        "system": report.system,
        "layer": report.layer,
        "owner": contract.info.owner,
        "status": str(report.status),
        "run_id": report.run_id,
        "pipeline_run_id": report.pipeline_run_id,
        "counts": dumped["counts"],
        "quarantine_ratio": report.counts.quarantine_ratio,
        "failed_rules": failed_rules,
        "dataset_rules": dumped["dataset_rules"],
        "slos": dumped["service_levels"],
        "error": (
            {k: v for k, v in dumped["error"].items() if k != "traceback"} if dumped.get("error") else None
        ),
        "timestamp": (report.finished_at or datetime.now(UTC)).isoformat(),
    }


def render_message(templates: Templates, context: dict[str, Any]) -> tuple[str, str, str | None]:
    """(subject, message, body) of one delivery; ``body`` only when the channel has a body template."""
    env = environment()
    subject = env.from_string(templates.subject or DEFAULT_SUBJECT).render(context).strip()
    message = env.from_string(templates.message or DEFAULT_MESSAGE).render(context).strip()
    body = env.from_string(templates.body).render(context) if templates.body else None
    return subject, message, body
