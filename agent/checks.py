"""`manage.py check` (and every start-up): one clear sentence per misconfiguration."""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured


@checks.register()
def agent_settings(app_configs=None, **kwargs):
    from agent.backends import get_backend, model_for
    from agent.budget import price_for

    try:
        backend = get_backend()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="agent.E001")]
    errors: list[checks.CheckMessage] = [checks.Error(s, id="agent.E002") for s in backend.check()]
    if settings.AGENT_MAX_TOOL_CYCLES < 1:
        errors.append(checks.Error("AGENT_MAX_TOOL_CYCLES must be at least 1.", id="agent.E003"))
    if settings.AGENT_TURN_EXECUTOR not in ("auto", "thread", "inline"):
        errors.append(checks.Error("AGENT_TURN_EXECUTOR must be auto, thread or inline.", id="agent.E004"))
    poll, lease = settings.AGENT_STOP_POLL_SECONDS, settings.AGENT_TURN_LEASE_SECONDS
    if poll <= 0:  # the watcher would query the database without pause while a turn runs
        errors.append(checks.Error("AGENT_STOP_POLL_SECONDS must be more than 0.", id="agent.E006"))
    elif lease < 2 * poll:  # leases are renewed at a poll: one poll late, a live turn's could run out
        errors.append(
            checks.Error(
                "AGENT_TURN_LEASE_SECONDS must be at least twice AGENT_STOP_POLL_SECONDS, or a running "
                "turn's lease could run out and its chat be taken from it.",
                id="agent.E007",
            )
        )
    model = model_for(backend)
    if not price_for(model)[1]:
        errors.append(
            checks.Warning(
                f"No price is known for model {model!r}; it is budgeted as the most expensive known model. "
                "Add it with AGENT_PRICES.",
                id="agent.W001",
            )
        )
    errors += [checks.Warning(sentence, id="agent.W003") for sentence in backend.cautions(model)]
    errors += default_model_elsewhere(backend)
    errors += provider_settings_unused(backend)
    errors += confirm_tools_known()
    return errors


def default_model_elsewhere(backend) -> list[checks.CheckMessage]:
    """AGENT_MODEL unset for an HTTP backend pointed at another server than its provider's (Ollama, vLLM,
    OpenRouter): the backend's default model is asked of a server that likely serves no such model."""
    from urllib.parse import urlsplit

    keyed_host, base_url = getattr(backend, "keyed_host", ""), getattr(backend, "base_url", "")
    host = urlsplit(base_url).netloc
    if settings.AGENT_MODEL or not keyed_host or not host or host.endswith(keyed_host):
        return []
    return [
        checks.Warning(
            f"AGENT_MODEL is not set, so the {backend.name} backend asks {host} for its default model "
            f"{backend.default_model!r}, which a server other than {keyed_host} may not serve: set AGENT_MODEL "
            "to one of its models.",
            id="agent.W005",
        )
    ]


def provider_settings_unused(backend) -> list[checks.CheckMessage]:
    """A real model's settings given to a backend that answers without one: AGENT_BACKEND was forgotten."""
    if not backend.offline:
        return []
    given = [name for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_MODEL") if getattr(settings, name, "")]
    if not given:
        return []
    return [
        checks.Warning(
            f"AGENT_BACKEND is {backend.name!r}, which answers without any model, so {' and '.join(given)} "
            f"{'is' if len(given) == 1 else 'are'} not used: set AGENT_BACKEND to openai, openai-responses, "
            "anthropic or bedrock for a real model.",
            id="agent.W006",
        )
    ]


def confirm_tools_known() -> list[checks.CheckMessage]:
    """Each name in AGENT_CONFIRM_TOOLS is a tool's: a typo (`publish_posts`) would let the calls it was
    meant to hold run at once. (A warning: a domain's `confirm_as` may name a tool it never registers.)"""
    from agent.tools import REGISTRY

    return [
        checks.Warning(
            f"AGENT_CONFIRM_TOOLS names {name!r}, which is no tool's name: the calls it was meant to hold for "
            f"a person's approval would run at once. Tools: {', '.join(sorted(REGISTRY))}.",
            id="agent.W004",
        )
        for name in settings.AGENT_CONFIRM_TOOLS
        if name not in REGISTRY
    ]


@checks.register()
def agent_events(app_configs=None, **kwargs):
    """The event bus loads, and a Redis it names answers (a warning: streams fall back without it)."""
    from agent.events import backend_path, get_bus

    try:
        bus = get_bus()
    except Exception:  # an unknown class or a URL redis-py cannot read; the URL may hold a password
        return [
            checks.Error(
                f"The event bus {backend_path()} cannot start with AGENT_EVENTS_URL as given "
                "(expected redis://host:port/db).",
                id="agent.E005",
            )
        ]
    return [checks.Warning(sentence, id="agent.W002") for sentence in bus.check()]
