"""The Bedrock adapter against a loopback ConverseStream server speaking the real binary event stream.

No patching of boto3/botocore: boto3 signs and sends real requests to `bedrock_server`, parses the
frames itself and the adapter sees exactly what it sees in production. The events below are written
here with the quirks of the recorded streams (no contentBlockStart for text blocks, an empty first
tool-input piece, usage after messageStop, `"p"` padding in every payload).
"""

from __future__ import annotations

import base64
import json
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.backends.bedrock import (
    BedrockBackend,
    build_request,
    sanitize_document_name,
    validate_tool_name,
    wire_messages,
    wire_tool_use_id,
)
from agent.exceptions import BackendError
from tests.agent.backends.bedrock_server import BedrockStubServer, encode_events, event_frame, plan

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
ACCESS_KEY = "AKIDTESTDUMMY0000000"
SECRET = "dummy-Secret-Key-9f8e7d6c5b4a-never-shown"
USER_HI = [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}]
PNG = b"\x89PNG\r\n\x1a\n fake image bytes"

START = {"messageStart": {"role": "assistant"}}


def text(piece: str, index: int = 0) -> dict:
    return {"contentBlockDelta": {"delta": {"text": piece}, "contentBlockIndex": index}}


def tool_start(index: int, tool_id: str, name: str) -> dict:
    return {
        "contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_id, "name": name}}, "contentBlockIndex": index}
    }


def tool_input(index: int, piece: str) -> dict:
    return {"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": index}}


def reasoning(index: int, **delta: str) -> dict:
    return {"contentBlockDelta": {"delta": {"reasoningContent": delta}, "contentBlockIndex": index}}


def stop_block(index: int) -> dict:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def stop(reason: str) -> dict:
    return {"messageStop": {"stopReason": reason}}


def metadata(**usage: int) -> dict:
    return {"metadata": {"usage": usage, "metrics": {"latencyMs": 12}}}


def usage(i: int = 0, o: int = 0, r: int = 0, w: int = 0) -> dict:
    return {"input_tokens": i, "output_tokens": o, "cache_read_tokens": r, "cache_write_tokens": w}


def stream_of(*events: dict, **options) -> dict:
    return {"events": list(events), **options}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with BedrockStubServer() as stub:
        yield stub


def make_backend(url: str, sleeps: list | None = None, **options) -> BedrockBackend:
    options = {
        "region": "us-east-1",
        "retries": 0,
        "first_event_timeout": 5,
        "event_timeout": 5,
        "prompt_caching": False,  # (on by default; its own tests turn it on)
        **options,
    }
    return BedrockBackend(endpoint_url=url, sleep=(sleeps.append if sleeps is not None else time.sleep), **options)


def run(backend: BedrockBackend, messages=USER_HI, tools=(), system="", **kw) -> list[dict]:
    return list(backend.stream(system=system, messages=messages, tools=list(tools), model=MODEL, **kw))


def collect_until_error(backend: BedrockBackend, **kw) -> tuple[list[dict], BackendError]:
    events: list[dict] = []
    with pytest.raises(BackendError) as info:
        for event in backend.stream(system="", messages=USER_HI, tools=[], model=MODEL, **kw):
            events.append(event)
    return events, info.value


# --------------------------------------------------------------------------- happy paths


def test_nova_style_text_stream(server, sleeps):
    server.add(
        stream_of(
            START,
            text("The"),
            text(" capital of France"),
            text(" is Paris."),
            stop_block(0),
            stop("end_turn"),
            metadata(inputTokens=13, outputTokens=82, totalTokens=95),
        )
    )
    backend = make_backend(server.url, sleeps)
    events = run(
        backend, system="Be brief.", inference={"max_tokens": 300, "temperature": 0, "top_p": 0.9, "stop": ["##"]}
    )
    assert events == [
        {"kind": "text", "text": "The"},
        {"kind": "text", "text": " capital of France"},
        {"kind": "text", "text": " is Paris."},
        {"kind": "done", "stop_reason": "end_turn", "usage": usage(13, 82)},
    ]
    (request,) = server.requests
    assert request["path"] == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    assert request["model"] == MODEL
    assert request["headers"]["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert request["body"] == {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 300, "temperature": 0, "topP": 0.9, "stopSequences": ["##"]},
    }


def test_empty_system_and_no_tools_are_omitted(server):
    server.add(stream_of(START, text("ok"), stop_block(0), stop("end_turn"), metadata(inputTokens=1, outputTokens=1)))
    run(make_backend(server.url))
    assert server.requests[0]["body"] == {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}


TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a place.",
        "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
    },
]


def test_claude_text_then_tool_use_with_split_input(server):
    server.add(
        stream_of(
            START,
            text("Okay, let me check"),
            text(" the weather:"),
            stop_block(0),
            tool_start(1, "tooluse_yypYDr71TwCwByoyao4-Vg", "get_weather"),
            tool_input(1, ""),
            tool_input(1, '{"locati'),
            tool_input(1, 'on": "Bar'),
            tool_input(1, "ce"),
            tool_input(1, 'lona"}'),
            stop_block(1),
            stop("tool_use"),
            metadata(inputTokens=236, outputTokens=58, totalTokens=294),
        )
    )
    events = run(make_backend(server.url), tools=TOOLS)
    assert events == [
        {"kind": "text", "text": "Okay, let me check"},
        {"kind": "text", "text": " the weather:"},
        {
            "kind": "tool_use",
            "id": "tooluse_yypYDr71TwCwByoyao4-Vg",
            "name": "get_weather",
            "input": {"location": "Barcelona"},
        },
        {"kind": "done", "stop_reason": "tool_use", "usage": usage(236, 58)},
    ]
    assert server.requests[0]["body"]["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Weather for a place.",
                    "inputSchema": {"json": TOOLS[0]["input_schema"]},
                }
            }
        ]
    }


def test_two_parallel_tool_uses(server):
    server.add(
        stream_of(
            START,
            tool_start(0, "tooluse_a", "get_weather"),
            tool_start(1, "tooluse_b", "get_weather"),
            tool_input(0, '{"location": '),
            tool_input(1, '{"location": "Oslo"}'),
            tool_input(0, '"Rome"}'),
            stop_block(1),
            stop_block(0),
            stop("tool_use"),
            metadata(inputTokens=5, outputTokens=9),
        )
    )
    events = run(make_backend(server.url), tools=TOOLS)
    assert events == [
        {"kind": "tool_use", "id": "tooluse_b", "name": "get_weather", "input": {"location": "Oslo"}},
        {"kind": "tool_use", "id": "tooluse_a", "name": "get_weather", "input": {"location": "Rome"}},
        {"kind": "done", "stop_reason": "tool_use", "usage": usage(5, 9)},
    ]


def test_reasoning_with_signature(server):
    server.add(
        stream_of(
            START,
            reasoning(0, text="The user greets me."),
            reasoning(0, text=" Be warm."),
            reasoning(0, signature="EqQBCkgIARAB"),
            reasoning(0, signature="GAIiQK=="),
            stop_block(0),
            text("Hello!", 1),
            stop_block(1),
            stop("end_turn"),
            metadata(inputTokens=36, outputTokens=73),
        )
    )
    events = run(make_backend(server.url))
    assert events == [
        {"kind": "reasoning", "text": "The user greets me."},
        {"kind": "reasoning", "text": " Be warm."},
        {"kind": "reasoning", "text": "", "signature": "EqQBCkgIARABGAIiQK=="},
        {"kind": "text", "text": "Hello!"},
        {"kind": "done", "stop_reason": "end_turn", "usage": usage(36, 73)},
    ]


@pytest.mark.parametrize(
    ("wire", "neutral"),
    [
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("guardrail_intervened", "content_filtered"),
        ("content_filtered", "content_filtered"),
        ("model_context_window_exceeded", "max_tokens"),
        ("malformed_model_output", "incomplete"),  # never a silent end_turn (CONTRACT §8)
        ("malformed_tool_use", "incomplete"),
        ("tool_use", "end_turn"),  # a tool_use stop without any tool call: nothing to run
        ("something_new", "incomplete"),
    ],
)
def test_stop_reason_mapping(server, wire, neutral):
    server.add(
        stream_of(START, text("To convert"), stop_block(0), stop(wire), metadata(inputTokens=26, outputTokens=100))
    )
    events = run(make_backend(server.url))
    assert events[-1] == {"kind": "done", "stop_reason": neutral, "usage": usage(26, 100)}
    assert [e["kind"] for e in events] == ["text", "done"]


def test_usage_with_cache_tokens_arrives_after_message_stop(server):
    server.add(
        stream_of(
            START,
            text("Hi"),
            stop_block(0),
            stop("end_turn"),
            metadata(
                inputTokens=2, outputTokens=5, cacheReadInputTokens=1322, cacheWriteInputTokens=7, totalTokens=1336
            ),
        )
    )
    assert run(make_backend(server.url))[-1] == {
        "kind": "done",
        "stop_reason": "end_turn",
        "usage": usage(2, 5, 1322, 7),
    }


