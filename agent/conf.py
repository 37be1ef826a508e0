"""The engine's settings with their defaults (docs/engine.md, 'Settings'): a project names only what
it changes. `from agent.conf import settings` reads like Django's `settings`, at call time (so
`override_settings` applies), and falls back to `DEFAULTS` for the engine's own names."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings

DEFAULTS: dict[str, Any] = {
    "AGENT_MODEL": "",  # the backend's `default_model`
    "AGENT_SESSION_POLICY": "agent.policy.SessionPolicy",
    "AGENT_CONFIRM_TOOLS": [],
    "AGENT_FAKE_SCRIPT": "",
    "AGENT_MAX_TOOL_CYCLES": 8,
    "AGENT_MAX_TOKENS": 4096,
    "AGENT_BUDGET_TOKENS_PER_MINUTE": 20000,
    "AGENT_BUDGET_TOKENS_PER_HOUR": 200000,
    "AGENT_BUDGET_USD_PER_MONTH": 5.0,
    "AGENT_BUDGET_GLOBAL_USD_PER_MONTH": 100.0,
    "AGENT_MESSAGES_PER_MINUTE": 20,
    "AGENT_TURN_EXECUTOR": "auto",
    "AGENT_TURN_LEASE_SECONDS": 120,
    "AGENT_STOP_POLL_SECONDS": 1.0,
    "AGENT_APPROVAL_TTL_SECONDS": 900,
    "AGENT_EVENTS_MAX_LEN": 50_000,
    "AGENT_CONTEXT_MAX_TOKENS": 60000,
    "AGENT_CONTEXT_KEEP_MESSAGES": 20,
    "AGENT_MODEL_IMAGES": True,
    "AGENT_MAX_UPLOAD_MB": 10.0,
    "AGENT_MAX_UPLOAD_MB_PER_MESSAGE": 20.0,
    "AGENT_MAX_UPLOAD_FILES": 8,
    "AGENT_MAX_IMAGE_PIXELS": 25_000_000,
    "AGENT_MAX_IMAGE_FRAMES": 1000,
}


class EngineSettings:
    """Django's settings, with `DEFAULTS` for the engine's names a project leaves unset."""

    def __getattr__(self, name: str) -> Any:
        if name in DEFAULTS:
            return getattr(django_settings, name, DEFAULTS[name])
        return getattr(django_settings, name)


settings = EngineSettings()
