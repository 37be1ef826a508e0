"""OpenAIBackend against a real loopback HTTP server speaking the quirks of real OpenAI-compatible servers."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agent.backends.http import retry_after
from agent.backends.openai import OpenAIBackend, SSEEvent, iter_sse, parse_stream
from agent.backends.openai_responses import OpenAIResponsesBackend
from agent.exceptions import BackendError
from tests.agent.backends.openai_server import Reply, closed_port, sse

BACKEND = OpenAIBackend
KEY = "sk-test-SECRET-0123456789abcdef"
TOOLS = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": {"type": "object"}}]
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]


def run(backend: OpenAIBackend, *, messages=None, tools=None, system="You are helpful.", inference=None):
    return list(
        backend.stream(system=system, messages=messages or USER, tools=tools or [], model="m1", inference=inference)
    )


def collect_until_error(backend: OpenAIBackend, **kwargs: Any) -> tuple[list[dict], BackendError]:
    events: list[dict] = []
    with pytest.raises(BackendError) as info:
        for event in backend.stream(system="", messages=USER, tools=[], model="m1", **kwargs):
            events.append(event)
    return events, info.value


def chunk(delta: dict | None = None, finish: str | None = None, **extra: Any) -> dict:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice], **extra}


def usage_chunk(prompt: int, completion: int, cached: int | None = None, choices: Any = ()) -> dict:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "chatcmpl-1", "choices": list(choices) if choices is not None else None, "usage": usage}


def tool_delta(index: int | None = None, id: Any = None, name: str | None = None, args: str | None = None) -> dict:
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"], call["type"] = id, "function"
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return {"tool_calls": [call]}


def kinds(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


def text_of(events: list[dict], kind: str = "text") -> str:
    return "".join(e["text"] for e in kinds(events, kind))


ZERO = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}


# ------------------------------------------------------------------------------------------ streams


def test_plain_text_with_trailing_usage_chunk_and_cached_tokens(server, backend):
    body = sse(
        chunk({"role": "assistant", "content": ""}, usage=None),
        chunk({"content": "Hel"}, usage=None),
        chunk({"content": "lo!"}, usage=None),
        chunk({}, "stop", usage=None),
        usage_chunk(120, 7, cached=100),
    )
    server.script(Reply(body=body, delay=0.01))
    events = run(backend, inference={"max_tokens": 99, "temperature": 0.2, "top_p": 0.9, "stop": ["END"]})
    assert events == [
        {"kind": "text", "text": "Hel"},
        {"kind": "text", "text": "lo!"},
        {
            "kind": "done",
            "stop_reason": "end_turn",
            "usage": {**ZERO, "input_tokens": 20, "output_tokens": 7, "cache_read_tokens": 100},
        },
    ]
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "m1",
        "messages": [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 99,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["END"],
    }


def test_usage_chunk_with_null_choices_and_no_key_sends_no_authorization(server, make_backend):
    server.script(Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"), usage_chunk(3, 1, choices=None))))
    events = run(make_backend(api_key=""))
    assert events[-1] == {
        "kind": "done",
        "stop_reason": "end_turn",
        "usage": {**ZERO, "input_tokens": 3, "output_tokens": 1},
    }
    assert "authorization" not in server.requests[0].headers


def test_text_then_tool_call(server, backend):
    body = sse(
        chunk({"role": "assistant", "content": "Let me check."}),
        chunk(tool_delta(0, "call_A", "get_weather", "")),
        chunk(tool_delta(0, args='{"city":')),
        chunk(tool_delta(0, args=' "Paris"}')),
        chunk({}, "tool_calls"),
        usage_chunk(50, 20, cached=0),
    )
    server.script(Reply(body=body))
    events = run(backend, tools=TOOLS)
    assert events == [
        {"kind": "text", "text": "Let me check."},
        {"kind": "tool_use", "id": "call_A", "name": "get_weather", "input": {"city": "Paris"}},
        {"kind": "done", "stop_reason": "tool_use", "usage": {**ZERO, "input_tokens": 50, "output_tokens": 20}},
    ]
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": {"type": "object"}},
        }
    ]


def test_one_tool_call_with_arguments_in_many_fragments(server, backend):
    arguments = json.dumps({"city": "Edinburgh", "country": "UK", "units": "c"})
    fragments = [chunk(tool_delta(0, args=arguments[i : i + 3])) for i in range(0, len(arguments), 3)]
    body = sse(chunk(tool_delta(0, "call_X", "get_weather", "")), *fragments, chunk({}, "tool_calls"))
    server.script(Reply(body=body, delay=0.002))
    events = run(backend, tools=TOOLS)
    assert kinds(events, "tool_use") == [
        {
            "kind": "tool_use",
            "id": "call_X",
            "name": "get_weather",
            "input": {"city": "Edinburgh", "country": "UK", "units": "c"},
        }
    ]


def test_parallel_tool_calls_interleaved_by_index(server, backend):
    body = sse(
        chunk(tool_delta(0, "call_1", "get_weather", "")),
        chunk(tool_delta(0, args='{"city": "Ed')),
        chunk(tool_delta(1, "call_2", "get_stock", "")),
        chunk(tool_delta(1, args='{"ticker": ')),
        chunk(tool_delta(0, args='inburgh"}')),
        chunk(tool_delta(1, args='"AAPL"}')),
        chunk({}, "tool_calls"),
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert [(e["id"], e["name"], e["input"]) for e in kinds(events, "tool_use")] == [
        ("call_1", "get_weather", {"city": "Edinburgh"}),
        ("call_2", "get_stock", {"ticker": "AAPL"}),
    ]
    assert events[-1]["stop_reason"] == "tool_use"


def test_ollama_reuses_index_zero_with_new_ids_and_says_stop(server, backend):
    body = sse(
        chunk({"role": "assistant", "content": "", **tool_delta(0, "call_a", "run", '{"cmd":"ls"}')}),
        chunk({"role": "assistant", "content": "", **tool_delta(0, "call_b", "run", '{"cmd":"ls -l"}')}),
        chunk({"content": ""}, "stop"),
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert [(e["id"], e["input"]) for e in kinds(events, "tool_use")] == [
        ("call_a", {"cmd": "ls"}),
        ("call_b", {"cmd": "ls -l"}),
    ]
    assert events[-1] == {"kind": "done", "stop_reason": "tool_use", "usage": ZERO}


def test_tool_calls_without_index_are_keyed_by_id_then_position(server, backend):
    body = sse(
        chunk(tool_delta(None, "call_a", "first", '{"n":')),
        chunk(tool_delta(None, None, None, "1}")),  # no id, no index: continues the latest call
        chunk(tool_delta(None, "call_b", "second", "{}")),
        chunk({}, "tool_calls"),
    )
    server.script(Reply(body=body))
    calls = kinds(run(backend), "tool_use")
    assert [(e["id"], e["name"], e["input"]) for e in calls] == [
        ("call_a", "first", {"n": 1}),
        ("call_b", "second", {}),
    ]


def test_integer_ids_become_strings(server, backend):
    body = sse(chunk(tool_delta(0, 7, "get_weather", '{"city":"Oslo"}')), chunk({}, "tool_calls"))
    server.script(Reply(body=body))
    (call,) = kinds(run(backend), "tool_use")
    assert call["id"] == "7"


def test_repeated_full_name_and_empty_name_are_not_concatenated(server, backend):
    body = sse(
        chunk(tool_delta(0, "call_1", "get_weather", '{"city"')),
        chunk(tool_delta(0, "call_1", "get_weather", ': "Rome"')),
        chunk(tool_delta(0, None, "", "}")),
        chunk({}, "tool_calls"),
    )
    server.script(Reply(body=body))
    (call,) = kinds(run(backend), "tool_use")
    assert (call["id"], call["name"], call["input"]) == ("call_1", "get_weather", {"city": "Rome"})


def test_call_without_id_gets_a_stable_generated_id(server, backend):
    body = sse(chunk(tool_delta(0, None, "get_weather", "{}")), chunk({}, "tool_calls"))
    server.script(Reply(body=body))
    (call,) = kinds(run(backend), "tool_use")
    assert call["id"] == "call_chatcmpl-1_0"


def test_reasoning_content_deepseek_style(server, backend):
    body = sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Hmm, "}),
        chunk({"content": None, "reasoning_content": "a greeting."}),
        chunk({"content": "Hello there!", "reasoning_content": None}),
        chunk({"content": ""}, "stop"),
        usage_chunk(6, 20, choices=[])
        | {"usage": {"prompt_tokens": 6, "completion_tokens": 20, "prompt_cache_hit_tokens": 2}},
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert [e["kind"] for e in events] == ["reasoning", "reasoning", "text", "reasoning", "done"]
    assert text_of(events, "reasoning") == "Hmm, a greeting."
    # DeepSeek wants its reasoning back within a tool loop: the last reasoning event says where it goes.
    assert events[3] == {"kind": "reasoning", "text": "", "provider_data": {"field": "reasoning_content"}}
    assert text_of(events) == "Hello there!"
    assert events[-1]["usage"] == {**ZERO, "input_tokens": 4, "output_tokens": 20, "cache_read_tokens": 2}


def test_reasoning_field_openrouter_style_with_processing_comments(server, backend):
    comment = ": OPENROUTER PROCESSING\n\n"
    body = [
        comment,
        comment,
        *sse(chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}), done=False),
        *sse(
            chunk({"content": "", "reasoning": "Simple sum.", "reasoning_details": [{"text": "Simple sum."}]}),
            done=False,
        ),
        comment,
        *sse(chunk({"content": "2 + 2 = 4", "reasoning": None}), chunk({}, "stop"), usage_chunk(43, 36, 0)),
    ]
    server.script(Reply(body=body, delay=0.005))
    events = run(backend)
    assert events[:2] == [{"kind": "reasoning", "text": "Simple sum."}, {"kind": "text", "text": "2 + 2 = 4"}]
    assert events[-1]["usage"]["input_tokens"] == 43


def test_refusal_is_shown_as_text(server, backend):
    body = sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I'm sorry, "}),
        chunk({"refusal": "I can't help with that."}),
        chunk({}, "stop"),
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert text_of(events) == "I'm sorry, I can't help with that."
    assert events[-1]["stop_reason"] == "refusal"  # (CONTRACT §8) not a normal end_turn


def test_crlf_events_without_done_and_cumulative_usage_perplexity_style(server, backend):
    def perplexity(text: str, so_far: str, completion: int, finish: str | None = None) -> dict:
        choice = {
            "index": 0,
            "finish_reason": finish,
            "message": {"role": "assistant", "content": so_far},
            "delta": {"role": "assistant", "content": text},
        }
        return {
            "id": "p1",
            "object": "chat.completion",
            "choices": [choice],
            "usage": {"prompt_tokens": 12, "completion_tokens": completion},
        }

    body = sse(
        perplexity("Russia", "Russia", 1),
        perplexity(" is largest.", "Russia is largest.", 4, "stop"),
        done=False,
        newline="\r\n",
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert events == [
        {"kind": "text", "text": "Russia"},
        {"kind": "text", "text": " is largest."},
        {"kind": "done", "stop_reason": "end_turn", "usage": {**ZERO, "input_tokens": 12, "output_tokens": 4}},
    ]


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [("length", "max_tokens"), ("content_filter", "content_filtered"), ("stop", "end_turn"), ("eos", "end_turn")],
)
def test_finish_reason_mapping(server, backend, finish, stop_reason):
    server.script(Reply(body=sse(chunk({"content": '{"'}), chunk({}, finish), usage_chunk(79, 1))))
    events = run(backend)
    assert events[-1]["stop_reason"] == stop_reason
    assert events[-1]["usage"] == {**ZERO, "input_tokens": 79, "output_tokens": 1}


def test_done_marker_without_finish_reason_is_a_complete_answer(server, backend):
    server.script(Reply(body=sse(chunk({"content": "hi"}))))
    assert run(backend)[-1] == {"kind": "done", "stop_reason": "end_turn", "usage": ZERO}


def test_azure_leading_prompt_filter_chunk_is_neither_answer_nor_usage(server, backend):
    """Azure first sends a chunk with `choices: []`, an empty id and model and only
    `prompt_filter_results`; each choice then carries `content_filter_results`."""
    filtered = {"hate": {"filtered": False, "severity": "safe"}}
    body = sse(
        {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filtered}],
        },
        {
            "id": "chatcmpl-az",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "Capital", "role": "assistant"},
                    "finish_reason": None,
                    "content_filter_results": filtered,
                }
            ],
        },
        {
            "id": "chatcmpl-az",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "content_filter_results": {}}],
        },
        {
            "id": "chatcmpl-az",
            "choices": [],
            "usage": {
                "prompt_tokens": 15,
                "completion_tokens": 78,
                "completion_tokens_details": {"reasoning_tokens": 64},
                "prompt_tokens_details": {"cached_tokens": 4},
            },
        },
    )
    server.script(Reply(body=body))
    assert run(backend) == [
        {"kind": "text", "text": "Capital"},
        {
            "kind": "done",
            "stop_reason": "end_turn",
            "usage": {**ZERO, "input_tokens": 11, "output_tokens": 78, "cache_read_tokens": 4},
        },
    ]


def test_error_after_finish_keeps_the_finished_answer(server, backend):
    body = sse(
        chunk({"reasoning": "We need"}, "length"),
        {
            "id": "x",
            "error": {"code": 400, "message": "Token limit reached"},
            "choices": [],
            "usage": {"prompt_tokens": 43, "completion_tokens": 10},
        },
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert events[-1] == {
        "kind": "done",
        "stop_reason": "max_tokens",
        "usage": {**ZERO, "input_tokens": 43, "output_tokens": 10},
    }


# ------------------------------------------------------------------------------------------ tool arguments


@pytest.mark.parametrize(
    ("arguments", "expected_input", "error_part"),
    [
        ('{"city": "Par', {}, "not valid JSON"),
        ("", {}, None),
        ("[1, 2]", {}, "must be a JSON object"),
        ('"text"', {}, "must be a JSON object"),
        # Python's parser takes them, JSON has them not, and the call's part (a JSON column) could not be
        # stored: the turn ended "Something went wrong on our side" (a post's text can ask a model for them)
        ('{"city": NaN}', {}, "not valid JSON (NaN is not a JSON value)"),
        ('{"days": -Infinity}', {}, "not valid JSON (-Infinity is not a JSON value)"),
    ],
)
def test_tool_arguments_that_do_not_parse(server, backend, arguments, expected_input, error_part):
    server.script(Reply(body=sse(chunk(tool_delta(0, "call_1", "get_weather", arguments)), chunk({}, "tool_calls"))))
    (call,) = kinds(run(backend), "tool_use")
    assert call["input"] == expected_input
    if error_part is None:
        assert "input_error" not in call
    else:
        assert error_part in call["input_error"]


# ------------------------------------------------------------------------------------------ errors in the stream


def test_groq_event_error_mid_stream_raises_after_partial_reasoning(server, backend):
    error = {
        "error": {
            "message": "Tool call validation failed",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "status_code": 400,
        }
    }
    body = [
        *sse(chunk({"reasoning": "We"}), chunk({"reasoning": " need"}), done=False),
        f"event: error\ndata: {json.dumps(error)}\n\n",
    ]
    server.script(Reply(body=body))
    events, exc = collect_until_error(backend)
    assert text_of(events, "reasoning") == "We need"
    assert not exc.retryable
    assert "tool_use_failed" in str(exc)
    assert len(server.requests) == 1


def test_error_chunk_before_any_event_is_retried(server, backend, sleeps):
    error = {"error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}}
    server.script(Reply(body=sse(error)), Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"))))
    events = run(backend)
    assert text_of(events) == "ok"
    assert len(server.requests) == 2
    assert len(sleeps) == 1


def test_error_chunk_after_output_is_raised_and_not_retried(server, backend):
    error = {"error": {"message": "overloaded", "type": "overloaded_error", "code": 529}}
    server.script(Reply(body=sse(chunk({"content": "par"}), error)))
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "par"}]
    assert exc.retryable
    assert len(server.requests) == 1


def test_stream_cut_before_finish_is_retryable_and_never_retried_after_output(server, backend, sleeps):
    server.script(Reply(body=sse(chunk({"content": "Hal"}), done=False), cut=True))
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "Hal"}]
    assert exc.retryable
    assert isinstance(exc.__cause__, httpx.RemoteProtocolError)  # chained for the log, never raised
    assert len(server.requests) == 1 and sleeps == []


def test_body_that_ends_cleanly_before_finish_is_retryable(server, make_backend):
    server.script(Reply(body=sse(chunk({"role": "assistant"}), done=False)))
    events, exc = collect_until_error(make_backend(retries=0))
    assert events == [] and exc.retryable
    assert "ended before" in str(exc)


# ------------------------------------------------------------------------------------------ HTTP errors


def test_429_with_retry_after_then_success(server, backend, sleeps):
    limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    server.script(
        Reply(status=429, headers={"Retry-After": "7"}, body=json.dumps(limited)),
        Reply(body=sse(chunk({"content": "fine"}), chunk({}, "stop"))),
    )
    assert text_of(run(backend)) == "fine"
    assert len(server.requests) == 2
    assert sleeps == [7.0]
    assert server.requests[0].body == server.requests[1].body


def test_429_exhausting_retries_carries_retry_after(server, make_backend, sleeps):
    limited = json.dumps({"error": {"message": "slow down", "code": 429}})
    server.script(*[Reply(status=429, headers={"retry-after-ms": "1500"}, body=limited) for _ in range(2)])
    _, exc = collect_until_error(make_backend(retries=1))
    assert exc.retryable and exc.retry_after == 1.5
    assert "429" in str(exc) and "slow down" in str(exc)
    assert len(server.requests) == 2 and sleeps == [1.5]


def test_500_then_success(server, backend, sleeps):
    server.script(
        Reply(status=500, body='{"error": {"message": "boom", "type": "server_error"}}'),
        Reply(body=sse(chunk({"content": "recovered"}), chunk({}, "stop"))),
    )
    assert text_of(run(backend)) == "recovered"
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_400_context_length_exceeded(server, backend, sleeps):
    error = {
        "error": {
            "message": "This model's maximum context length is 4097 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    server.script(Reply(status=400, body=json.dumps(error)))
    _, exc = collect_until_error(backend)
    assert exc.context_too_long and not exc.retryable
    assert len(server.requests) == 1 and sleeps == []


def test_other_4xx_is_not_retryable_and_never_shows_the_key(server, backend):
    error = {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}
    server.script(Reply(status=401, body=json.dumps(error)))
    _, exc = collect_until_error(backend)
    assert not exc.retryable and not exc.context_too_long
    assert "401" in str(exc) and KEY not in str(exc) and "Bearer" not in str(exc)
    assert len(server.requests) == 1


def test_connection_refused_is_a_retryable_backend_error(sleeps):
    backend = OpenAIBackend(
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        api_key=KEY,
        first_event_timeout=2,
        event_timeout=2,
        retries=1,
        sleep=sleeps.append,
    )
    try:
        with pytest.raises(BackendError) as info:
            run(backend)
    finally:
        backend.close()
    assert info.value.retryable
    assert KEY not in str(info.value)
    assert len(sleeps) == 1  # one retry, then the error


def test_stall_past_the_event_timeout(server, make_backend):
    server.script(Reply(body=sse(chunk({"content": "partial"}), done=False), stall=5))
    backend = make_backend(first_event_timeout=0.3, event_timeout=0.3)
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "partial"}]
    # A timeout (the per-event watchdog's, or the socket's read timeout set to the same 0.3 s), not
    # the end of the stall, ended it: after the stall the body ends without [DONE], another error.
    assert str(exc) in (
        "The model server sent no event for 0.3 seconds.",
        "Timed out waiting for the model server (ReadTimeout).",
    )
    assert exc.retryable and len(server.requests) == 1


def test_keepalive_comments_do_not_hide_a_stall(server, make_backend):
    pings = [": keep-alive\n\n"] * 30
    server.script(Reply(body=[*sse(chunk({"content": "a"}), done=False), *pings], delay=0.05))
    backend = make_backend(first_event_timeout=5, event_timeout=0.4)
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "a"}]
    # Had the pings reset the timer, the body would have ended after the 30th without [DONE]: another error.
    assert str(exc) == "The model server sent no event for 0.4 seconds."
    request = server.requests[0]
    assert request.finished.wait(10)  # (the server's side of the request, once it noticed the hang-up)
    assert request.hung_up and request.pieces_sent < 1 + len(pings)  # the client left while pings still came


def test_first_event_timeout_before_any_event_is_retried(server, make_backend, sleeps):
    server.script(
        Reply(body=[": waiting\n\n"] * 20, delay=0.05),
        Reply(body=sse(chunk({"content": "late but fine"}), chunk({}, "stop"))),
    )
    events = run(make_backend(first_event_timeout=0.3, event_timeout=5))
    assert text_of(events) == "late but fine"
    assert len(server.requests) == 2 and len(sleeps) == 1


# ------------------------------------------------------------------------------------------ request translation


def test_full_neutral_history_translation(server, backend):
    png, pdf = b"\x89PNG\r\n\x1a\nfake", b"%PDF-1.7 fake"
    messages = [
        {"role": "user", "parts": [{"type": "text", "text": "Write a post."}]},
        {
            "role": "user",
            "parts": [
                {"type": "text", "text": "Use this picture"},
                {"type": "image", "media_type": "image/png", "data": png},
                {"type": "document", "media_type": "application/pdf", "name": "brief.pdf", "data": pdf},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "PRIVATE THOUGHTS", "signature": "sig"},
                {"type": "text", "text": "Creating it."},
                {"type": "tool_use", "id": "call_1", "name": "create_post", "input": {"title": "Été"}},
                {"type": "tool_use", "id": "call_2", "name": "tag_post", "input": {}},
            ],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": "call_1", "result": {"id": 5}, "status": "ok"},
                {"type": "tool_result", "tool_use_id": "call_2", "result": {"error": "no tags"}, "status": "error"},
            ],
        },
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "call_3", "name": "publish", "input": {"id": 5}}]},
        {"role": "tool", "parts": [{"type": "tool_result", "tool_use_id": "call_3", "result": {"ok": True}}]},
    ]
    server.script(Reply(body=sse(chunk({"content": "Done."}), chunk({}, "stop"))))
    run(backend, messages=messages, system="SYSTEM")
    (request,) = server.requests
    wire = request.body["messages"]
    assert wire[0] == {"role": "system", "content": "SYSTEM"}
    assert wire[1] == {"role": "user", "content": "Write a post."}
    assert wire[2]["role"] == "user"
    text, image, document = wire[2]["content"]
    assert text == {"type": "text", "text": "Use this picture"}
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
    }
    assert document["type"] == "text" and "brief.pdf" in document["text"]
    assert wire[3] == {
        "role": "assistant",
        "content": "Creating it.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "create_post", "arguments": '{"title": "Été"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "tag_post", "arguments": "{}"}},
        ],
    }
    assert wire[4] == {"role": "tool", "tool_call_id": "call_1", "content": '{"id": 5}'}
    assert wire[5] == {"role": "tool", "tool_call_id": "call_2", "content": '{"error": "no tags"}'}
    assert wire[6]["content"] is None and wire[6]["tool_calls"][0]["id"] == "call_3"
    assert wire[7] == {"role": "tool", "tool_call_id": "call_3", "content": '{"ok": true}'}
    assert len(wire) == 8
    assert b"PRIVATE THOUGHTS" not in request.raw and "tools" not in request.body


def test_unknown_part_type_is_refused_before_any_request(server, backend):
    messages = [{"role": "user", "parts": [{"type": "hologram", "data": b""}]}]
    with pytest.raises(BackendError, match="hologram"):
        run(backend, messages=messages)
    assert server.requests == []


def test_check_reports_bad_base_url(make_backend):
    assert make_backend().check() == []
    problems = make_backend(base_url="ftp://example.com/v1").check()
    assert len(problems) == 1 and "OPENAI_BASE_URL" in problems[0]
    assert make_backend(base_url="https://api.openai.com/v1", api_key="").check() == [
        "OPENAI_API_KEY is not set, and api.openai.com needs one."
    ]


def test_defaults_come_from_settings(settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1/"
    settings.OPENAI_API_KEY = "sk-from-settings"
    settings.AGENT_FIRST_EVENT_TIMEOUT_SECONDS = 11.0
    settings.AGENT_EVENT_TIMEOUT_SECONDS = 7.0
    settings.AGENT_RETRIES = 4
    backend = OpenAIBackend()
    try:
        assert (
            backend.base_url,
            backend.api_key,
            backend.first_event_timeout,
            backend.event_timeout,
            backend.retries,
        ) == ("http://127.0.0.1:9/v1", "sk-from-settings", 11.0, 7.0, 4)
        assert backend._client.timeout.read == 11.0 and backend._client.timeout.connect == 10.0
    finally:
        backend.close()


# ------------------------------------------------------------------------------------------ the pure parser


def test_iter_sse_joins_multiline_data_and_reads_fields():
    body = b': hello\r\nevent: error\r\ndata: {"a":\r\ndata: 1}\r\nid: 3\r\n\r\ndata:x\n\ndata: tail-without-blank'
    assert list(iter_sse([body])) == [
        SSEEvent("", "hello", comment=True),
        SSEEvent("error", '{"a":\n1}'),
        SSEEvent("message", "x"),
        SSEEvent("message", "tail-without-blank"),
    ]


def _body(items: list[tuple[str, str]], newline: str) -> bytes:
    lines: list[str] = []
    for kind, value in items:
        if kind == "comment":
            lines.append(f": {value}{newline}{newline}")
            continue
        delta = {"reasoning_content": value} if kind == "reasoning" else {"content": value}
        if kind == "args":
            delta = tool_delta(0, "call_p", "fn", value)
        lines.append(f"data: {json.dumps(chunk(delta), ensure_ascii=False)}{newline}{newline}")
    lines.append(f"data: {json.dumps(chunk({}, 'stop'))}{newline}{newline}")
    lines.append(f"data: {json.dumps(usage_chunk(9, 4, cached=2))}{newline}{newline}data: [DONE]{newline}{newline}")
    return "".join(lines).encode()


ITEMS = st.lists(
    st.tuples(st.sampled_from(["text", "reasoning", "comment", "args"]), st.text(min_size=1, max_size=12)),
    max_size=12,
).map(lambda items: [(k, v.replace("\r", " ").replace("\n", " ")) if k == "comment" else (k, v) for k, v in items])


@hypothesis_settings(max_examples=150, deadline=None)
@given(items=ITEMS, newline=st.sampled_from(["\n", "\r\n"]), data=st.data())
def test_any_split_of_a_body_yields_the_same_events(items, newline, data):
    body = _body(items, newline)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=20)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    whole = list(parse_stream([body]))
    assert list(parse_stream(pieces)) == whole
    assert list(parse_stream([bytes([b]) for b in body])) == whole
    assert text_of(whole) == "".join(v for k, v in items if k == "text")
    assert text_of(whole, "reasoning") == "".join(v for k, v in items if k == "reasoning")
    assert whole[-1]["usage"] == {
        "input_tokens": 7,
        "output_tokens": 4,
        "cache_read_tokens": 2,
        "cache_write_tokens": 0,
    }


def test_reasoning_models_get_max_completion_tokens():
    backend = OpenAIBackend(base_url="http://127.0.0.1:9/v1", api_key="k")
    try:
        for model, key in [
            ("o3", "max_completion_tokens"),
            ("gpt-5-mini", "max_completion_tokens"),
            ("openai/o4-mini", "max_completion_tokens"),
            ("gpt-4o-mini", "max_tokens"),
            ("qwen2.5:7b", "max_tokens"),
        ]:
            body = backend.request_body(system="", messages=[], tools=[], model=model, inference={"max_tokens": 99})
            assert body[key] == 99
            assert ({"max_tokens", "max_completion_tokens"} - {key}).isdisjoint(body)
    finally:
        backend.close()


# ------------------------------------------------------------------------------- provider state


def test_gemini_thought_signature_on_the_first_of_parallel_calls_goes_back_on_that_call(server, backend):
    signed = {"extra_content": {"google": {"thought_signature": "CtEBAdHtim9"}}}
    first = {**tool_delta(0, "function-call-1", "get_weather", '{"city":"Paris"}')["tool_calls"][0], **signed}
    second = tool_delta(1, "function-call-2", "get_weather", '{"city":"Rome"}')["tool_calls"][0]
    server.script(Reply(body=sse(chunk({"role": "assistant", "tool_calls": [first, second]}), chunk({}, "tool_calls"))))
    calls = kinds(run(backend, tools=TOOLS), "tool_use")
    assert [c.get("provider_data") for c in calls] == [signed, None]

    history = [
        *USER,
        {"role": "assistant", "parts": [{"type": "tool_use", **{k: c[k] for k in c if k != "kind"}} for c in calls]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": c["id"], "result": {"t": 20}, "status": "ok"} for c in calls
            ],
        },
    ]
    server.script(Reply(body=sse(chunk({"content": "Warm."}), chunk({}, "stop"))))
    run(backend, messages=history, tools=TOOLS)
    sent = server.requests[1].body["messages"][2]["tool_calls"]
    assert sent[0]["extra_content"] == signed["extra_content"]
    assert "extra_content" not in sent[1]


def test_deepseek_reasoning_content_goes_back_only_within_the_current_turn(server, backend):
    def assistant(reasoning: str, call_id: str) -> dict:
        state = {"provider_data": {"field": "reasoning_content"}}
        return {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": reasoning, **state},
                {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {}},
            ],
        }

    def result(call_id: str) -> dict:
        return {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": call_id, "result": {}, "status": "ok"}],
        }

    history = [*USER, assistant("Earlier.", "c1"), result("c1"), *USER, assistant("Now.", "c2"), result("c2")]
    server.script(Reply(body=sse(chunk({"content": "Ok."}), chunk({}, "stop"))))
    run(backend, messages=history, tools=TOOLS)
    sent = [m for m in server.requests[0].body["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in sent] == [None, "Now."]


def test_openrouter_reasoning_details_are_joined_per_index_with_their_signature(server, backend):
    pieces = [
        [{"type": "reasoning.text", "text": "", "signature": "", "format": "anthropic-claude-v1", "index": 0}],
        [{"type": "reasoning.text", "text": "Two and ", "format": "anthropic-claude-v1", "index": 0}],
        [{"type": "reasoning.text", "text": "two.", "format": "anthropic-claude-v1", "index": 0}],
        [{"type": "reasoning.text", "signature": "EtOBCkgI==", "format": "anthropic-claude-v1", "index": 0}],
    ]
    deltas = [{"content": "", "reasoning": p[0].get("text") or None, "reasoning_details": p} for p in pieces]
    server.script(Reply(body=sse(*[chunk(d) for d in deltas], chunk({"content": "4"}), chunk({}, "stop"))))
    events = run(backend)
    assert text_of(events, "reasoning") == "Two and two."
    state = [e for e in events if e.get("provider_data")]
    assert state == [
        {
            "kind": "reasoning",
            "text": "",
            "provider_data": {
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "Two and two.",
                        "signature": "EtOBCkgI==",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ]
            },
        }
    ]


# ------------------------------------------------------------------------------- every finish classified


@pytest.mark.parametrize("finish", ["insufficient_system_resource", "abort", "something_new"])
def test_a_finish_reason_not_understood_is_incomplete_never_end_turn(server, backend, finish):
    server.script(Reply(body=sse(chunk({"content": "The answer is"}), chunk({}, finish))))
    events = run(backend)
    assert events[-1]["stop_reason"] == "incomplete"


def test_a_lone_finish_reason_error_before_output_is_retried(server, backend, sleeps):
    server.script(
        Reply(body=sse(chunk({"role": "assistant", "content": ""}), chunk({}, "error"))),
        Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"))),
    )
    assert text_of(run(backend)) == "ok"
    assert len(server.requests) == 2


def test_a_lone_finish_reason_error_after_output_is_an_error_not_end_turn(server, backend, sleeps):
    server.script(Reply(body=sse(chunk({"content": "Half an ans"}), chunk({}, "error"))))
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "Half an ans"}]
    assert exc.retryable and len(server.requests) == 1


def test_http_200_with_a_whole_json_completion(server, backend):
    completion = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Checking.",
                    "reasoning_content": "Weather needs the tool.",
                    "tool_calls": [
                        {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9},
    }
    server.script(Reply(body=json.dumps(completion), headers={"Content-Type": "application/json"}))
    events = run(backend, tools=TOOLS)
    assert events == [
        {"kind": "reasoning", "text": "Weather needs the tool."},
        {"kind": "text", "text": "Checking."},
        {"kind": "reasoning", "text": "", "provider_data": {"field": "reasoning_content"}},
        {"kind": "tool_use", "id": "call_w1", "name": "get_weather", "input": {}},
        {"kind": "done", "stop_reason": "tool_use", "usage": {**ZERO, "input_tokens": 20, "output_tokens": 9}},
    ]
    assert len(server.requests) == 1


def test_http_200_with_a_json_error_is_raised_at_once(server, backend, sleeps):
    error = {"error": {"message": "Invalid model id", "type": "invalid_request_error", "code": 400}}
    server.script(Reply(body=json.dumps(error), headers={"Content-Type": "application/json"}))
    _, exc = collect_until_error(backend)
    assert "Invalid model id" in str(exc) and "ended before" not in str(exc)
    assert not exc.retryable
    assert len(server.requests) == 1 and sleeps == []


def test_429_insufficient_quota_is_not_retried(server, backend, sleeps):
    error = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server.script(Reply(status=429, body=json.dumps(error)))
    _, exc = collect_until_error(backend)
    assert not exc.retryable
    assert len(server.requests) == 1 and sleeps == []


def test_a_retry_after_past_the_cap_is_not_retried_early(server, backend, sleeps, settings):
    settings.AGENT_MAX_RETRY_WAIT_SECONDS = 30
    limited = json.dumps({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    server.script(Reply(status=429, headers={"Retry-After": "60"}, body=limited))
    _, exc = collect_until_error(backend)
    assert exc.retryable and exc.retry_after == 60.0  # the person may try again; we do not, early
    assert len(server.requests) == 1 and sleeps == []


def test_a_retry_after_within_the_cap_is_waited_in_full(server, backend, sleeps, settings):
    settings.AGENT_MAX_RETRY_WAIT_SECONDS = 30
    limited = json.dumps({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    server.script(
        Reply(status=429, headers={"Retry-After": "25"}, body=limited),
        Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"))),
    )
    assert text_of(run(backend)) == "ok"
    assert sleeps == [25.0]  # not cut to a shorter backoff


def test_openrouter_429_waits_until_its_rate_limit_resets(server, backend, sleeps, settings, monkeypatch):
    """OpenRouter answers a rate limit with `X-RateLimit-Reset` (epoch milliseconds), not `Retry-After`."""
    settings.AGENT_MAX_RETRY_WAIT_SECONDS = 30
    monkeypatch.setattr("agent.backends.http.time.time", lambda: 1_754_667_640.0)
    limited = json.dumps({"error": {"message": "Rate limit exceeded: limit_rpm/…", "code": 429}})
    headers = {"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1754667660000"}
    server.script(
        Reply(status=429, headers=headers, body=limited),
        Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"))),
    )
    assert text_of(run(backend)) == "ok"
    assert sleeps == [20.0]  # until the reset, not the adapter's own shorter backoff


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"x-ratelimit-reset": "1000000020"}, 20.0),  # epoch seconds
        ({"x-ratelimit-reset": "1000000020000"}, 20.0),  # epoch milliseconds
        ({"x-ratelimit-reset": "12"}, 12.0),  # seconds from now
        ({"x-ratelimit-reset": "999999000000"}, 0.0),  # already past
        ({"x-ratelimit-reset": "6m0s"}, None),  # not a number: the adapter's own backoff
        ({"x-ratelimit-reset": "inf"}, None),
        ({"x-ratelimit-reset": "-5"}, None),
        ({"retry-after": "3", "x-ratelimit-reset": "1000000020"}, 3.0),  # Retry-After wins
        ({}, None),
    ],
)
def test_retry_after_reads_the_rate_limit_reset_when_there_is_no_retry_after(headers, wait, monkeypatch):
    monkeypatch.setattr("agent.backends.http.time.time", lambda: 1_000_000_000.0)
    assert retry_after(httpx.Headers(headers)) == wait


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (  # llama.cpp server
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 9000,
                    "n_ctx": 8192,
                }
            },
        ),
        (  # Gemini's OpenAI-compatible endpoint: a list
            400,
            [
                {
                    "error": {
                        "code": 400,
                        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ],
        ),
        (  # Anthropic-style, through a compatible gateway
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 210000 tokens > 200000 maximum",
                },
            },
        ),
    ],
)
def test_context_overflow_is_recognised_in_each_dialect(server, backend, sleeps, status, body):
    server.script(Reply(status=status, body=json.dumps(body)))
    _, exc = collect_until_error(backend)
    assert exc.context_too_long and not exc.retryable
    assert len(server.requests) == 1


def test_a_reasoning_model_by_setting_gets_max_completion_tokens(server, make_backend, settings):
    settings.AGENT_MODEL_REASONING = True
    server.script(Reply(body=sse(chunk({"content": "ok"}), chunk({}, "stop"))))
    list(make_backend().stream(system="", messages=USER, tools=[], model="prod-chat", inference={"max_tokens": 50}))
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_the_between_event_timeout_holds_when_the_first_event_timeout_is_longer(server, make_backend, sleeps):
    server.script(Reply(body=sse(chunk({"content": "partial"}), done=False), stall=20))
    backend = make_backend(first_event_timeout=30, event_timeout=0.3, retries=0)
    events, exc = collect_until_error(backend)
    assert events == [{"kind": "text", "text": "partial"}]
    assert "no event for 0.3 seconds" in str(exc) and exc.retryable


# ------------------------------------------------------------------------------------------ the key as operators set it


@pytest.mark.parametrize("pasted", [KEY + "\n", KEY + "\r\n", f"  {KEY} "])
def test_a_key_pasted_with_a_line_break_or_spaces_is_sent_trimmed(server, make_backend, pasted):
    """A key from a secrets file or a CRLF `.env` ends in a line break: sent as it is, it made httpx refuse
    the header, and the refusal, key and all, went to the log."""
    server.script(Reply(body=sse(chunk({"content": "Hi"}, "stop"))))
    events = run(make_backend(api_key=pasted))
    assert text_of(events) == "Hi"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_key_no_api_has_is_refused_by_check_and_a_call_fails_calmly(server, make_backend):
    """A typographic quote pasted around the key, or a space inside it: `manage.py check` says so without
    echoing the key; a call with a non-ASCII key fails as a BackendError, not an encoding error escaping
    the adapter."""
    sentence = (
        "OPENAI_API_KEY holds a space, a control character or a non-ASCII character (such as a typographic "
        "quote), which no API key has: set the key alone."
    )
    assert make_backend(api_key=f"sk-test {KEY}").check() == [sentence]
    quoted = make_backend(api_key=f"\u201c{KEY}\u201d")
    assert quoted.check() == [sentence]
    _, exc = collect_until_error(quoted)
    assert not exc.retryable and KEY not in str(exc)
    assert server.requests == []


def test_scrub_removes_the_key_however_an_error_quotes_it():
    """httpx quotes a refused header as bytes (`b'Bearer sk-…\\t…'`): the escaped key is scrubbed too."""
    from agent.backends.http import scrub

    key = "sk-a\tb\u201c"
    for quoted in (key, repr(key)[1:-1], repr(f"Bearer {key}".encode())):
        assert "sk-a" not in scrub(f"Illegal header value {quoted}.", key)


def test_a_placeholder_key_is_scrubbed_only_where_it_stands_alone():
    """A local server takes any key, and people give it `x` or `ollama`: the error text keeps its other
    x's and words (it used to read "[redacted]" for every x), and the key itself is still scrubbed."""
    from agent.backends.http import scrub

    text = "Could not call the model server (ConnectError: max retries exceeded with /v1/x-files): key x."
    assert scrub(text, "x") == (
        "Could not call the model server (ConnectError: max retries exceeded with /v1/x-files): key [redacted]."
    )
    assert (
        scrub("Bearer ollama was refused by ollama-server", "ollama")
        == "Bearer [redacted] was refused by ollama-server"
    )
    real = "sk-proj-" + "a1B2" * 10  # a real key is scrubbed wherever it occurs, even inside other text
    assert scrub(f"token={real}xyz and url/{real}", real) == "token=[redacted]xyz and url/[redacted]"