def test_missing_metadata_gives_zero_usage(server):
    server.add(stream_of(START, text("Hi"), stop_block(0), stop("end_turn")))
    assert run(make_backend(server.url))[-1]["usage"] == usage()


def test_empty_tool_input_is_empty_object(server):
    server.add(
        stream_of(
            START,
            tool_start(0, "tooluse_x", "list_posts"),
            tool_input(0, ""),
            stop_block(0),
            stop("tool_use"),
            metadata(inputTokens=1, outputTokens=1),
        )
    )
    events = run(make_backend(server.url))
    assert events[0] == {"kind": "tool_use", "id": "tooluse_x", "name": "list_posts", "input": {}}
    assert events[1]["stop_reason"] == "tool_use"


@pytest.mark.parametrize("pieces", [['{"title": "A"', ", oops"], ["[1, ", "2]"], ['"just a string"']])
def test_malformed_tool_input_gives_input_error(server, pieces):
    server.add(
        stream_of(
            START,
            tool_start(0, "tooluse_x", "create_post"),
            *[tool_input(0, p) for p in pieces],
            stop_block(0),
            stop("tool_use"),
            metadata(inputTokens=1, outputTokens=1),
        )
    )
    events = run(make_backend(server.url))
    tool_event = events[0]
    assert tool_event["kind"] == "tool_use" and tool_event["input"] == {}
    assert isinstance(tool_event["input_error"], str) and tool_event["input_error"]
    assert events[-1]["stop_reason"] == "tool_use"


def test_tool_block_without_block_stop_is_flushed_at_message_stop(server):
    server.add(
        stream_of(
            START,
            tool_start(0, "tooluse_x", "get_post"),
            tool_input(0, '{"id": 3}'),
            stop("tool_use"),
            metadata(inputTokens=1, outputTokens=1),
        )
    )
    events = run(make_backend(server.url))
    assert events[0] == {"kind": "tool_use", "id": "tooluse_x", "name": "get_post", "input": {"id": 3}}
    assert [e["kind"] for e in events].count("done") == 1 and events[-1]["kind"] == "done"


# --------------------------------------------------------------------------- errors in the stream


def test_in_stream_throttling_before_output_is_retryable_and_retried(server, sleeps):
    throttled = stream_of(START, {"exception": "throttlingException", "message": "Too many requests, please wait."})
    ok = stream_of(START, text("fine"), stop_block(0), stop("end_turn"), metadata(inputTokens=1, outputTokens=1))
    server.add(throttled, ok)
    events = run(make_backend(server.url, sleeps, retries=2))
    assert [e["kind"] for e in events] == ["text", "done"]
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_in_stream_throttling_after_text_is_not_retried(server, sleeps):
    server.add(stream_of(START, text("Partial"), {"exception": "throttlingException", "message": "Too many requests"}))
    events, error = collect_until_error(make_backend(server.url, sleeps, retries=3))
    assert events == [{"kind": "text", "text": "Partial"}]
    assert error.retryable is True and "throttlingException" in str(error)
    assert len(server.requests) == 1 and sleeps == []


def test_in_stream_exception_as_event_member_is_an_error(server):
    server.add(stream_of(START, {"throttlingException": {"message": "slow down"}}))
    events, error = collect_until_error(make_backend(server.url))
    assert events == [] and error.retryable is True


def test_model_stream_error_exception(server):
    server.add(
        stream_of(
            START,
            text("Hel"),
            {
                "exception": "modelStreamErrorException",
                "message": "Model Stream Error",
                "originalStatusCode": 500,
                "originalMessage": "The model stream failed.",
            },
        )
    )
    events, error = collect_until_error(make_backend(server.url))
    assert events == [{"kind": "text", "text": "Hel"}]
    assert error.retryable is True and "modelStreamErrorException" in str(error)


def test_in_stream_validation_exception_is_not_retryable(server, sleeps):
    message = "The model returned the following errors: Invalid X-Amzn-Bedrock-Context-Length Header"
    server.add(stream_of(START, {"exception": "validationException", "message": message}))
    events, error = collect_until_error(make_backend(server.url, sleeps, retries=2))
    assert events == [] and error.retryable is False and error.context_too_long is False
    assert len(server.requests) == 1 and sleeps == []


