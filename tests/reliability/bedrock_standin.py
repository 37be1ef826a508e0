"""The Bedrock side of the fault scripts: `BedrockStandIn`, the suite's Bedrock ConverseStream loopback
server (`tests/agent/backends/bedrock_server.py`) with the same fault vocabulary as the OpenAI-compatible
`ProviderStandIn` of `conftest.py`, each fault in Bedrock's own wire terms (binary event-stream frames,
`x-amzn-ErrorType` errors, exception frames).

The server under test reaches it through `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, with dummy credentials.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import threading
from typing import Any

from tests.agent.backends.bedrock_server import BedrockStubServer, _Handler, event_frame
from tests.servers import LoopbackStandIn

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
USAGE = {"metadata": {"usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17}, "metrics": {"latencyMs": 1}}}


class _FaultHandler(_Handler):
    """Marks each request finished once its answer is written, and may reset before the first byte.
    Every answer closes its connection (as the OpenAI-compatible stand-in's do): a kept-alive connection
    would outlive `refusing()` and be served anyway."""

    def end_headers(self) -> None:
        self.send_header("Connection", "close")  # (sets close_connection too)
        super().end_headers()

    def _stream(self, response: dict[str, Any]) -> None:
        try:
            if response.get("reset"):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()  # RST, no status line
                return
            super()._stream(response)
        finally:
            response["_finished"].set()

    def _error(self, response: dict[str, Any]) -> None:
        try:
            super()._error(response)
        finally:
            response["_finished"].set()

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()


class _Stub(BedrockStubServer):
    """Each request is answered by the next scripted response, once (the suite's stub repeats the last);
    past the script, a ValidationException, as the OpenAI-compatible stand-in answers a 418. Each
    request's record carries `finished`, set once its answer is written."""

    def record(self, path: str, model: str, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
        finished = threading.Event()
        body = json.loads(raw or b"{}")
        with self._lock:
            self.requests.append({"path": path, "model": model, "headers": headers, "body": body, "finished": finished})
            response = self.responses[self._served] if self._served < len(self.responses) else NO_SCRIPT
            self._served += 1
        return {**response, "_finished": finished}


NO_SCRIPT = {"status": 400, "error_type": "ValidationException", "message": "no scripted response left"}


class BedrockStandIn(LoopbackStandIn):
    """Bedrock Runtime on a fixed loopback port; the fault methods return responses for `script`."""

    name = "bedrock"
    # What the operator's log says for each fault (any of these).
    LOG = {
        "refused": ("EndpointConnectionError",),
        "reset": ("ConnectionClosedError",),
        # boto3 has one read timeout per client, max(first-event, between-events): a silent socket is
        # cut by it (urllib3's ReadTimeoutError), not by the adapter's own per-event check.
        "timeout": ("ReadTimeoutError",),
        "corrupt": ("ChecksumMismatch",),
    }

    def _new(self) -> _Stub:
        server = _Stub(port=self.port)
        server._httpd.RequestHandlerClass = _FaultHandler
        return server.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def script(self, *responses: dict[str, Any]) -> None:
        self.server.add(*responses)

    def reset(self) -> None:
        with self.server._lock:
            self.server.responses.clear()
            self.server.requests.clear()
            self.server._served = 0

    def finished(self, index: int) -> bool:
        return self.requests[index]["finished"].is_set()

    def tool_result_sent(self, index: int, call_id: str) -> bool:
        """Whether request `index` carried a `toolResult` answering `call_id` (in a user message)."""
        return any(
            block.get("toolResult", {}).get("toolUseId") == call_id
            for message in self.requests[index]["body"]["messages"]
            if message["role"] == "user"
            for block in message["content"]
        )

    # --- the faults, in Bedrock's wire terms -------------------------------------------------

    def text(self, *texts: str, delay: float = 0.0) -> dict[str, Any]:
        """A streamed text answer, one `contentBlockDelta` per text, each `delay` seconds apart."""
        events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        for index, text in enumerate(texts):
            if delay and index:
                events.append({"sleep": delay})
            events.append(_text_delta(text))
        return {"events": [*events, *_end("end_turn")]}

    def tools(self, *calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
        """A `toolUse` answer: (id, name, input as a dict or the raw string the deltas carry)."""
        events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        if text:
            events += [_text_delta(text), {"contentBlockStop": {"contentBlockIndex": 0}}]
        for index, (call_id, name, args) in enumerate(calls, start=1 if text else 0):
            raw = args if isinstance(args, str) else json.dumps(args)
            events += [
                {
                    "contentBlockStart": {
                        "start": {"toolUse": {"toolUseId": call_id, "name": name}},
                        "contentBlockIndex": index,
                    }
                },
                {"contentBlockDelta": {"delta": {"toolUse": {"input": raw}}, "contentBlockIndex": index}},
                {"contentBlockStop": {"contentBlockIndex": index}},
            ]
        return {"events": [*events, {"messageStop": {"stopReason": "tool_use"}}, USAGE]}

    def throttled(
        self, retry_after: str, message: str = "Too many requests, please wait before trying again."
    ) -> dict[str, Any]:
        return {
            "status": 429,
            "error_type": "ThrottlingException",
            "message": message,
            "headers": {"Retry-After": retry_after},
        }

    def server_error(self, message: str) -> dict[str, Any]:
        return {"status": 500, "error_type": "InternalServerException", "message": message}

    def reset_first(self) -> dict[str, Any]:
        return {"reset": True}

    def cut_after(self, *texts: str) -> dict[str, Any]:
        return {"events": [{"messageStart": {"role": "assistant"}}, *map(_text_delta, texts), {"cut": True}]}

    def stall_first(self, seconds: float) -> dict[str, Any]:
        """`messageStart` (no content yet), then nothing for `seconds`."""
        return {
            "events": [
                {"messageStart": {"role": "assistant"}},
                {"sleep": seconds},
                _text_delta("late"),
                *_end("end_turn"),
            ]
        }

    def stall_after(self, text: str, seconds: float) -> dict[str, Any]:
        return {
            "events": [
                {"messageStart": {"role": "assistant"}},
                _text_delta(text),
                {"sleep": seconds},
                *_end("end_turn"),
            ]
        }

    def corrupt_after(self, text: str, garbage: str) -> dict[str, Any]:
        """A good frame, then a frame carrying `garbage` as text whose message CRC is wrong."""
        frame = bytearray(event_frame("contentBlockDelta", {"delta": {"text": garbage}, "contentBlockIndex": 0}))
        frame[-1] ^= 0xFF
        bad = {"raw_b64": base64.b64encode(bytes(frame)).decode()}
        return {"events": [{"messageStart": {"role": "assistant"}}, _text_delta(text), bad, *_end("end_turn")]}


def _text_delta(text: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": 0}}


def _end(stop_reason: str) -> list[dict[str, Any]]:
    return [{"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": stop_reason}}, USAGE]
