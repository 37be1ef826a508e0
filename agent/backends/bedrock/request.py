"""Amazon Bedrock adapter: boto3 `bedrock-runtime` `converse_stream` (CONTRACT §3).

Two translations live here.

Neutral → wire (`build_request`):

* roles: `user` → user, `assistant` → assistant, `tool` → user (its `tool_result` parts become
  `toolResult` blocks). Consecutive messages of one role are merged into one, because Bedrock wants
  strict user/assistant alternation; so all results of one tool cycle, and a user text that follows
  them, travel in the ONE user message after the assistant's `toolUse` message. Inside a user
  message the `toolResult` blocks come first (Claude rejects text before tool results).
* empty or whitespace-only text is never sent; unsigned reasoning is dropped (Bedrock cannot take it
  back); a message left with no blocks is dropped and its neighbours merge. The only placeholder is a
  user text "…" put first when the history would otherwise start with an assistant message (Bedrock
  requires a user message first). An empty history is sent as is and Bedrock answers a
  ValidationException: there is nothing sensible to invent.
* an error tool result never has empty content (`{"error": "The tool call failed."}`).
* `toolConfig` is sent whenever tools are offered OR the history holds tool blocks (Bedrock rejects
  a history with toolUse/toolResult and no toolConfig). Tools named in the history but not offered
  this call get a bare spec (`{"type": "object"}` schema); the tool runner still refuses any tool that
  is not available, so offering the name costs nothing.
* tool-use ids that Bedrock's pattern would reject (ids from another provider) are replaced by a
  stable hash, the same on the `toolUse` and its `toolResult`.

Wire → events (`_Translator`): text deltas → `text`; reasoning text deltas → `reasoning`; a
reasoning block's signature (it may come in pieces) is gathered and emitted when its block stops as
one `{"kind": "reasoning", "text": "", "signature": ...}` event; redacted reasoning is dropped (the
contract has no place for it). Tool input pieces are gathered per block index and parsed once, at
`contentBlockStop`. `metadata` (usage) arrives after `messageStop`, so the stream is read to its end
before the single `done`. A stream that ends without `messageStop` is a retryable BackendError.

Timeouts: the client's read timeout is the first-event timeout (it covers the wait for the response
headers and the first event); once the first content event has arrived the socket's timeout is set
to the between-events timeout. urllib3 resets the socket timeout on every new request, so a pooled
connection never keeps it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.conf import settings

from agent.backends.base import Backend, Event, setting, zero_usage
from agent.backends.retry import stream_with_retries
from agent.exceptions import BackendError

__all__ = ["BedrockBackend", "TOOL_NAME_PATTERN", "TOOL_NAME_RE", "build_request", "validate_tool_name"]

logger = logging.getLogger("agent.backends")

TOOL_NAME_PATTERN = r"[a-zA-Z0-9_-]{1,64}"
TOOL_NAME_RE = re.compile(TOOL_NAME_PATTERN)
_TOOL_USE_ID_RE = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
CONNECT_TIMEOUT_SECONDS = 10
PLACEHOLDER_TEXT = "…"

IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_DOCUMENT_EXTENSIONS = frozenset(DOCUMENT_FORMATS.values())

STOP_REASON_MAP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "content_filtered",
    "content_filtered": "content_filtered",
    # The output was cut because the context window filled up: for the caller that is a truncation.
    "model_context_window_exceeded": "max_tokens",
}

# In-stream exception members of ConverseStreamOutput (lower camel case) and their HTTP-level names.
_STREAM_EXCEPTION_KEYS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
_RETRYABLE_CODES = frozenset(
    {
        "throttlingexception",
        "toomanyrequestsexception",
        "serviceunavailableexception",
        "serviceunavailable",
        "internalserverexception",
        "internalfailure",
        "modelnotreadyexception",
        "modeltimeoutexception",
        "modelstreamerrorexception",
        "requesttimeout",
        "requesttimeoutexception",
    }
)
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_TOO_LONG_RE = re.compile(
    r"(input|prompt|request|conversation) is too long|too many (input )?tokens|context (length|window|limit)"
    r"|maximum context"
    r"|exceeds? (the )?(max|maximum) (number of )?(input )?tokens",
    re.IGNORECASE,
)
_SECRET_RES = (
    re.compile(r"\b(AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}\b"),
    re.compile(r"(Credential|Signature|X-Amz-Security-Token|aws_secret_access_key)\s*[=:]\s*\S+", re.IGNORECASE),
)


def validate_tool_name(name: str) -> str:
    """Return `name` if Bedrock accepts it as a tool name; raise ValueError otherwise."""
    if not isinstance(name, str) or not TOOL_NAME_RE.fullmatch(name):
        raise ValueError(f"Tool name {name!r} must be 1 to 64 letters, digits, underscores or hyphens.")
    return name


# --------------------------------------------------------------------------- neutral → wire


def build_request(
    *,
    system: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    model: str,
    inference: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments for `converse_stream`."""
    wire = wire_messages(messages)
    request: dict[str, Any] = {"modelId": model, "messages": wire}
    if system and system.strip():
        request["system"] = [{"text": system}]
    if config := _inference_config(inference or {}):
        request["inferenceConfig"] = config
    if tool_config := _tool_config(tools or [], wire):
        request["toolConfig"] = tool_config
    return request


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages → Bedrock messages: alternating roles, no empty blocks, results first."""
    names = _DocumentNames()
    merged: list[dict[str, Any]] = []
    for message in messages:
        role = _wire_role(message.get("role"))
        blocks = [b for part in message.get("parts") or [] if (b := _part_block(part, names)) is not None]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    for message in merged:
        if message["role"] == "user":
            message["content"].sort(key=lambda block: "toolResult" not in block)
    if merged and merged[0]["role"] == "assistant":
        merged.insert(0, {"role": "user", "content": [{"text": PLACEHOLDER_TEXT}]})
    return merged


def _wire_role(role: Any) -> str:
    match role:
        case "user" | "tool":
            return "user"
        case "assistant":
            return "assistant"
        case _:
            raise BackendError(f"Bedrock cannot send a message with role {role!r}.", retryable=False)


def _part_block(part: dict[str, Any], names: _DocumentNames) -> dict[str, Any] | None:
    """One neutral part → one Bedrock content block (None: nothing to send)."""
    match part.get("type"):
        case "text":
            text = part.get("text") or ""
            return {"text": text} if text.strip() else None
        case "reasoning":
            return _reasoning_block(part)
        case "tool_use":
            tool_input = part.get("input")
            return {
                "toolUse": {
                    "toolUseId": wire_tool_use_id(part.get("id")),
                    "name": part.get("name") or "",
                    "input": tool_input if isinstance(tool_input, dict) else {},
                }
            }
        case "tool_result":
            return _tool_result_block(part)
        case "image":
            return _image_block(part)
        case "document":
            return _document_block(part, names)
        case other:
            raise BackendError(f"Bedrock cannot send a message part of type {other!r}.", retryable=False)


def _reasoning_block(part: dict[str, Any]) -> dict[str, Any] | None:
    signature = part.get("signature")
    if not signature:
        return None
    return {"reasoningContent": {"reasoningText": {"text": part.get("text") or "", "signature": signature}}}


def _tool_result_block(part: dict[str, Any]) -> dict[str, Any]:
    is_error = part.get("status") == "error"
    result = part.get("result")
    if isinstance(result, list):
        result = {"items": result}
    elif result is not None and not isinstance(result, dict):
        result = {"value": result}
    if is_error and not result:
        result = {"error": "The tool call failed."}
    return {
        "toolResult": {
            "toolUseId": wire_tool_use_id(part.get("tool_use_id")),
            "content": [{"json": result or {}}],
            "status": "error" if is_error else "success",
        }
    }


def _image_block(part: dict[str, Any]) -> dict[str, Any]:
    media_type = str(part.get("media_type") or "").lower()
    image_format = IMAGE_FORMATS.get(media_type)
    if image_format is None:
        raise BackendError(f"Bedrock cannot take images of type {media_type!r}.", retryable=False)
    return {"image": {"format": image_format, "source": {"bytes": part.get("data") or b""}}}


def _document_block(part: dict[str, Any], names: _DocumentNames) -> dict[str, Any]:
    name = str(part.get("name") or "")
    media_type = str(part.get("media_type") or "").lower().split(";")[0].strip()
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    doc_format = DOCUMENT_FORMATS.get(media_type) or (extension if extension in _DOCUMENT_EXTENSIONS else None)
    if doc_format is None:
        raise BackendError(f"Bedrock cannot take documents of type {media_type!r}.", retryable=False)
    return {
        "document": {"format": doc_format, "name": names.unique(name), "source": {"bytes": part.get("data") or b""}}
    }


class _DocumentNames:
    """Bedrock document names: letters, digits, single spaces, hyphens, brackets; unique per request."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        base = sanitize_document_name(name)
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base} ({n})"
        self.used.add(candidate)
        return candidate