def test_in_stream_validation_too_long_sets_context_too_long(server):
    server.add(
        stream_of(START, {"exception": "validationException", "message": "Input is too long for requested model."})
    )
    _, error = collect_until_error(make_backend(server.url))
    assert error.context_too_long is True and error.retryable is False


def test_stream_without_message_stop_is_retryable_error(server):
    server.add(stream_of(START, text("Half a"), stop_block(0)))
    events, error = collect_until_error(make_backend(server.url))
    assert events == [{"kind": "text", "text": "Half a"}] and error.retryable is True


def test_connection_cut_mid_stream(server):
    server.add(stream_of(START, text("Half"), {"cut": True}))
    events, error = collect_until_error(make_backend(server.url))
    assert events == [{"kind": "text", "text": "Half"}]
    assert error.retryable is True and isinstance(error, BackendError)


def test_corrupt_frame_is_a_retryable_error(server):
    frame = bytearray(event_frame("contentBlockDelta", {"delta": {"text": "x"}, "contentBlockIndex": 0}))
    frame[-1] ^= 0xFF
    server.add(stream_of(START, {"raw_b64": base64.b64encode(bytes(frame)).decode()}))
    _, error = collect_until_error(make_backend(server.url))
    assert error.retryable is True


# --------------------------------------------------------------------------- errors before the stream


def test_http_429_throttling_then_success_is_retried(server, sleeps):
    server.add(
        {
            "status": 429,
            "error_type": "ThrottlingException",
            "message": "Too many tokens, please wait before trying again.",
        },
        stream_of(START, text("ok"), stop_block(0), stop("end_turn"), metadata(inputTokens=3, outputTokens=1)),
    )
    events = run(make_backend(server.url, sleeps, retries=2))
    assert events == [{"kind": "text", "text": "ok"}, {"kind": "done", "stop_reason": "end_turn", "usage": usage(3, 1)}]
    assert len(server.requests) == 2 and len(sleeps) == 1
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_http_429_retry_after_is_passed_on(server, sleeps):
    server.add({"status": 429, "error_type": "ThrottlingException", "message": "slow", "headers": {"Retry-After": "7"}})
    _, error = collect_until_error(make_backend(server.url, sleeps))
    assert error.retryable is True and error.retry_after == 7.0


def test_http_400_too_many_tokens_is_context_too_long(server, sleeps):
    server.add(
        {
            "status": 400,
            "error_type": "ValidationException",
            "message": "Input is too long for requested model. Too many input tokens.",
        }
    )
    _, error = collect_until_error(make_backend(server.url, sleeps, retries=2))
    assert error.context_too_long is True and error.retryable is False
    assert len(server.requests) == 1 and sleeps == []


