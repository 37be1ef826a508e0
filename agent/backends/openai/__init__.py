"""OpenAI Chat Completions backend (CONTRACT §3); the code is moving into modules of this package."""

from agent.backends.openai.translate import (
    OpenAIBackend,
    SSEEvent,
    iter_sse,
    parse_stream,
    payload_error,
    status_error,
    to_wire_messages,
    to_wire_tools,
    translate,
    usage_from_wire,
)

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