# ------------------------------------------------------------------------------------------ a base URL that is not the API's


def test_an_html_page_where_the_stream_should_be_names_the_url_and_is_not_retried(server, make_backend):
    """A base URL that reaches a web site or a proxy's landing page (not the API) answers 200 with HTML: the
    log says so and where, instead of "the stream ended before the answer", and nothing is retried."""
    page = "<!doctype html><html><head><title>Welcome to nginx!</title></head><body>Hi</body></html>"
    server.script(Reply(body=page, headers={"Content-Type": "text/html; charset=utf-8"}))
    backend = make_backend()
    _, exc = collect_until_error(backend)
    assert str(exc) == (
        f"The model server answered HTTP 200 with an HTML page (Welcome to nginx!), not an event stream, at "
        f"{server.url}/chat/completions: is OPENAI_BASE_URL the API's address?"
    )
    assert not exc.retryable and len(server.requests) == 1


def test_a_404_names_the_url_it_was_sent_to(server, make_backend):
    """Ollama without `/v1` answers `404 page not found`: the log line names the URL, so the missing part shows."""
    server.script(Reply(status=404, body="404 page not found", headers={"Content-Type": "text/plain"}))
    _, exc = collect_until_error(make_backend())
    assert str(exc) == f"Model server HTTP 404 at {server.url}/chat/completions: 404 page not found"
    assert not exc.retryable