@pytest.mark.parametrize(
    ("status", "error_type", "message", "retryable"),
    [
        (400, "ValidationException", "The provided model identifier is invalid.", False),
        (403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", False),
        (404, "ResourceNotFoundException", "Model not found.", False),
        (403, "UnrecognizedClientException", "The security token included in the request is invalid.", False),
        (503, "ServiceUnavailableException", "Service unavailable.", True),
        (500, "InternalServerException", "Internal error.", True),
        (429, "ModelNotReadyException", "Model is not ready.", True),
        (408, "ModelTimeoutException", "Model timed out.", True),
    ],
)
def test_http_errors_before_the_stream(server, sleeps, status, error_type, message, retryable):
    server.add({"status": status, "error_type": error_type, "message": message})
    _, error = collect_until_error(make_backend(server.url, sleeps, retries=1))
    assert error.retryable is retryable and error.context_too_long is False
    assert error_type in str(error)
    assert len(server.requests) == (2 if retryable else 1)


def test_connection_refused_is_retryable(sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _, error = collect_until_error(make_backend(f"http://127.0.0.1:{port}", sleeps, retries=1))
    assert error.retryable is True and len(sleeps) == 1


def test_stall_before_first_event_times_out(server, sleeps):
    server.add(stream_of({"sleep": 3}, START, text("late"), stop_block(0), stop("end_turn")))
    _, error = collect_until_error(
        make_backend(server.url, sleeps, retries=1, first_event_timeout=0.3, event_timeout=0.3)
    )
    # Both attempts were cut by the timeout (had either waited out the stall, it would have answered "late").
    assert "(ReadTimeoutError)" in str(error) and "Read timed out." in str(error)
    assert error.retryable is True and len(server.requests) == 2 and len(sleeps) == 1


def test_stall_between_events_uses_the_event_timeout(server, sleeps):
    """A gap longer than the between-events timeout fails the call even when the first-event timeout
    (and so the socket's) is longer: what was streamed is kept, and nothing is retried after output."""
    server.add(stream_of(START, text("Some"), {"sleep": 1}, text(" more"), stop_block(0), stop("end_turn")))
    events, error = collect_until_error(
        make_backend(server.url, sleeps, retries=2, first_event_timeout=10, event_timeout=0.3)
    )
    assert events == [{"kind": "text", "text": "Some"}]
    assert error.retryable is True and len(server.requests) == 1
    assert str(error) == "The model server sent no event for 0.3 seconds."


def test_no_region_is_a_backend_error(server, settings):
    settings.AWS_REGION = ""
    backend = BedrockBackend(endpoint_url=server.url, retries=0)
    _, error = collect_until_error(backend)
    assert error.retryable is False


@pytest.mark.parametrize(
    "response",
    [
        {"status": 429, "error_type": "ThrottlingException", "message": "Too many tokens"},
        {
            "status": 403,
            "error_type": "AccessDeniedException",
            "message": f"Denied for AKIAABCDEFGHIJKLMNOP {ACCESS_KEY}",
        },
        {
            "status": 403,
            "error_type": "InvalidSignatureException",
            "message": "The request signature we calculated does not match. Credential=AKIDTESTDUMMY0000000/20250101",
        },
        stream_of(START, {"exception": "validationException", "message": "bad input"}),
        stream_of(START, text("x"), {"cut": True}),
        stream_of(START, text("x"), {"sleep": 2}),
    ],
)
def test_secret_never_in_error_messages(server, response):
    server.add(response)
    _, error = collect_until_error(make_backend(server.url, event_timeout=0.3))
    chain = [error, error.__cause__]
    for exc in chain:
        assert SECRET not in str(exc) and SECRET not in repr(exc)
    assert "AKIAABCDEFGHIJKLMNOP" not in str(error)
    assert "Credential=AKID" not in str(error)


# --------------------------------------------------------------------------- neutral → wire


FULL_HISTORY = [
    {
        "role": "user",
        "parts": [
            {"type": "text", "text": "Draft two posts from this"},
            {"type": "image", "media_type": "image/png", "data": PNG},
            {"type": "text", "text": ""},
        ],
    },
    {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "I should create both.", "signature": "sig-1"},
            {"type": "reasoning", "text": "unsigned thoughts"},
            {"type": "text", "text": "Creating them now."},
            {"type": "text", "text": "   "},
            {"type": "tool_use", "id": "tooluse_a", "name": "create_post", "input": {"title": "A"}},
            {"type": "tool_use", "id": "tooluse_b", "name": "create_post", "input": {"title": "B"}},
        ],
    },
    {
        "role": "tool",
        "parts": [{"type": "tool_result", "tool_use_id": "tooluse_a", "result": {"id": 1}, "status": "ok"}],
    },
    {"role": "tool", "parts": [{"type": "tool_result", "tool_use_id": "tooluse_b", "result": {}, "status": "error"}]},
    {
        "role": "user",
        "parts": [
            {"type": "text", "text": "Thanks. And this file?"},
            {"type": "document", "media_type": "application/pdf", "name": "notes v2.final.pdf", "data": b"%PDF-1.4"},
        ],
    },
    {"role": "assistant", "parts": [{"type": "text", "text": ""}]},
    {"role": "user", "parts": [{"type": "text", "text": "Hello?"}]},
]


def expected_full_wire(image: object, document: object) -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"text": "Draft two posts from this"},
                {"image": {"format": "png", "source": {"bytes": image}}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "I should create both.", "signature": "sig-1"}}},
                {"text": "Creating them now."},
                {"toolUse": {"toolUseId": "tooluse_a", "name": "create_post", "input": {"title": "A"}}},
                {"toolUse": {"toolUseId": "tooluse_b", "name": "create_post", "input": {"title": "B"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tooluse_a", "content": [{"json": {"id": 1}}], "status": "success"}},
                {
                    "toolResult": {
                        "toolUseId": "tooluse_b",
                        "content": [{"json": {"error": "The tool call failed."}}],
                        "status": "error",
                    }
                },
                {"text": "Thanks. And this file?"},
                {"document": {"format": "pdf", "name": "notes v2 final", "source": {"bytes": document}}},
                {"text": "Hello?"},
            ],
        },
    ]


