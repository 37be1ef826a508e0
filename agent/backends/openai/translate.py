"""OpenAI Chat Completions backend, also for OpenAI-compatible servers (CONTRACT §3).

The work is split in three layers so each can be tested alone:

* `iter_sse(chunks)` – a pure SSE reader over an iterator of byte chunks (any split, LF or CRLF,
  comments, multi-line `data:`), yielding `SSEEvent`s.
* `translate(sse_events)` – a pure state machine from SSE events to the four neutral event kinds,
  absorbing the quirks of real servers (Ollama, vLLM, Groq, OpenRouter, DeepSeek, Perplexity, xAI, Azure).
  `parse_stream(chunks)` chains the two.
* `OpenAIBackend` – HTTP with one shared `httpx.Client`, timeouts, error mapping and retries.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from agent.backends.base import Backend, Event, setting, zero_usage
from agent.backends.retry import stream_with_retries
from agent.exceptions import BackendError

__all__ = ["OpenAIBackend", "SSEEvent", "iter_sse", "parse_stream", "translate", "to_wire_messages", "to_wire_tools"]

logger = logging.getLogger("agent.backends")

STOP_REASON_MAP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}
RETRYABLE_MARKERS = ("server_error", "overloaded", "rate_limit", "internal_error", "service_unavailable")
CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context window")
MAX_MESSAGE_CHARS = 600


# --------------------------------------------------------------------------------------------
# SSE reading (pure)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched SSE event (`event` defaults to "message"), or a comment line (`comment=True`)."""

    event: str
    data: str
    comment: bool = False


class _EventBuilder:
    """Collects the field lines of one SSE event until a blank line dispatches it."""

    def __init__(self) -> None:
        self.event = ""
        self.data: list[str] = []

    def line(self, raw: bytes) -> SSEEvent | None:
        text = raw.decode("utf-8", errors="replace")
        if not text:
            return self.dispatch()
        if text.startswith(":"):
            return SSEEvent("", text[1:].strip(), comment=True)
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        return None  # `id:`, `retry:` and unknown fields are ignored

    def dispatch(self) -> SSEEvent | None:
        event, data = self.event or "message", self.data
        self.event, self.data = "", []
        return SSEEvent(event, "\n".join(data)) if data else None


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Split a byte stream into SSE events; the result does not depend on how the bytes were chunked.

    Lines end in LF or CRLF. Lines are split on bytes before decoding, so a UTF-8 character cut
    between two chunks is decoded whole. An event left unterminated at the end of the body is still
    dispatched (servers that end without the final blank line).
    """
    builder = _EventBuilder()
    partial: list[bytes] = []
    for chunk in chunks:
        if b"\n" not in chunk:
            partial.append(chunk)
            continue
        first, *rest = chunk.split(b"\n")
        lines, tail = [b"".join([*partial, first]), *rest[:-1]], rest[-1]
        partial = [tail] if tail else []
        for line in lines:
            if (item := builder.line(line.removesuffix(b"\r"))) is not None:
                yield item
    if partial and (item := builder.line(b"".join(partial).removesuffix(b"\r"))) is not None:
        yield item
    if (item := builder.dispatch()) is not None:
        yield item


# --------------------------------------------------------------------------------------------
# SSE events -> neutral events (pure)
# --------------------------------------------------------------------------------------------


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _count(value: Any) -> int:
    number = _as_int(value)
    return number if number is not None and number > 0 else 0


def _call_id(value: Any) -> str | None:
    """Tool-call ids as strings (some servers send integers); empty means absent."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value)
    return text or None


@dataclass
class _Call:
    id: str | None
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def has_complete_arguments(self) -> bool:
        text = "".join(self.arguments).strip()
        if not text:
            return False
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return False
        return True