def test_check_refuses_a_base_url_that_already_names_the_endpoint(make_backend):
    assert make_backend(base_url="http://127.0.0.1:11434/v1/chat/completions").check() == [
        "OPENAI_BASE_URL names the endpoint: the backend adds /chat/completions itself, so set it to "
        "http://127.0.0.1:11434/v1."
    ]


def test_a_proxy_s_html_error_page_is_logged_by_its_title(server, make_backend):
    page = (
        "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>"
    )
    server.script(Reply(status=502, body=page, headers={"Content-Type": "text/html"}))
    _, exc = collect_until_error(make_backend(retries=0))
    assert str(exc) == f"Model server HTTP 502 at {server.url}/chat/completions: 502 Bad Gateway (an HTML page)"
    assert exc.retryable


@pytest.mark.parametrize("tail", ["\n", " ", "/\r\n"])
def test_a_base_url_with_a_line_break_or_space_after_it_is_trimmed(server, make_backend, tail):
    """A CRLF `.env` leaves `\\r` at the end of the URL: httpx refused it (InvalidURL), and a space went
    into the path (`/v1%20/chat/completions`, a 404)."""
    server.script(Reply(body=sse(chunk({"content": "Hi"}, "stop"))))
    backend = make_backend(base_url=server.url + tail)
    assert backend.check() == []
    assert text_of(run(backend)) == "Hi"
    assert server.requests[0].path == "/v1/chat/completions"