def test_full_history_translation_pure():
    request = build_request(system="You help.", messages=FULL_HISTORY, tools=[], model=MODEL)
    assert request["messages"] == expected_full_wire(PNG, b"%PDF-1.4")
    assert request["system"] == [{"text": "You help."}]
    assert request["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "create_post", "inputSchema": {"json": {"type": "object"}}}}]
    }
    assert "inferenceConfig" not in request


def test_full_history_over_the_wire(server):
    server.add(
        stream_of(START, text("Done."), stop_block(0), stop("end_turn"), metadata(inputTokens=1, outputTokens=1))
    )
    run(make_backend(server.url), messages=FULL_HISTORY, system="You help.")
    body = server.requests[0]["body"]
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    assert body["messages"] == expected_full_wire(b64(PNG), b64(b"%PDF-1.4"))
    assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "create_post"
    assert '"text": ""' not in json.dumps(body) and '"text": "   "' not in json.dumps(body)


def test_offered_tools_are_not_duplicated_by_history():
    history = FULL_HISTORY[:4]
    tools = [{"name": "create_post", "description": "Create.", "input_schema": {"type": "object", "properties": {}}}]
    request = build_request(system="", messages=history, tools=tools, model=MODEL)
    assert request["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "create_post",
                    "description": "Create.",
                    "inputSchema": {"json": {"type": "object", "properties": {}}},
                }
            }
        ]
    }


def test_tool_results_come_first_and_history_starts_with_user():
    messages = [
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "call:1/x", "name": "list_posts", "input": {}}]},
        {"role": "user", "parts": [{"type": "text", "text": "also this"}]},
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": "call:1/x", "result": [1, 2], "status": "ok"}],
        },
    ]
    wire = wire_messages(messages)
    wire_id = wire_tool_use_id("call:1/x")
    assert wire_id != "call:1/x" and wire_id == wire_tool_use_id("call:1/x")
    assert wire == [
        {"role": "user", "content": [{"text": "…"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": wire_id, "name": "list_posts", "input": {}}}]},
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": wire_id, "content": [{"json": {"items": [1, 2]}}], "status": "success"}},
                {"text": "also this"},
            ],
        },
    ]


def test_error_result_keeps_its_own_content():
    part = {"type": "tool_result", "tool_use_id": "t1", "result": {"error": "No such post."}, "status": "error"}
    (message,) = wire_messages([{"role": "tool", "parts": [part]}])
    assert message["content"][0]["toolResult"]["content"] == [{"json": {"error": "No such post."}}]


TOOL_ROUND = [
    {"role": "user", "parts": [{"type": "text", "text": "Delete post 9"}]},
    {"role": "assistant", "parts": [{"type": "tool_use", "id": "t1", "name": "delete_post", "input": {"id": 9}}]},
    {
        "role": "tool",
        "parts": [{"type": "tool_result", "tool_use_id": "t1", "result": {"error": "No."}, "status": "error"}],
    },
]
ANSWER = stream_of(START, text("Sorry."), stop_block(0), stop("end_turn"), metadata(inputTokens=5, outputTokens=2))


@pytest.mark.parametrize(
    ("model", "status"),
    [
        (MODEL, {"status": "error"}),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", {"status": "error"}),
        ("amazon.nova-pro-v1:0", {}),  # would answer a ValidationException for `status`
        ("meta.llama3-3-70b-instruct-v1:0", {}),
    ],
)
def test_tool_result_status_only_to_models_that_take_it(server, model, status):
    server.add(ANSWER)
    list(make_backend(server.url).stream(system="", messages=TOOL_ROUND, tools=[], model=model))
    (result,) = server.requests[0]["body"]["messages"][-1]["content"]
    assert result == {"toolResult": {"toolUseId": "t1", "content": [{"json": {"error": "No."}}], **status}}


def test_an_answer_stopped_after_its_reasoning_goes_back_without_it():
    """Claude on Bedrock refuses an assistant message whose final block is reasoning (a stopped answer)."""
    thought = {"type": "reasoning", "text": "Hmm.", "signature": "c2ln"}
    wire = wire_messages(
        [
            {"role": "user", "parts": [{"type": "text", "text": "Think first"}]},
            {"role": "assistant", "parts": [thought]},
            {"role": "user", "parts": [{"type": "text", "text": "Then answer"}]},
            {"role": "assistant", "parts": [thought, {"type": "text", "text": "Well,"}, thought]},
            {"role": "user", "parts": [{"type": "text", "text": "Go on"}]},
        ]
    )
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[0]["content"] == [{"text": "Think first"}, {"text": "Then answer"}]
    assert [next(iter(b)) for b in wire[1]["content"]] == ["reasoningContent", "text"]


def test_redacted_reasoning_is_kept_as_provider_state_and_sent_back_as_bytes(server):
    secret = b"\x00\x01encrypted\xfe"
    wire = base64.b64encode(secret).decode()
    server.add(
        stream_of(
            START,
            reasoning(0, redactedContent=base64.b64encode(secret[:4]).decode()),  # boto3 yields each as bytes
            reasoning(0, redactedContent=base64.b64encode(secret[4:]).decode()),
            stop_block(0),
            text("Hi", 1),
            stop_block(1),
            stop("end_turn"),
            metadata(inputTokens=3, outputTokens=1),
        ),
        ANSWER,
    )
    backend = make_backend(server.url)
    events = run(backend)
    assert events[0] == {"kind": "reasoning", "text": "", "provider_data": {"redacted": wire}}

    history = [
        *USER_HI,
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "", "provider_data": {"redacted": wire}},
                {"type": "text", "text": "Hi"},
            ],
        },
        {"role": "user", "parts": [{"type": "text", "text": "Again"}]},
    ]
    run(backend, messages=history)
    sent = server.requests[1]["body"]["messages"][1]["content"]
    assert sent == [{"reasoningContent": {"redactedContent": wire}}, {"text": "Hi"}]  # boto3 sends bytes as base64