class _ToolCalls:
    """Accumulates tool-call deltas, keyed by `index`, else by id, else onto the latest call."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}

    def add(self, delta: Any) -> None:
        if not isinstance(delta, dict):
            return
        call = self._target(_as_int(delta.get("index")), _call_id(delta.get("id")))
        function = delta.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name  # some servers repeat the full name in every chunk: never concatenate
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):
            call.arguments.append(json.dumps(arguments))

    def _target(self, index: int | None, call_id: str | None) -> _Call:
        if index is not None:
            return self._at_index(index, call_id)
        if call_id is not None:
            return self._by_id.get(call_id) or self._new(call_id)
        return self.calls[-1] if self.calls else self._new(None)

    def _at_index(self, index: int, call_id: str | None) -> _Call:
        call = self._by_index.get(index)
        # Ollama reuses index 0 for every call: a new id over finished arguments starts a new call.
        starts_new = bool(call and call_id and call.id and call_id != call.id and call.has_complete_arguments())
        if call is None or starts_new:
            call = self._new(call_id)
            self._by_index[index] = call
        elif call.id is None and call_id:
            call.id = call_id
            self._by_id[call_id] = call
        return call

    def _new(self, call_id: str | None) -> _Call:
        call = _Call(call_id)
        self.calls.append(call)
        if call_id:
            self._by_id[call_id] = call
        return call


def _parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"the tool arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    except (ValueError, RecursionError) as exc:
        return {}, f"the tool arguments could not be parsed ({type(exc).__name__})"
    if not isinstance(value, dict):
        return {}, f"the tool arguments must be a JSON object, not {type(value).__name__}"
    return value, None


def _tool_event(call: _Call, fallback_id: str) -> Event:
    parsed, error = _parse_arguments("".join(call.arguments))
    event: Event = {"kind": "tool_use", "id": call.id or fallback_id, "name": call.name, "input": parsed}
    if not call.name:
        error = error or "the tool call has no function name"
    if error:
        event["input_error"] = error
    return event


def usage_from_wire(raw: Any) -> dict[str, int]:
    """OpenAI usage -> the four neutral keys; `prompt_tokens` includes cached tokens, so subtract them."""
    usage = zero_usage()
    if not isinstance(raw, dict):
        return usage
    details = raw.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or _count(raw.get("prompt_cache_hit_tokens"))  # DeepSeek's name for it
    usage["input_tokens"] = max(_count(raw.get("prompt_tokens")) - cached, 0)
    usage["output_tokens"] = _count(raw.get("completion_tokens"))
    usage["cache_read_tokens"] = cached
    return usage


class _Turn:
    """State of one streamed response."""

    def __init__(self, secret: str = "") -> None:
        self.secret = secret
        self.tools = _ToolCalls()
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.response_id = ""
        self.done_marker = False

    def apply(self, chunk: Any) -> Iterator[Event]:
        if not isinstance(chunk, dict):
            return
        self._check_error(chunk.get("error"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]  # the last one wins (Perplexity repeats a cumulative usage)
        if not self.response_id and isinstance(chunk.get("id"), str | int):
            self.response_id = str(chunk["id"])
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and _as_int(choice.get("index")) in (0, None):
                yield from self._delta(choice.get("delta"))
                if choice.get("finish_reason"):
                    self.finish_reason = str(choice["finish_reason"])

    def _check_error(self, error: Any) -> None:
        if not error:
            return
        if self.finish_reason is None:
            raise payload_error(error, self.secret)
        # The answer is already complete (OpenRouter repeats "length" as an error after finishing).
        logger.warning(
            "openai: error after finish_reason %r ignored: %s",
            self.finish_reason,
            _scrub(str(error), self.secret)[:MAX_MESSAGE_CHARS],
        )

    def _delta(self, delta: Any) -> Iterator[Event]:
        if not isinstance(delta, dict):
            return
        for key in ("reasoning_content", "reasoning"):  # DeepSeek/vLLM, then OpenRouter/Groq/Ollama
            if isinstance(delta.get(key), str) and delta[key]:
                yield {"kind": "reasoning", "text": delta[key]}
                break
        for key in ("content", "refusal"):  # a refusal is shown to the user as text
            if isinstance(delta.get(key), str) and delta[key]:
                yield {"kind": "text", "text": delta[key]}
        if isinstance(delta.get("tool_calls"), list):
            for tool_delta in delta["tool_calls"]:
                self.tools.add(tool_delta)

    def finish(self) -> Iterator[Event]:
        if self.finish_reason is None and not self.done_marker:
            raise BackendError("The model's stream ended before it finished its answer.", retryable=True)
        prefix = f"call_{self.response_id or 'openai'}"
        for position, call in enumerate(self.tools.calls):
            yield _tool_event(call, f"{prefix}_{position}")
        if self.tools.calls:
            stop_reason = "tool_use"
        else:
            stop_reason = STOP_REASON_MAP.get(self.finish_reason or "stop", "end_turn")
        yield {"kind": "done", "stop_reason": stop_reason, "usage": usage_from_wire(self.usage)}


def _load_chunk(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise BackendError(f"The model server sent a malformed stream chunk: {data[:200]!r}", retryable=True) from None


def _error_payload(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return {"message": data or "no message"}


def translate(events: Iterable[SSEEvent], *, secret: str = "") -> Iterator[Event]:
    """SSE events -> `text`/`reasoning` as they arrive, then each `tool_use`, then one `done`.

    `[DONE]` or a finish_reason ends the answer normally; usage may come in a later chunk, so reading
    continues to `[DONE]` or the end of the body. A body that ends with neither is a retryable error.
    """
    turn = _Turn(secret)
    for item in events:
        if item.comment:
            continue
        data = item.data.strip()
        if item.event == "error":
            raise payload_error(_error_payload(data), secret)
        if not data:
            continue
        if data == "[DONE]":
            turn.done_marker = True
            break
        yield from turn.apply(_load_chunk(data))
    yield from turn.finish()


def parse_stream(chunks: Iterable[bytes], *, secret: str = "") -> Iterator[Event]:
    """Raw response body bytes (any chunking) -> neutral events."""
    return translate(iter_sse(chunks), secret=secret)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret else text


def _is_retryable(info: dict[str, Any]) -> bool:
    numbers = [_as_int(info.get(key)) for key in ("code", "status", "status_code")]
    if any(n is not None and (n in (408, 409, 429) or n >= 500) for n in numbers):
        return True
    words = " ".join(str(info.get(key) or "") for key in ("code", "type", "status")).lower()
    return any(marker in words for marker in RETRYABLE_MARKERS)


def _is_context_overflow(info: dict[str, Any]) -> bool:
    words = " ".join(str(info.get(key) or "") for key in ("code", "type", "message")).lower()
    return any(marker in words for marker in CONTEXT_MARKERS)


def payload_error(error: Any, secret: str = "", status: int | None = None) -> BackendError:
    """An `error` object (mid-stream chunk, `event: error` data, or an HTTP error body) -> BackendError."""
    if isinstance(error, dict) and "error" in error:
        error = error["error"]
    info: dict[str, Any] = error if isinstance(error, dict) else {"message": str(error)}
    label = info.get("code") or info.get("type") or ""
    where = f"HTTP {status}" if status is not None else "error in stream"
    message = (
        f"Model server {where}"
        + (f" ({label})" if label else "")
        + f": {info.get('message') or info.get('detail') or 'no message'}"
    )
    message = _scrub(message, secret)[:MAX_MESSAGE_CHARS]
    if _is_context_overflow(info):
        return BackendError(message, retryable=False, context_too_long=True)
    return BackendError(message, retryable=_is_retryable(info))


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or HTTP date)."""
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, IndexError):
        return None


