"""OpenAI Chat Completions backend, also for OpenAI-compatible servers (docs/engine.md, "Backends").

The work is split in layers so each can be tested alone:

* `translate` – `translate(sse_events)`, a pure state machine from SSE events to the four neutral
  event kinds; `parse_stream(chunks)` reads the bytes with `agent.backends.sse.iter_sse` first.
* `wire` – neutral messages and tools to the request JSON.
* `errors` – error payloads and HTTP statuses to `BackendError`.
* `backend` – `OpenAIBackend`, an `agent.backends.http.HttpBackend` (one shared `httpx.Client`,
  timeouts, transport failures, retries); its SSE is read by `agent.backends.sse.iter_sse`.

The public names are re-exported here, so `agent.backends.openai.OpenAIBackend` (the `BACKENDS`
setting) and `from agent.backends.openai import ...` keep working.
"""

from agent.backends.openai.backend import OpenAIBackend
from agent.backends.openai.errors import payload_error, status_error
from agent.backends.openai.translate import parse_stream, translate, usage_from_wire
from agent.backends.openai.wire import to_wire_messages, to_wire_tools
from agent.backends.sse import SSEEvent, iter_sse

__all__ = [
    "OpenAIBackend",
    "SSEEvent",
    "iter_sse",
    "parse_stream",
    "payload_error",
    "status_error",
    "to_wire_messages",
    "to_wire_tools",
    "translate",
    "usage_from_wire",
]
