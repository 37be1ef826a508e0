"""OpenAI Responses API adapter (`AGENT_BACKEND=openai-responses`; docs/engine.md, "Backends").

* `wire` – neutral messages and tools → the request's `input` items and function `tools`.
* `translate` – the streamed events (or a whole JSON answer) → the four neutral event kinds.
* `backend` – `OpenAIResponsesBackend`, the `openai` backend with its own request and answer events
  (its settings, headers, the shared client, timeouts, retries and error reading are that one's).
"""

from agent.backends.openai_responses.backend import OpenAIResponsesBackend
from agent.backends.openai_responses.translate import parse_stream, translate, usage_from_response
from agent.backends.openai_responses.wire import to_function_tools, to_input_items

__all__ = [
    "OpenAIResponsesBackend",
    "parse_stream",
    "to_function_tools",
    "to_input_items",
    "translate",
    "usage_from_response",
]