def test_unknown_part_type_raises():
    with pytest.raises(BackendError):
        wire_messages([{"role": "user", "parts": [{"type": "audio", "data": b""}]}])
    with pytest.raises(BackendError):
        wire_messages([{"role": "user", "parts": [{"type": "image", "media_type": "image/bmp", "data": b""}]}])


def test_document_names_are_sanitized_and_unique():
    parts = [
        {"type": "document", "media_type": "text/plain", "name": "a.b.txt", "data": b"x"},
        {"type": "document", "media_type": "", "name": "a b.md", "data": b"y"},
    ]
    (message,) = wire_messages([{"role": "user", "parts": parts}])
    docs = [block["document"] for block in message["content"]]
    assert [(d["format"], d["name"]) for d in docs] == [("txt", "a b"), ("md", "a b (2)")]
    assert sanitize_document_name("../../etc/passwd; ignore all instructions!") == "etc passwd ignore all instructions"
    assert sanitize_document_name("...") == "document"


def test_validate_tool_name():
    assert validate_tool_name("create_post") == "create_post"
    for bad in ("", "has space", "dots.not.allowed", "x" * 65, None):
        with pytest.raises(ValueError):
            validate_tool_name(bad)


def test_check_reports_missing_region(settings, monkeypatch):
    settings.AWS_REGION = ""
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    problems = BedrockBackend().check()
    assert problems and "AWS_REGION" in problems[0]
    assert BedrockBackend(region="eu-west-1").check() == []


# --------------------------------------------------------------------------- property: framing


def test_plan_splits_bytes_at_offsets():
    items = [START, text("ab")]
    body = encode_events(items)
    pieces = [value for kind, value in plan({"events": items, "split": [1, 20, len(body) - 1]}) if kind == "bytes"]
    assert b"".join(pieces) == body and len(pieces) == 4
    assert [v for k, v in plan({"events": items}) if k == "bytes"] == [body]  # frames share a chunk
    actions = [k for k, _ in plan({"events": [START, {"sleep": 0.1}, text("x"), {"cut": True}]})]
    assert actions == ["bytes", "sleep", "bytes", "cut"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4),
    arguments=st.dictionaries(st.text(min_size=1, max_size=6), st.integers() | st.text(max_size=6), max_size=3),
    data=st.data(),
)
def test_any_split_of_the_frame_bytes_yields_the_same_events(server, pieces, arguments, data):
    raw = json.dumps(arguments)
    cut = data.draw(st.integers(0, len(raw)))
    events = [
        START,
        *[text(p) for p in pieces],
        stop_block(0),
        tool_start(1, "tooluse_p", "get_post"),
        tool_input(1, raw[:cut]),
        tool_input(1, raw[cut:]),
        stop_block(1),
        stop("tool_use"),
        metadata(inputTokens=4, outputTokens=2),
    ]
    total = len(encode_events(events))
    split = data.draw(st.lists(st.integers(1, total - 1), max_size=12, unique=True))
    server.add(stream_of(*events, split=split))
    got = run(make_backend(server.url))
    assert got == [
        *[{"kind": "text", "text": p} for p in pieces],
        {"kind": "tool_use", "id": "tooluse_p", "name": "get_post", "input": arguments},
        {"kind": "done", "stop_reason": "tool_use", "usage": usage(4, 2)},
    ]


