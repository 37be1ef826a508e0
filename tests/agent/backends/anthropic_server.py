"""A loopback Anthropic Messages API (`POST /v1/messages`, `stream: true`) that answers from a script.

The HTTP side is `openai_server.ScriptedOpenAIServer` (a real `ThreadingHTTPServer`: chunked bodies,
delays, stalls, cut connections, every request recorded): the wire differs only in the bodies, which
here are named SSE events, `event: <type>` then `data: <json with the same "type">`.

In tests::

    server = ScriptedAnthropicServer().start()
    server.script(Reply(body=events(message_start(), text_block(0, "Hi"), message_end("end_turn"))))
    backend = AnthropicBackend(base_url=server.url, api_key="k")

By hand (a short text answer to every request, or `--script` as for `openai_server`)::

    python -m tests.agent.backends.anthropic_server --port 8091
    ANTHROPIC_BASE_URL=http://127.0.0.1:8091 ANTHROPIC_API_KEY=x AGENT_BACKEND=anthropic make run
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer, _load_script

__all__ = [
    "Reply",
    "ScriptedAnthropicServer",
    "block",
    "error_body",
    "events",
    "message_end",
    "message_start",
    "text_block",
]


class ScriptedAnthropicServer(ScriptedOpenAIServer):
    """The scripted loopback server; its `url` is the base for `ANTHROPIC_BASE_URL`."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def events(*payloads: dict[str, Any]) -> list[str]:
    """Each payload as one named SSE event (its name is its `type`), written separately."""
    return [f"event: {p['type']}\ndata: {json.dumps(p)}\n\n" for p in payloads]


def message_start(input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_01Loopback",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return {"type": "message_start", "message": message}


def block(index: int, start: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    """One content block: its start, its deltas, its stop."""
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *[{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas],
        {"type": "content_block_stop", "index": index},
    ]


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return block(index, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces])


def message_end(stop_reason: str | None, output_tokens: int = 5) -> list[dict[str, Any]]:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}}
    return [{**delta, "usage": {"output_tokens": output_tokens}}, {"type": "message_stop"}]


def error_body(kind: str, message: str) -> str:
    """An error answer's JSON body (as the API sends with a 4xx or 5xx status)."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_loopback"})


def _default_reply() -> Reply:
    payloads = [message_start(), *text_block(0, "Hello from the ", "loopback Anthropic API."), *message_end("end_turn")]
    return Reply(body=events(*payloads), delay=0.05)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a scripted Anthropic Messages stream on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--script", help="JSON file: one reply object or a list of them (see openai_server)")
    args = parser.parse_args(argv)
    replies = _load_script(args.script) if args.script else [_default_reply()]
    server = ScriptedAnthropicServer(replies, port=args.port, repeat_last=True).start()
    print(f"Serving scripted replies at {server.url}/v1/messages (Ctrl-C to stop)", flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
