"""OpenAI Responses API adapter (`AGENT_BACKEND=openai-responses`; docs/engine.md, "Backends").

* `wire` – neutral messages and tools → the request's `input` items and function `tools`.
* `translate` – the streamed events (or a whole JSON answer) → the four neutral event kinds.
* `backend` – `OpenAIResponsesBackend`, an `agent.backends.http.HttpBackend` (the shared client,
  timeouts, retries); HTTP errors read as the `openai` backend reads them (`openai.errors`).
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
