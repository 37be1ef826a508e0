"""Recorded provider streams, replayed through the real adapters over loopback HTTP.

The recordings (real responses of OpenAI, OpenAI-compatible servers and Bedrock, captured by other
public projects) live outside the repository: `WIRE_FIXTURES` names their directory (absolute path),
with `EXPECTED.json` saying per stream what a correct adapter makes of it. `make test-wire` runs this
module; `.ci/run` does when `../shared/fixtures/wire` exists. Unset, the module is skipped; set to a
directory without the recordings, it fails.

Each stream's bytes are served as they are by a real HTTP server on 127.0.0.1 (the loopback servers
of `openai_server` and `bedrock_server`), and the real adapter reads them: `OpenAIBackend` (httpx)
through its base URL, `BedrockBackend` (boto3 `converse_stream`) through its endpoint URL. What it
yields is compared with EXPECTED.json in the neutral form of docs/engine.md, "Backends" (CONTRACT §3):
EXPECTED.json holds the provider's raw words (`finish_reason`, `prompt_tokens`, …), mapped below.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from agent.backends.bedrock import BedrockBackend
from agent.backends.openai import OpenAIBackend
from agent.exceptions import BackendError
from tests.agent.backends.bedrock_server import BedrockStubServer
from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer

SKIP_REASON = (
    "WIRE_FIXTURES is not set: the recorded provider streams live outside the repository; "
    ".ci/run replays them when ../shared/fixtures/wire exists"
)
if not os.environ.get("WIRE_FIXTURES"):
    pytest.skip(SKIP_REASON, allow_module_level=True)

FIXTURES = Path(os.environ["WIRE_FIXTURES"])
MISSING = "<recordings missing>"
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]
KEY = "sk-wire-replay-0123456789"
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"

# The streams that end in an error are replayed by the tests at the end; EXPECTED.json lists three of
# them, and the Bedrock exception frame has only its `.json` (what boto3 raises for it).
ERROR_STREAMS = {
    "errors/groq_midstream_error_event_no_done.sse",
    "errors/openai_midstream_server_error_REPORTED.sse",
    "errors/openrouter_midstream_error_after_length.sse",
    "errors/bedrock_model_stream_error_exception_SYNTHETIC.eventstream.b64",
}


def _expected() -> dict[str, Any]:
    """EXPECTED.json, or a failed test (never a skip) when WIRE_FIXTURES names no recordings."""
    path = FIXTURES / "EXPECTED.json"
    if not FIXTURES.is_absolute():
        pytest.fail(f"WIRE_FIXTURES must be an absolute path, not {str(FIXTURES)!r}", pytrace=False)
    if not FIXTURES.is_dir():
        pytest.fail(f"WIRE_FIXTURES={FIXTURES} is not a directory", pytrace=False)
    if not path.is_file():
        pytest.fail(f"WIRE_FIXTURES={FIXTURES} has no EXPECTED.json", pytrace=False)
    return json.loads(path.read_text(encoding="utf-8"))


def _names(prefixes: tuple[str, ...]) -> list[str]:
    """The stream fixtures EXPECTED.json names under `prefixes` (collection must not fail: a missing
    directory gives one case that fails in `_expected`)."""
    try:
        names = json.loads((FIXTURES / "EXPECTED.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [MISSING]
    return sorted(name for name in names if name.startswith(prefixes) and name not in ERROR_STREAMS)


OPENAI_STREAMS = _names(("openai/", "compat/"))
BEDROCK_STREAMS = _names(("bedrock/",))

# --------------------------------------------------------------------------- neutral forms

# OpenAI's finish_reason -> neutral stop_reason (docs/engine.md, "Stop reasons"); any other word is
# `incomplete`, never `end_turn`.
FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}
# Bedrock's stopReason words that the neutral form names as they are.
BEDROCK_STOP = {"end_turn", "tool_use", "max_tokens", "stop_sequence"}


def openai_stop_reason(expected: dict[str, Any]) -> str:
    # An answer that carries tool calls is `tool_use` whatever the finish word (Ollama 2024 says
    # "stop" after its tool call); text that came as `delta.refusal` then "stop" is a `refusal`.
    if expected["tool_calls"]:
        return "tool_use"
    if expected.get("refusal") and expected["finish_reason"] == "stop":
        return "refusal"
    return FINISH.get(expected["finish_reason"] or "", "incomplete")


def openai_usage(raw: dict[str, Any] | None) -> dict[str, int]:
    # `prompt_tokens` counts cached tokens too: input_tokens is the uncached rest, cache_read_tokens
    # the cached ones (DeepSeek calls them `prompt_cache_hit_tokens`). `completion_tokens` already
    # includes reasoning tokens, and the neutral usage has no key of its own for them, so
    # `details.reasoning_tokens` is not added anywhere. No usage at all (Ollama, vLLM) is all zeros.
    raw = raw or {}
    details = raw.get("details") or {}
    cached = details.get("cached_tokens") or details.get("prompt_cache_hit_tokens") or 0
    return {
        "input_tokens": raw.get("prompt_tokens", 0) - cached,
        "output_tokens": raw.get("completion_tokens", 0),
        "cache_read_tokens": cached,
        "cache_write_tokens": 0,
    }


def bedrock_usage(raw: dict[str, Any]) -> dict[str, int]:
    # One to one; `totalTokens` has no neutral key (it is the sum of the others).
    return {
        "input_tokens": raw.get("inputTokens", 0),
        "output_tokens": raw.get("outputTokens", 0),
        "cache_read_tokens": raw.get("cacheReadInputTokens", 0),
        "cache_write_tokens": raw.get("cacheWriteInputTokens", 0),
    }


# --------------------------------------------------------------------------- serving the bytes


# How the recorded bytes are written: one piece per event, as a server flushes them, or every few
# bytes, cutting lines, CRLFs and UTF-8 characters, as a network may. Joined, the pieces are the
# recorded bytes exactly.
SPLITS = ("events", "7-bytes")


def sse_pieces(body: bytes, split: str) -> list[bytes]:
    if split == "events":
        pieces = [piece for piece in re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)", body) if piece]
    else:
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
    assert b"".join(pieces) == body
    return pieces


@pytest.fixture
def openai_server():
    server = ScriptedOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def openai_backend(openai_server):
    # No retries: each recording is served once, and a retry would hide what the adapter made of it.
    backend = OpenAIBackend(
        base_url=openai_server.url, api_key=KEY, first_event_timeout=10, event_timeout=10, retries=0
    )
    yield backend
    backend.close()


@pytest.fixture
def bedrock_server():
    with BedrockStubServer() as stub:
        yield stub


@pytest.fixture
def bedrock_backend(bedrock_server, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDWIREREPLAY000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wire-replay-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    return BedrockBackend(
        region="us-east-1",
        endpoint_url=bedrock_server.url,
        first_event_timeout=10,
        event_timeout=10,
        retries=0,
        prompt_caching=False,
    )


def serve_sse(server: ScriptedOpenAIServer, name: str, split: str = "events") -> None:
    body = (FIXTURES / name).read_bytes()
    headers = {"Content-Type": "text/event-stream; charset=utf-8"}  # (as api.openai.com sends it)
    server.script(Reply(body=sse_pieces(body, split), headers=headers))


def serve_eventstream(server: BedrockStubServer, name: str, split: str = "events") -> None:
    """The decoded `.eventstream.b64` bytes as the body (`application/vnd.amazon.eventstream`): in
    one piece, or every 7 bytes (frames cut anywhere)."""
    encoded = (FIXTURES / name).read_text(encoding="ascii").strip()
    base64.b64decode(encoded, validate=True)  # (a damaged file fails here, not as a parse error later)
    server.add({"events": [{"raw_b64": encoded}], **({"chunk_size": 7} if split != "events" else {})})


def collect(backend: Any, model: str) -> tuple[list[dict[str, Any]], BackendError | None]:
    events: list[dict[str, Any]] = []
    try:
        for event in backend.stream(system="", messages=USER, tools=[], model=model):
            events.append(event)
    except BackendError as error:
        return events, error
    return events, None


def joined(events: list[dict[str, Any]], kind: str) -> str:
    return "".join(e["text"] for e in events if e["kind"] == kind)


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    calls = [e for e in events if e["kind"] == "tool_use"]
    assert not [c for c in calls if "input_error" in c], calls
    return [(c["id"], c["name"], c["input"]) for c in calls]


def kinds_in_order(events: list[dict[str, Any]]) -> list[str]:
    """The kinds as they came, runs merged; reasoning without text (a signature, provider state) left out."""
    order: list[str] = []
    for event in events:
        if event["kind"] == "reasoning" and not event["text"]:
            continue
        if not order or order[-1] != event["kind"]:
            order.append(event["kind"])
    return order


def expected_order(text: str, reasoning: str, calls: list[Any]) -> list[str]:
    # Every recording here thinks first, then writes, then calls its tools.
    return [kind for kind, present in (("reasoning", reasoning), ("text", text), ("tool_use", calls)) if present] + [
        "done"
    ]


def check_done(events: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]) -> None:
    done = [e for e in events if e["kind"] == "done"]
    assert len(done) == 1 and events[-1] is done[0], "exactly one done, last"
    assert done[0]["stop_reason"] == stop_reason
    assert done[0]["usage"] == usage


# --------------------------------------------------------------------------- completed streams


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("name", OPENAI_STREAMS)
def test_openai_compatible_stream(name, split, openai_server, openai_backend):
    expected = _expected()[name]
    serve_sse(openai_server, name, split)
    events, error = collect(openai_backend, "replayed-model")
    assert error is None, f"{name}: {error}"

    # A refusal (`delta.refusal`) is shown to the user as the answer's text, its stop `refusal`.
    text = expected["text"] + (expected.get("refusal") or "")
    assert joined(events, "text") == text
    assert joined(events, "reasoning") == expected.get("reasoning", "")
    calls = [(c["id"], c["name"], c["arguments_parsed"]) for c in expected["tool_calls"]]
    assert tool_calls(events) == calls
    assert kinds_in_order(events) == expected_order(text, expected.get("reasoning", ""), calls)
    check_done(events, openai_stop_reason(expected), openai_usage(expected["usage"]))
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("name", BEDROCK_STREAMS)
def test_bedrock_converse_stream(name, split, bedrock_server, bedrock_backend):
    expected = _expected()[name]
    serve_eventstream(bedrock_server, name.removesuffix(".json") + ".eventstream.b64", split)
    events, error = collect(bedrock_backend, BEDROCK_MODEL)
    assert error is None, f"{name}: {error}"

    assert joined(events, "text") == expected["text"]
    assert joined(events, "reasoning") == expected.get("reasoning", "")
    signatures = [e["signature"] for e in events if e["kind"] == "reasoning" and e.get("signature")]
    assert signatures == ([expected["reasoning_signature"]] if "reasoning_signature" in expected else [])
    calls = [(c["toolUseId"], c["name"], c["input_parsed"]) for c in expected["tool_calls"]]
    assert tool_calls(events) == calls
    assert kinds_in_order(events) == expected_order(expected["text"], expected.get("reasoning", ""), calls)
    stop_reason = expected["stop_reason"] if expected["stop_reason"] in BEDROCK_STOP else "incomplete"
    check_done(events, stop_reason, bedrock_usage(expected["usage"]))
    assert len(bedrock_server.requests) == 1


def _openrouter_signature() -> str:
    """The reasoning signature SOURCES.md gives for the OpenRouter recording (not in EXPECTED.json)."""
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    found = re.search(r"OpenRouter reasoning signature[^`]*`[^`]*`\): `([^`]+)`", sources)
    assert found, "SOURCES.md names the OpenRouter reasoning signature"
    return found.group(1)


def test_deepseek_reasoning_content_is_kept_as_provider_state(openai_server, openai_backend):
    """DeepSeek wants its `reasoning_content` back within a tool loop ('Provider state')."""
    name = "compat/deepseek_reasoner_reasoning_content.sse"
    expected = _expected()[name]
    serve_sse(openai_server, name)
    events, error = collect(openai_backend, "deepseek-reasoner")
    assert error is None, error
    assert joined(events, "reasoning") == expected["reasoning"]
    states = [e["provider_data"] for e in events if "provider_data" in e]
    assert states == [{"field": "reasoning_content"}]


def test_openrouter_reasoning_details_are_kept_whole_with_their_signature(openai_server, openai_backend):
    """OpenRouter's `reasoning_details` pieces (text spread over chunks, the signature in a later
    one) are joined per `index` into what goes back on the next request ('Provider state')."""
    name = "compat/openrouter_reasoning_with_comments.sse"
    expected = _expected()[name]
    serve_sse(openai_server, name, "7-bytes")
    events, error = collect(openai_backend, "anthropic/claude-sonnet-4.5")
    assert error is None, error
    states = [e["provider_data"] for e in events if "provider_data" in e]
    assert len(states) == 1 and list(states[0]) == ["reasoning_details"]
    (detail,) = states[0]["reasoning_details"]
    assert detail["type"] == "reasoning.text" and detail["format"] == "anthropic-claude-v1"
    assert detail["text"] == expected["reasoning"]
    assert detail["signature"] == _openrouter_signature()


def test_every_recorded_stream_is_replayed():
    """A stream added to the recordings is replayed by one of the tests above, not silently left out."""
    expected = _expected()
    on_disk = {
        str(path.relative_to(FIXTURES))
        for pattern in ("*/*.sse", "*/*.eventstream.b64")
        for path in FIXTURES.glob(pattern)
    }
    replayed = set(OPENAI_STREAMS) | {n.removesuffix(".json") + ".eventstream.b64" for n in BEDROCK_STREAMS}
    assert on_disk == replayed | ERROR_STREAMS
    assert {n for n in ERROR_STREAMS if n.endswith(".sse")} <= set(expected)


# --------------------------------------------------------------------------- streams that end in an error


def test_groq_error_event_after_reasoning_is_an_error_not_an_answer(openai_server, openai_backend):
    """HTTP 200, reasoning deltas, then `event: error` and the body ends (no finish, no [DONE])."""
    name = "errors/groq_midstream_error_event_no_done.sse"
    expected = _expected()[name]
    serve_sse(openai_server, name)
    events, error = collect(openai_backend, "openai/gpt-oss-120b")
    assert joined(events, "reasoning") == expected["reasoning"]  # what came before the error is kept
    assert [e for e in events if e["kind"] in ("done", "text", "tool_use")] == []
    assert error is not None
    assert "tool_use_failed" in str(error)
    assert error.retryable is False  # the provider said 400: the same request fails again


def test_openai_error_chunk_is_a_retryable_error(openai_server, openai_backend):
    """`data: {"error": {"type": "server_error", ...}}` then `[DONE]`: no answer at all."""
    name = "errors/openai_midstream_server_error_REPORTED.sse"
    _expected()  # (the recordings are there)
    serve_sse(openai_server, name)
    events, error = collect(openai_backend, "gpt-4o")
    assert events == []
    assert error is not None
    assert "server_error" in str(error)
    assert error.retryable is True


def test_openrouter_error_after_finish_length_keeps_the_cut_answer(openai_server, openai_backend, caplog):
    """`finish_reason: "length"`, then a chunk with a top-level `error` next to the usage, then
    `[DONE]`. The answer was already finished (cut at the token limit, which is what the error says):
    the adapter ends it as `max_tokens` with the usage, never `end_turn`, and logs the error."""
    name = "errors/openrouter_midstream_error_after_length.sse"
    expected = _expected()[name]
    serve_sse(openai_server, name)
    with caplog.at_level(logging.WARNING, logger="agent.backends"):
        events, error = collect(openai_backend, "minimax/minimax-m2:free")
    assert error is None, error
    assert joined(events, "text") == expected["text"]
    assert joined(events, "reasoning") == expected["reasoning"]
    check_done(events, "max_tokens", openai_usage(expected["usage"]))
    assert "Token limit reached" in caplog.text


def test_bedrock_model_stream_error_exception_is_an_error(bedrock_server, bedrock_backend):
    """One `:message-type: exception` frame (`modelStreamErrorException`) after HTTP 200."""
    _expected()  # (the recordings are there)
    serve_eventstream(bedrock_server, "errors/bedrock_model_stream_error_exception_SYNTHETIC.eventstream.b64")
    events, error = collect(bedrock_backend, BEDROCK_MODEL)
    assert events == []
    assert error is not None
    assert "modelStreamErrorException" in str(error) and "Model Stream Error" in str(error)
    assert error.retryable is True  # the model's stream failed: trying again may succeed


# --------------------------------------------------------------------------- HTTP error answers


def test_openai_429_rate_limit_is_retryable(openai_server, openai_backend):
    _expected()
    body = (FIXTURES / "errors/openai_429_rate_limit_REPORTED.json").read_bytes()
    openai_server.script(Reply(status=429, body=body, headers={"Content-Type": "application/json"}))
    events, error = collect(openai_backend, "gpt-4")
    assert events == [] and error is not None
    assert "rate_limit_exceeded" in str(error)
    assert error.retryable is True and error.context_too_long is False


def test_openai_400_context_length_exceeded_is_context_too_long(openai_server, openai_backend):
    _expected()
    body = (FIXTURES / "errors/openai_400_context_length_exceeded_REPORTED.json").read_bytes()
    openai_server.script(Reply(status=400, body=body, headers={"Content-Type": "application/json"}))
    events, error = collect(openai_backend, "gpt-3.5-turbo")
    assert events == [] and error is not None
    assert error.context_too_long is True and error.retryable is False


def test_openrouter_429_with_integer_code_is_retryable(openai_server, openai_backend, monkeypatch):
    """The recorded HTTP answer (status line, headers, blank line, JSON body) served as it was."""
    _expected()
    raw = (FIXTURES / "errors/openrouter_429_rate_limit.http").read_bytes()
    head, _, body = raw.replace(b"\r\n", b"\n").partition(b"\n\n")
    status_line, *header_lines = head.decode().split("\n")
    headers = dict(line.split(": ", 1) for line in header_lines if line)
    headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "transfer-encoding")}
    openai_server.script(Reply(status=int(status_line.split()[1]), body=body, headers=headers))
    recorded_at = parsedate_to_datetime(headers["Date"]).timestamp()
    monkeypatch.setattr("agent.backends.http.time.time", lambda: recorded_at)
    events, error = collect(openai_backend, "meta-llama/llama-3.2-3b-instruct:free")
    assert events == [] and error is not None
    assert "Rate limit exceeded" in str(error)
    assert error.retryable is True and error.context_too_long is False
    # Its wait is read from `X-Ratelimit-Reset` (epoch milliseconds): 26 s after the recording's Date.
    assert error.retry_after == pytest.approx(26.0)


def test_bedrock_400_validation_exception_is_not_retryable(bedrock_server, bedrock_backend):
    _expected()
    recorded = json.loads((FIXTURES / "errors/bedrock_400_validation_exception.json").read_text(encoding="utf-8"))
    error_type = recorded["headers"]["x-amzn-ErrorType"].split(":", 1)[0]
    bedrock_server.add({"status": recorded["status"], "error_type": error_type, "message": recorded["body"]["message"]})
    events, error = collect(bedrock_backend, "no-such-model")
    assert events == [] and error is not None
    assert "ValidationException" in str(error) and "model identifier is invalid" in str(error)
    assert error.retryable is False


def _bedrock_shapes(group: str) -> list[dict[str, Any]]:
    try:
        shapes = json.loads((FIXTURES / "errors/bedrock_error_shapes_REPORTED.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [{"missing": True}]
    return shapes[group]


@pytest.mark.parametrize(
    "shape", _bedrock_shapes("http_level_errors"), ids=lambda s: str(s.get("http_status", MISSING))
)
def test_bedrock_http_error_shapes(shape, bedrock_server, bedrock_backend):
    """Recorded and reported HTTP-level errors: a throttle (429) may pass, the rest will not."""
    _expected()
    error_type = shape["headers"]["x-amzn-ErrorType"].split(":", 1)[0]
    bedrock_server.add({"status": shape["http_status"], "error_type": error_type, "message": shape["body"]["message"]})
    events, error = collect(bedrock_backend, BEDROCK_MODEL)
    assert events == [] and error is not None
    assert error_type in str(error) and shape["body"]["message"] in str(error)
    assert error.retryable is (shape["http_status"] == 429)


@pytest.mark.parametrize(
    "shape",
    _bedrock_shapes("in_stream_exception_events"),
    ids=lambda s: str(s.get("eventstream_headers", {}).get(":exception-type", MISSING)),
)
def test_bedrock_in_stream_exception_shapes(shape, bedrock_server, bedrock_backend):
    """Exception frames after HTTP 200 (reported payloads, framed by the loopback server), after
    some text: an error, never a finished answer; throttling and a failed model stream may pass."""
    _expected()
    exception_type = shape["eventstream_headers"][":exception-type"]
    text = {"contentBlockDelta": {"delta": {"text": "Partly"}, "contentBlockIndex": 0}}
    bedrock_server.add(
        {"events": [{"messageStart": {"role": "assistant"}}, text, {"exception": exception_type, **shape["payload"]}]}
    )
    events, error = collect(bedrock_backend, BEDROCK_MODEL)
    assert events == [{"kind": "text", "text": "Partly"}]
    assert error is not None
    assert exception_type in str(error) and shape["payload"]["message"] in str(error)
    assert error.retryable is (exception_type != "validationException")
