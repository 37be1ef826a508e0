"""Backends chosen by name from settings at call time, the Django way."""

from __future__ import annotations

import importlib
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agent.backends.base import Backend, BackendError

__all__ = ["Backend", "BackendError", "BACKENDS", "get_backend", "model_for"]

BACKENDS = {
    "demo": "agent.backends.demo.DemoBackend",
    "fake": "agent.backends.fake.FakeBackend",
    "openai": "agent.backends.openai.OpenAIBackend",
    "bedrock": "agent.backends.bedrock.BedrockBackend",
}


@cache
def _load(name: str) -> Backend:
    path = BACKENDS.get(name)
    if path is None:
        raise ImproperlyConfigured(f"AGENT_BACKEND must be one of {', '.join(sorted(BACKENDS))}; got {name!r}.")
    module_name, _, class_name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), class_name)()


def get_backend(name: str | None = None) -> Backend:
    """The configured backend (or a named one). Instances are shared: they hold connection pools."""
    return _load(name or settings.AGENT_BACKEND)


def model_for(backend: Backend) -> str:
    return settings.AGENT_MODEL or backend.default_model


def reset_backends() -> None:
    """Forget cached instances (tests that change settings)."""
    _load.cache_clear()