def test_a_redirect_names_where_it_points_and_is_not_retried(server, make_backend):
    """`http://` for a server that redirects to `https://` (POSTs are not followed): the log says where to."""
    server.script(
        Reply(
            status=301,
            body="<html><head><title>301 Moved Permanently</title></head></html>",
            headers={"Content-Type": "text/html", "Location": "https://api.example.com/v1/chat/completions"},
        )
    )
    _, exc = collect_until_error(make_backend())
    assert str(exc) == (
        f"The model server at {server.url}/chat/completions redirects to https://api.example.com/v1/chat/completions "
        "(HTTP 301): set OPENAI_BASE_URL to the address it redirects to, without /chat/completions."
    )
    assert not exc.retryable and len(server.requests) == 1


def test_azure_s_prompt_filter_is_a_content_filtered_answer_not_a_failure(server, backend, caplog):
    """Azure refuses a prompt its content filter flags with HTTP 400 `content_filter`: that is the model's answer
    withheld (the page says a content filter stopped it), not a failure the person is told to try again."""
    error = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
            "policy. Please modify your prompt and retry.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {"hate": {"filtered": True}},
            },
        }
    }
    server.script(Reply(status=400, body=json.dumps(error)))
    with caplog.at_level("WARNING", logger="agent.backends"):
        assert run(backend) == [{"kind": "done", "stop_reason": "content_filtered", "usage": ZERO}]
    assert len(server.requests) == 1
    assert "content filter" in caplog.text and "HTTP 400" in caplog.text


