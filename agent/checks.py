"""`manage.py check` (and every start-up): one clear sentence per misconfiguration."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from agent.conf import settings


@checks.register()
def agent_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from agent.backends import get_backend, model_for
    from agent.budget import price_for, prices_valid

    try:
        backend = get_backend()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="agent.E001")]
    errors: list[checks.CheckMessage] = [checks.Error(s, id="agent.E002") for s in backend.check()]
    if settings.AGENT_MAX_TOOL_CYCLES < 1:
        errors.append(checks.Error("AGENT_MAX_TOOL_CYCLES must be at least 1.", id="agent.E003"))
    if settings.AGENT_MAX_TOKENS < 1:  # every call would ask for an answer of no tokens, which providers refuse
        errors.append(
            checks.Error("AGENT_MAX_TOKENS must be at least 1 (the longest answer of one model call).", id="agent.E011")
        )
    if settings.AGENT_APPROVAL_TTL_SECONDS < 1:  # each approval would expire as it is asked: none could be given
        errors.append(
            checks.Error(
                "AGENT_APPROVAL_TTL_SECONDS must be at least 1 (how long a call waits for a person's approval).",
                id="agent.E013",
            )
        )
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
    if not prices_valid(getattr(settings, "AGENT_PRICES", None) or {}):
        errors.append(
            checks.Error(
                'AGENT_PRICES must be a dict of model id to prices, e.g. {"my-model": {"input": 0.15, "output": 0.6}} '
                "(dollars per million tokens, none negative; `long`: the same for long prompts).",
                id="agent.E010",
            )
        )
    elif not price_for(model)[1]:
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
    errors += budget_fits_a_tool_turn(backend)
    errors += confirm_tools_known()
    errors += session_policy_loads()
    errors += media_root_set()
    errors += reasoning_parses()
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
            id="agent.W007",
        )
    ]


def budget_fits_a_tool_turn(backend) -> list[checks.CheckMessage]:
    """A real model's per-minute token budget too small for a turn that uses a tool in a chat as long
    as the chat may grow before it is summarised: each call counts its whole prompt, a tool turn makes
    two calls at least, so its second one would end the turn (and every try again) with budget_exceeded."""
    per_minute, context = settings.AGENT_BUDGET_TOKENS_PER_MINUTE, settings.AGENT_CONTEXT_MAX_TOKENS
    answer = settings.AGENT_MAX_TOKENS
    if backend.offline or not per_minute or not context or per_minute >= 2 * (context + answer):
        return []
    fits = max(0, (per_minute - answer) // 2)  # the first call settled, the second reserving its worst
    return [
        checks.Warning(
            f"AGENT_BUDGET_TOKENS_PER_MINUTE ({per_minute}) holds a turn that uses a tool only while the chat "
            f"is under about {fits} tokens, but chats are summarised only past AGENT_CONTEXT_MAX_TOKENS "
            f"({context}): in a longer chat such a turn ends with budget_exceeded, however often it is tried. "
            f"Raise the budget to at least {3 * (context + answer)} (room for three calls) or lower "
            "AGENT_CONTEXT_MAX_TOKENS.",
            id="agent.W008",
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


def reasoning_parses() -> list[checks.CheckMessage]:
    """AGENT_REASONING reads (config/settings.py checks it only when it comes from the environment)."""
    from agent.backends.reasoning import configured

    try:
        configured()
    except ValueError as exc:
        return [checks.Error(str(exc), id="agent.E009")]
    return []


def media_root_set() -> list[checks.CheckMessage]:
    """Attachments go to the default storage under `agent/<session id>/`; on the file system with
    Django's MEDIA_ROOT default ("") that is the working directory, where a copied engine sits."""
    from django.core.files.storage import FileSystemStorage, default_storage

    if not isinstance(default_storage, FileSystemStorage) or default_storage.location != os.path.abspath(""):
        return []
    return [
        checks.Warning(
            "MEDIA_ROOT is not set: attachments would be stored in the working directory, under agent/. "
            "Set MEDIA_ROOT to a directory of their own, not served at MEDIA_URL.",
            id="agent.W005",
        )
    ]


def session_policy_loads() -> list[checks.CheckMessage]:
    """AGENT_SESSION_POLICY names a SessionPolicy: a typo would otherwise pass here and fail every
    request of the API with a 500."""
    from agent.policy import SessionPolicy

    path = settings.AGENT_SESSION_POLICY or "agent.policy.SessionPolicy"
    try:
        policy = import_string(path)
    except ImportError as exc:
        problem = f"cannot be imported ({exc})"
    else:
        if isinstance(policy, type) and issubclass(policy, SessionPolicy):
            return []
        problem = "is not a subclass of agent.policy.SessionPolicy"
    return [checks.Error(f"AGENT_SESSION_POLICY names {path!r}, which {problem}.", id="agent.E008")]


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

    if settings.AGENT_EVENTS_MAX_LEN < 1:  # Redis would keep no entry: a follower could miss what it had not read
        return [
            checks.Error(
                "AGENT_EVENTS_MAX_LEN must be at least 1 (the events of a turn kept on Redis).", id="agent.E012"
            )
        ]
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