def sanitize_document_name(name: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", name)
    cleaned = re.sub(r"[^A-Za-z0-9\-()\[\] ]", " ", stem)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()[:100].strip()
    return cleaned or "document"


def wire_tool_use_id(value: Any) -> str:
    """Bedrock's toolUseId pattern is `[a-zA-Z0-9_.:-]{1,64}`; other ids get a stable hash."""
    text = str(value or "")
    if _TOOL_USE_ID_RE.fullmatch(text):
        return text
    return "tu_" + hashlib.sha256(text.encode()).hexdigest()[:40]


def _inference_config(inference: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for neutral, wire in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        if inference.get(neutral) is not None:
            config[wire] = inference[neutral]
    stop = inference.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop:
        config["stopSequences"] = [s for s in stop if s]
    return config


def _tool_config(tools: list[dict[str, Any]], wire: list[dict[str, Any]]) -> dict[str, Any] | None:
    specs = [_tool_spec(tool) for tool in tools]
    offered = {tool["name"] for tool in tools}
    used, has_tool_blocks = _history_tools(wire)
    if not specs and not has_tool_blocks:
        return None
    for name in sorted(used - offered):
        specs.append({"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}})
    return {"tools": specs} if specs else None


def _tool_spec(tool: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": tool["name"],
        "inputSchema": {"json": tool.get("input_schema") or {"type": "object"}},
    }
    if tool.get("description"):
        spec["description"] = tool["description"]
    return {"toolSpec": spec}


def _history_tools(wire: list[dict[str, Any]]) -> tuple[set[str], bool]:
    names: set[str] = set()
    has_blocks = False
    for message in wire:
        for block in message["content"]:
            if "toolUse" in block:
                names.add(block["toolUse"]["name"])
            has_blocks = has_blocks or "toolUse" in block or "toolResult" in block
    return names, has_blocks


# --------------------------------------------------------------------------- wire → events


class _Translator:
    """Turns the dicts boto3 yields into the four neutral event kinds, one call's state."""

    def __init__(self) -> None:
        self.tool_blocks: dict[int, dict[str, Any]] = {}
        self.signatures: dict[int, list[str]] = {}
        self.tool_used = False
        self.stop_reason: str | None = None
        self.usage = zero_usage()

    def feed(self, event: dict[str, Any]) -> Iterator[Event]:
        for key, body in event.items():
            body = body or {}
            match key:
                case "contentBlockStart":
                    self._start_block(body)
                case "contentBlockDelta":
                    yield from self._delta(body)
                case "contentBlockStop":
                    yield from self._stop_block(body.get("contentBlockIndex", 0))
                case "messageStop":
                    yield from self._message_stop(body)
                case "metadata":
                    self._metadata(body)
                case _ if key in _STREAM_EXCEPTION_KEYS:
                    raise _error_from_code(key, body.get("message") or "", None, None, in_stream=True)
                case _:
                    pass  # messageStart and event kinds this adapter does not know: nothing to say.

    def _start_block(self, body: dict[str, Any]) -> None:
        tool = (body.get("start") or {}).get("toolUse")
        if tool is not None:
            block = self._tool_block(body.get("contentBlockIndex", 0))
            block["id"] = tool.get("toolUseId") or block["id"]
            block["name"] = tool.get("name") or block["name"]

    def _tool_block(self, index: int) -> dict[str, Any]:
        return self.tool_blocks.setdefault(index, {"id": f"tooluse_{index}", "name": "", "input": []})

    def _delta(self, body: dict[str, Any]) -> Iterator[Event]:
        index = body.get("contentBlockIndex", 0)
        delta = body.get("delta") or {}
        if text := delta.get("text"):
            yield {"kind": "text", "text": text}
        if (tool := delta.get("toolUse")) is not None:
            self._tool_block(index)["input"].append(tool.get("input") or "")
        reasoning = delta.get("reasoningContent") or {}
        if reasoning_text := reasoning.get("text"):
            yield {"kind": "reasoning", "text": reasoning_text}
        if signature := reasoning.get("signature"):
            self.signatures.setdefault(index, []).append(signature)

    def _stop_block(self, index: int) -> Iterator[Event]:
        if (signature := self.signatures.pop(index, None)) is not None:
            yield {"kind": "reasoning", "text": "", "signature": "".join(signature)}
        if (block := self.tool_blocks.pop(index, None)) is not None:
            self.tool_used = True
            yield _tool_use_event(block)

    def _message_stop(self, body: dict[str, Any]) -> Iterator[Event]:
        for index in sorted(set(self.signatures) | set(self.tool_blocks)):
            yield from self._stop_block(index)
        self.stop_reason = str(body.get("stopReason") or "end_turn")

    def _metadata(self, body: dict[str, Any]) -> None:
        usage = body.get("usage") or {}
        for key, wire in (
            ("input_tokens", "inputTokens"),
            ("output_tokens", "outputTokens"),
            ("cache_read_tokens", "cacheReadInputTokens"),
            ("cache_write_tokens", "cacheWriteInputTokens"),
        ):
            self.usage[key] = int(usage.get(wire) or 0)

    def done(self) -> Event:
        if self.stop_reason is None:
            raise BackendError("The Bedrock stream ended before the model finished its message.", retryable=True)
        if self.tool_used:
            stop_reason = "tool_use"
        else:
            stop_reason = STOP_REASON_MAP.get(self.stop_reason, "end_turn")
            stop_reason = "end_turn" if stop_reason == "tool_use" else stop_reason
        return {"kind": "done", "stop_reason": stop_reason, "usage": dict(self.usage)}


def _tool_use_event(block: dict[str, Any]) -> Event:
    event: Event = {"kind": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    raw = "".join(block["input"]).strip()
    if not raw:
        return event
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        event["input_error"] = f"The tool input is not valid JSON ({exc.msg} at position {exc.pos})."
        return event
    if isinstance(parsed, dict):
        event["input"] = parsed
    else:
        event["input_error"] = f"The tool input is a JSON {type(parsed).__name__}, not an object."
    return event


# --------------------------------------------------------------------------- errors


def _scrub(text: str, limit: int = 500) -> str:
    """Provider text for a log line: no key ids, signatures or secrets, bounded length."""
    for pattern in _SECRET_RES:
        text = pattern.sub("[redacted]", text)
    return text[:limit]


def _error_from_code(
    code: str, message: str, status: int | None, retry_after: float | None, *, in_stream: bool = False
) -> BackendError:
    key = code.lower()
    retryable = key in _RETRYABLE_CODES or status in _RETRYABLE_STATUSES
    too_long = key == "validationexception" and bool(_TOO_LONG_RE.search(message))
    where = "in the stream" if in_stream else (f"HTTP {status}" if status else "before the stream")
    return BackendError(
        f"Bedrock error {code} ({where}): {_scrub(message) or 'no message'}",
        retryable=retryable,
        retry_after=retry_after if retryable else None,
        context_too_long=too_long,
    )


def _from_client_error(exc: Any) -> BackendError:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error") or {}
    metadata = response.get("ResponseMetadata") or {}
    status = metadata.get("HTTPStatusCode")
    retry_after = _retry_after((metadata.get("HTTPHeaders") or {}).get("retry-after"))
    in_stream = type(exc).__name__ == "EventStreamError"
    return _error_from_code(
        str(error.get("Code") or "Unknown"), str(error.get("Message") or ""), status, retry_after, in_stream=in_stream
    )


def _retry_after(value: Any) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _from_other_error(exc: BaseException) -> BackendError | None:
    """botocore, urllib3 and socket failures → BackendError; None for anything else."""
    import botocore.exceptions as bex
    import urllib3.exceptions as uex
    from botocore.eventstream import ParserError

    name = type(exc).__name__
    if isinstance(exc, bex.NoRegionError):
        return BackendError("Bedrock has no AWS region: set AWS_REGION.", retryable=False)
    if isinstance(exc, bex.NoCredentialsError | bex.PartialCredentialsError):
        return BackendError("Bedrock found no usable AWS credentials.", retryable=False)
    if isinstance(exc, bex.ConnectionError | bex.HTTPClientError | uex.HTTPError | ParserError | OSError):
        return BackendError(f"Bedrock transport failure ({name}): {_scrub(str(exc), 300)}", retryable=True)
    if isinstance(exc, bex.BotoCoreError):
        return BackendError(f"Bedrock client error ({name}): {_scrub(str(exc), 300)}", retryable=False)
    return None


@contextmanager
def _map_api_errors() -> Iterator[None]:
    """Let no botocore, urllib3 or socket exception out: each becomes a BackendError."""
    from botocore.exceptions import ClientError

    try:
        yield
    except BackendError:
        raise
    except ClientError as exc:
        raise _from_client_error(exc) from exc
    except Exception as exc:
        mapped = _from_other_error(exc)
        if mapped is None:
            raise
        raise mapped from exc


def _set_read_timeout(event_stream: Any, seconds: float) -> None:
    """Best effort: change the open socket's timeout (botocore offers no per-read knob)."""
    raw = getattr(event_stream, "_raw_stream", None)
    connection = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with suppress(OSError):
            sock.settimeout(seconds)


# --------------------------------------------------------------------------- the backend


class BedrockBackend(Backend):
    name = "bedrock"
    default_model = "anthropic.claude-3-5-haiku-20241022-v1:0"

    def __init__(
        self,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.region = region if region is not None else (getattr(settings, "AWS_REGION", "") or None)
        self.endpoint_url = endpoint_url
        self.first_event_timeout = float(setting(first_event_timeout, "AGENT_FIRST_EVENT_TIMEOUT_SECONDS", 60.0))
        self.event_timeout = float(setting(event_timeout, "AGENT_EVENT_TIMEOUT_SECONDS", 60.0))
        self.retries = int(setting(retries, "AGENT_RETRIES", 2))
        self._sleep = sleep
        self._client: Any = None
        self._lock = threading.Lock()

    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        request = build_request(system=system, messages=messages, tools=tools, model=model, inference=inference)
        yield from stream_with_retries(
            lambda: self._stream_once(request), retries=self.retries, sleep=self._sleep, label="bedrock"
        )

    def _stream_once(self, request: dict[str, Any]) -> Iterator[Event]:
        translator = _Translator()
        with _map_api_errors():
            events = self.client().converse_stream(**request)["stream"]
            try:
                yield from self._read(events, translator)
            except BaseException:
                with suppress(Exception):
                    events.close()
                raise
        yield translator.done()

    def _read(self, events: Any, translator: _Translator) -> Iterator[Event]:
        waiting_for_first = True
        for event in events:
            if waiting_for_first and "messageStart" not in event:
                _set_read_timeout(events, self.event_timeout)
                waiting_for_first = False
            yield from translator.feed(event)

    def client(self) -> Any:
        """The boto3 client, made once per instance (clients are thread-safe; sessions are not)."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    with _map_api_errors():
                        self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        import boto3
        from botocore.config import Config

        config = Config(
            read_timeout=self.first_event_timeout,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            max_pool_connections=2000,
            # One attempt in all (`max_attempts` counts retries only): stream_with_retries does the retrying.
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        kwargs: dict[str, Any] = {"region_name": self.region or None, "config": config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        return boto3.session.Session().client("bedrock-runtime", **kwargs)

    def check(self) -> list[str]:
        problems: list[str] = []
        try:
            import boto3
        except ImportError:
            return ["The bedrock backend needs the boto3 package installed."]
        if not (self.region or boto3.session.Session().region_name):
            problems.append("The bedrock backend needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION).")
        endpoint = self.endpoint_url or _env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        if endpoint and not endpoint.startswith(("http://", "https://")):
            problems.append("AWS_ENDPOINT_URL_BEDROCK_RUNTIME must start with http:// or https://.")
        for label, value in (
            ("AGENT_FIRST_EVENT_TIMEOUT_SECONDS", self.first_event_timeout),
            ("AGENT_EVENT_TIMEOUT_SECONDS", self.event_timeout),
        ):
            if value <= 0:
                problems.append(f"{label} must be a positive number of seconds.")
        return problems


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()