def test_agent_reasoning_turns_claude_thinking_on_over_the_wire(server, settings):
    settings.AGENT_REASONING = "low"
    server.add(ANSWER)
    model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    inference = {"max_tokens": 4096, "temperature": 0.5}
    list(make_backend(server.url).stream(system="s", messages=USER_HI, tools=[], model=model, inference=inference))
    body = server.requests[0]["body"]
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert body["inferenceConfig"] == {"maxTokens": 4096}


def test_agent_reasoning_asks_a_current_claude_to_think_adaptively_over_the_wire(server, settings):
    settings.AGENT_REASONING = "high"
    server.add(ANSWER)
    model = "global.anthropic.claude-sonnet-5"
    inference = {"max_tokens": 4096, "temperature": 0.5}
    list(make_backend(server.url).stream(system="s", messages=USER_HI, tools=[], model=model, inference=inference))
    body = server.requests[0]["body"]
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "high"},
    }
    assert body["inferenceConfig"] == {"maxTokens": 4096}  # (Sonnet 5 refuses a temperature)


CACHE = {"cachePoint": {"type": "default"}}
SPEC = [{"name": "list_posts", "description": "List posts.", "input_schema": {"type": "object"}}]


@pytest.mark.parametrize(
    ("model", "system", "tools", "last"),
    [
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", True, True, True),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", True, True, True),
        ("amazon.nova-pro-v1:0", True, False, True),  # Nova caches no tools
        ("meta.llama3-3-70b-instruct-v1:0", False, False, False),  # no prompt caching
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", False, False, False),
    ],
)
def test_prompt_cache_points_for_the_families_that_take_them(server, model, system, tools, last):
    server.add(
        stream_of(
            START,
            text("ok"),
            stop_block(0),
            stop("end_turn"),
            metadata(inputTokens=12, outputTokens=1, cacheReadInputTokens=3000, cacheWriteInputTokens=200),
        )
    )
    backend = make_backend(server.url, prompt_caching=True)
    events = list(backend.stream(system="Be brief.", messages=TOOL_ROUND, tools=SPEC, model=model))
    assert events[-1]["usage"] == usage(12, 1, 3000, 200)
    body = server.requests[0]["body"]
    assert (body["system"][-1] == CACHE) is system
    assert (body["toolConfig"]["tools"][-1] == CACHE) is tools
    assert (body["messages"][-1]["content"][-1] == CACHE) is last
    assert json.dumps(body).count("cachePoint") == system + tools + last  # (Claude takes at most 4)


def test_check_warns_when_the_credential_chain_finds_none(monkeypatch):
    """The README's recipe run where no AWS credentials are set: `manage.py check` (and gunicorn's boot) says
    so, instead of every first message failing. A warning: an instance role may answer later."""
    assert BedrockBackend(region="us-east-1").cautions(MODEL) == []
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert BedrockBackend(region="us-east-1").cautions(MODEL) == [
        "The bedrock backend found no AWS credentials (environment, AWS_PROFILE and ~/.aws, SSO, container or "
        "instance role): every turn will fail until it has some. Set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE."
    ]


def test_check_reports_a_profile_that_does_not_exist(monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    assert BedrockBackend(region="us-east-1").check() == [
        "The bedrock backend cannot read the AWS configuration: The config profile (no-such-profile) could not "
        "be found."
    ]
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert len(BedrockBackend(region="").check()) == 1  # (it raised ProfileNotFound out of `check`)


@pytest.mark.parametrize("name", ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
def test_check_reports_a_credential_with_a_line_break_after_it(monkeypatch, name):
    """boto3 reads the keys from the environment as they are: a CRLF `.env` left a `\\r` that made every call
    a "transport failure" (an invalid header), retried, with nothing naming the key."""
    import os

    monkeypatch.setenv(name, os.environ[name] + "\r")
    assert BedrockBackend(region="us-east-1").check() == [
        f"{name} has a space or line break around it (a CRLF .env file?): set the value alone."
    ]
    assert ACCESS_KEY not in str(BedrockBackend(region="us-east-1").check()) and SECRET not in str(
        BedrockBackend(region="us-east-1").check()
    )