@pytest.mark.parametrize(
    "url, host",
    [
        ("https://openrouter.ai/api/v1", "openrouter.ai"),
        ("https://generativelanguage.googleapis.com/v1beta/openai", "generativelanguage.googleapis.com"),
        ("https://my-team.openai.azure.com/openai/v1", "my-team.openai.azure.com"),
    ],
)
def test_check_says_a_hosted_api_needs_a_key(make_backend, url, host):
    """The README's OpenRouter recipe with the key forgotten: every first message failed with a 401."""
    assert make_backend(base_url=url, api_key="").check() == [f"OPENAI_API_KEY is not set, and {host} needs one."]
    assert make_backend(base_url="http://10.0.0.5:8000/v1", api_key="").check() == []  # (a vLLM without a key)


@pytest.mark.parametrize(
    "backend_class, path", [(OpenAIBackend, "/chat/completions"), (OpenAIResponsesBackend, "/responses")]
)
def test_a_project_that_names_no_base_url_calls_openais_own_api(settings, backend_class, path):
    """OPENAI_BASE_URL defaults to OpenAI's API (docs/engine.md, "Settings") in a project whose settings
    do not name it. config/settings.py always names it, so only the engine's own settings showed it missing."""
    if hasattr(settings, "OPENAI_BASE_URL"):
        del settings.OPENAI_BASE_URL
    backend = backend_class()
    assert backend.url() == f"https://api.openai.com/v1{path}"
    assert backend.pdf_files is True  # ("auto": OpenAI's own API takes PDFs as files)
