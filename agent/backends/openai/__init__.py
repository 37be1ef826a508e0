"""OpenAI Chat Completions backend, also for OpenAI-compatible servers (docs/engine.md, "Backends").

The work is split in layers so each can be tested alone:

* `sse` – `iter_sse(chunks)`, a pure SSE reader over byte chunks, yielding `SSEEvent`s.
* `translate` – `translate(sse_events)`, a pure state machine from SSE events to the four neutral
  event kinds; `parse_stream(chunks)` chains the two.
* `wire` – neutral messages and tools to the request JSON.
* `errors` – error payloads, HTTP statuses and transport failures to `BackendError`; event deadlines.
* `backend` – `OpenAIBackend`: HTTP with one shared `httpx.Client`, timeouts, error mapping and retries.

The public names are re-exported here, so `agent.backends.openai.OpenAIBackend` (the `BACKENDS`
setting) and `from agent.backends.openai import ...` keep working.
"""

from agent.backends.openai.backend import OpenAIBackend
from agent.backends.openai.errors import payload_error, status_error
from agent.backends.openai.sse import SSEEvent, iter_sse
from agent.backends.openai.translate import parse_stream, translate, usage_from_wire
from agent.backends.openai.wire import to_wire_messages, to_wire_tools

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
