"""Anthropic Messages API adapter: httpx, server-sent events (docs/engine.md, "Backends").

* `request` – neutral messages and tools → the `/v1/messages` body (`build_body`).
* `translate` – the SSE events → the four neutral event kinds.
* `errors` – HTTP error answers, `error` events and their retryability → `BackendError`.
* `backend` – `AnthropicBackend`, an `agent.backends.http.HttpBackend` (the shared client, timeouts,
  retries).
"""

from agent.backends.anthropic.backend import AnthropicBackend
from agent.backends.anthropic.request import build_body, tool_use_id, wire_messages
from agent.backends.anthropic.translate import translate

__all__ = ["AnthropicBackend", "build_body", "tool_use_id", "translate", "wire_messages"]
