"""Backends chosen by name from settings at call time, the Django way.

The engine ships `fake`, `openai`, `openai-responses`, `bedrock` and `anthropic`. A project adds its own (or replaces one) with
`AGENT_BACKEND_CLASSES`, a dict of name to dotted path merged over these, e.g.
`{"demo": "blog.demo.DemoBackend"}`.
"""

from __future__ import annotations

from functools import cache

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from agent.backends.base import Backend, BackendError
from agent.conf import settings

__all__ = ["Backend", "BackendError", "BACKENDS", "backend_classes", "get_backend", "model_for"]

BACKENDS = {
    "fake": "agent.backends.fake.FakeBackend",
    "openai": "agent.backends.openai.OpenAIBackend",
    "openai-responses": "agent.backends.openai_responses.OpenAIResponsesBackend",
    "bedrock": "agent.backends.bedrock.BedrockBackend",
    "anthropic": "agent.backends.anthropic.AnthropicBackend",
}


def backend_classes() -> dict[str, str]:
    """Every backend's name and dotted path: the built-in ones with `AGENT_BACKEND_CLASSES` over them."""
    return {**BACKENDS, **getattr(settings, "AGENT_BACKEND_CLASSES", {})}


@cache
def _instance(path: str) -> Backend:
    return import_string(path)()


def get_backend(name: str | None = None) -> Backend:
    """The configured backend (or a named one). Instances are shared: they hold connection pools."""
    classes = backend_classes()
    name = name or getattr(settings, "AGENT_BACKEND", None)
    if not name:  # no default: a project that forgot it must not answer people with the fake's script
        raise ImproperlyConfigured(
            f"AGENT_BACKEND is not set: name the backend the engine calls, one of {', '.join(sorted(classes))}."
        )
    path = classes.get(name)
    if path is None:
        raise ImproperlyConfigured(f"AGENT_BACKEND must be one of {', '.join(sorted(classes))}; got {name!r}.")
    try:
        return _instance(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"The {name!r} backend ({path}) cannot be imported: {exc}") from exc


def model_for(backend: Backend) -> str:
    return settings.AGENT_MODEL or backend.default_model


def reset_backends() -> None:
    """Forget cached instances (tests that change settings)."""
    _instance.cache_clear()