def status_error(response: httpx.Response, secret: str = "") -> BackendError:
    """An HTTP error answer (body already read) -> BackendError with retryability and context flag."""
    status = response.status_code
    try:
        payload: Any = json.loads(response.content[:65536])
    except (ValueError, RecursionError):
        payload = {"message": response.content[:300].decode("utf-8", "replace").strip() or response.reason_phrase}
    error = payload_error(payload, secret, status)
    if status == 429 or status >= 500 or status in (408, 409):
        return BackendError(str(error), retryable=True, retry_after=_retry_after(response.headers))
    return BackendError(str(error), retryable=False, context_too_long=error.context_too_long)


@contextmanager
def _map_api_errors(secret: str) -> Iterator[None]:
    """No httpx exception leaves this block: transport failures become BackendError."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise BackendError(f"Timed out waiting for the model server ({type(exc).__name__}).", retryable=True) from exc
    except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
        message = _scrub(
            f"Lost or could not open the connection to the model server ({type(exc).__name__}: {exc}).", secret
        )
        raise BackendError(message[:MAX_MESSAGE_CHARS], retryable=True) from exc
    except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
        message = _scrub(f"Could not call the model server ({type(exc).__name__}: {exc}).", secret)
        raise BackendError(message[:MAX_MESSAGE_CHARS], retryable=False) from exc


def _enforce_deadlines(
    events: Iterable[SSEEvent], *, started: float, first: float, between: float, clock: Callable[[], float]
) -> Iterator[SSEEvent]:
    """Fail when the first data event comes later than `first` seconds after the request, or a later one
    more than `between` seconds after the previous; comments (keep-alives) do not count as events."""
    last, limit = started, first
    for item in events:
        now = clock()
        if now - last > limit:
            raise BackendError(f"The model server sent no event for {limit:g} seconds.", retryable=True)
        if not item.comment:
            last, limit = now, between
        yield item


# --------------------------------------------------------------------------------------------
# Neutral -> wire
# --------------------------------------------------------------------------------------------


def _b64(data: Any) -> str:
    if isinstance(data, str):
        return data  # already base64
    return base64.b64encode(bytes(data)).decode("ascii")


def _user_part(part: dict[str, Any]) -> dict[str, Any]:
    match part.get("type"):
        case "text":
            return {"type": "text", "text": part.get("text", "")}
        case "image":
            url = f"data:{part.get('media_type', 'image/png')};base64,{_b64(part.get('data', b''))}"
            return {"type": "image_url", "image_url": {"url": url}}
        case "document":
            # chat/completions has no generic document part, so the model is told a document was
            # attached (by name and type) rather than the request failing.
            name, media_type = part.get("name") or "document", part.get("media_type") or "unknown type"
            return {"type": "text", "text": f"[Attached document {name!r} ({media_type}) cannot be read here.]"}
        case other:
            raise BackendError(f"A user message cannot carry a {other!r} part.", retryable=False)


def _user_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    wire = [_user_part(part) for part in parts]
    if all(item["type"] == "text" for item in wire):
        return {"role": "user", "content": "\n".join(item["text"] for item in wire)}
    return {"role": "user", "content": wire}


def _assistant_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in parts:
        match part.get("type"):
            case "text":
                texts.append(part.get("text", ""))
            case "reasoning":
                pass  # past reasoning is not sent back to chat/completions
            case "tool_use":
                arguments = json.dumps(part.get("input") or {}, ensure_ascii=False)
                function = {"name": part["name"], "arguments": arguments}
                calls.append({"id": part["id"], "type": "function", "function": function})
            case "image" | "document":
                texts.append(f"[{part['type']} omitted]")  # assistant content is text-only on this API
            case other:
                raise BackendError(f"An assistant message cannot carry a {other!r} part.", retryable=False)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_messages(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for part in parts:
        match part.get("type"):
            case "tool_result":
                content = json.dumps(part.get("result", {}), ensure_ascii=False, default=str)
                messages.append({"role": "tool", "tool_call_id": part["tool_use_id"], "content": content})
            case other:
                raise BackendError(f"A tool message cannot carry a {other!r} part.", retryable=False)
    return messages


def to_wire_messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral history -> chat/completions `messages`, the system prompt first."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        parts = message.get("parts") or []
        match message.get("role"):
            case "user":
                wire.append(_user_message(parts))
            case "assistant":
                wire.append(_assistant_message(parts))
            case "tool":
                wire.extend(_tool_messages(parts))
            case other:
                raise BackendError(f"Unknown message role {other!r}.", retryable=False)
    return wire


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------


REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def _reasoning_model(model: str) -> bool:
    name = model.rsplit("/", 1)[-1]
    return name.startswith(REASONING_MODEL_PREFIXES)


class OpenAIBackend(Backend):
    """`POST {base_url}/chat/completions` with `stream: true`, one shared connection pool per instance.

    Timeouts: connecting may take 10 s. `first_event_timeout` bounds the wait from sending the request
    to the first SSE data event; `event_timeout` bounds each later gap between data events. httpx only
    has one read timeout per request, so the socket read timeout is `max(first, event)` — a server
    that goes completely silent is cut after at most that long — and the two deadlines are also
    checked precisely against a monotonic clock on every line received, so a server that keeps the
    socket alive with `:` keep-alive comments but sends no data is cut at the right deadline.
    """

    name = "openai"
    default_model = "gpt-4o-mini"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = str(setting(base_url, "OPENAI_BASE_URL")).rstrip("/")
        self.api_key = str(setting(api_key, "OPENAI_API_KEY") or "")
        self.first_event_timeout = float(setting(first_event_timeout, "AGENT_FIRST_EVENT_TIMEOUT_SECONDS"))
        self.event_timeout = float(setting(event_timeout, "AGENT_EVENT_TIMEOUT_SECONDS"))
        self.retries = int(setting(retries, "AGENT_RETRIES"))
        self.max_tokens = int(getattr(settings, "AGENT_MAX_TOKENS", 4096))
        self._sleep = sleep
        self._clock = time.monotonic
        read = max(self.first_event_timeout, self.event_timeout)
        self._client = httpx.Client(
            timeout=httpx.Timeout(connect=10.0, read=read, write=30.0, pool=10.0),
            limits=httpx.Limits(max_connections=2000, max_keepalive_connections=200),
        )

    def close(self) -> None:
        self._client.close()

    def request_body(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        inference = inference or {}
        body: dict[str, Any] = {
            "model": model or self.default_model,
            "messages": to_wire_messages(system, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 …) refuse `max_tokens`; the
        # compatible servers mostly know only `max_tokens`.
        limit_key = "max_completion_tokens" if _reasoning_model(body["model"]) else "max_tokens"
        body[limit_key] = int(inference.get("max_tokens") or self.max_tokens)
        if tools:
            body["tools"] = to_wire_tools(tools)
        for key in ("temperature", "top_p", "stop"):
            if inference.get(key) is not None:
                body[key] = inference[key]
        return body

    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        body = self.request_body(system=system, messages=messages, tools=tools, model=model, inference=inference)
        yield from stream_with_retries(
            lambda: self._attempt(body), retries=self.retries, sleep=self._sleep, label="openai"
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _attempt(self, body: dict[str, Any]) -> Iterator[Event]:
        started = self._clock()
        with _map_api_errors(self.api_key):
            url = f"{self.base_url}/chat/completions"
            with self._client.stream("POST", url, json=body, headers=self._headers()) as response:
                if response.status_code >= 300:
                    response.read()
                    raise status_error(response, self.api_key)
                events = _enforce_deadlines(
                    iter_sse(response.iter_bytes()),
                    started=started,
                    first=self.first_event_timeout,
                    between=self.event_timeout,
                    clock=self._clock,
                )
                yield from translate(events, secret=self.api_key)

    def check(self) -> list[str]:
        problems = []
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"OPENAI_BASE_URL must be an http:// or https:// URL; got {self.base_url!r}.")
        if not self.api_key and parts.netloc.endswith("api.openai.com"):
            problems.append("OPENAI_API_KEY is not set, and api.openai.com needs one.")
        if self.first_event_timeout <= 0 or self.event_timeout <= 0:
            problems.append("AGENT_FIRST_EVENT_TIMEOUT_SECONDS and AGENT_EVENT_TIMEOUT_SECONDS must be positive.")
        if self.retries < 0:
            problems.append("AGENT_RETRIES must be zero or more.")
        return problems
