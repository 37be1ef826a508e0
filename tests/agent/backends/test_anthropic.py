"""AnthropicBackend against a real loopback HTTP server speaking the Messages API's streamed events."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agent.backends.anthropic import AnthropicBackend
from agent.exceptions import BackendError
from tests.agent.backends.anthropic_server import (
    Reply,
    ScriptedAnthropicServer,
    block,
    error_body,
    events,
    message_end,
    message_start,
    text_block,
)

BACKEND = AnthropicBackend
SERVER = ScriptedAnthropicServer
KEY = "sk-ant-test-SECRET-0123456789"
MODEL = "claude-sonnet-4-5"
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]
TOOLS = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": {"type": "object"}}]


def run(backend: AnthropicBackend, *, messages=None, tools=None, system="Be brief.", inference=None):
    return list(
        backend.stream(system=system, messages=messages or USER, tools=tools or [], model=MODEL, inference=inference)
    )


def collect_until_error(backend: AnthropicBackend) -> tuple[list[dict], BackendError]:
    seen: list[dict] = []
    with pytest.raises(BackendError) as info:
        for event in backend.stream(system="", messages=USER, tools=[], model=MODEL):
            seen.append(event)
    return seen, info.value


def answer(*payloads: Any, **reply: Any) -> Reply:
    flat: list[dict] = []
    for item in payloads:
        flat.extend(item if isinstance(item, list) else [item])
    return Reply(body=events(*flat), **reply)


def usage(i: int = 0, o: int = 0, r: int = 0, w: int = 0) -> dict:
    return {"input_tokens": i, "output_tokens": o, "cache_read_tokens": r, "cache_write_tokens": w}


def test_text_with_usage_and_the_request_it_sent(server, make_backend):
    server.script(
        answer(
            message_start(21, cache_read=300, cache_write=40), text_block(0, "Hel", "lo!"), message_end("end_turn", 7)
        )
    )
    events_ = run(make_backend(), inference={"max_tokens": 300, "temperature": 0.2, "stop": ["END"]})
    assert events_ == [
        {"kind": "text", "text": "Hel"},
        {"kind": "text", "text": "lo!"},
        {"kind": "done", "stop_reason": "end_turn", "usage": usage(21, 7, 300, 40)},
    ]
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {
        "model": MODEL,
        "max_tokens": 300,
        "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hello", "cache_control": {"type": "ephemeral"}}]}
        ],
        "temperature": 0.2,
        "stop_sequences": ["END"],
    }


def test_tool_use_input_arrives_in_json_fragments(server, make_backend):
    fragments = ['{"ci', 'ty": "Par', 'is"}']
    server.script(
        answer(
            message_start(),
            text_block(0, "Checking."),
            block(
                1,
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}},
                *[{"type": "input_json_delta", "partial_json": f} for f in ["", *fragments]],
            ),
            message_end("tool_use"),
        )
    )
    events_ = run(make_backend(), tools=TOOLS)
    assert events_[1] == {"kind": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}
    assert events_[-1]["stop_reason"] == "tool_use"
    assert server.requests[0].body["tools"] == [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}]


def test_bad_tool_json_is_an_input_error(server, make_backend):
    start = {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {}}
    server.script(
        answer(
            message_start(),
            block(0, start, {"type": "input_json_delta", "partial_json": '{"city": '}),
            message_end("tool_use"),
        )
    )
    (call, _) = run(make_backend(), tools=TOOLS)
    assert call["input"] == {} and call["input_error"].startswith("The tool input is not valid JSON")


SIGNATURE = "EqQBCkgIARABGAIiQL=="
REDACTED = base64.b64encode(b"encrypted by the provider").decode()


def thinking_answer() -> Reply:
    return answer(
        message_start(),
        block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Weather needs "},
            {"type": "thinking_delta", "thinking": "the tool."},
            {"type": "signature_delta", "signature": SIGNATURE},
        ),
        block(1, {"type": "redacted_thinking", "data": REDACTED}),
        block(2, {"type": "tool_use", "id": "toolu_01C", "name": "get_weather", "input": {}}),
        message_end("tool_use"),
    )


def test_thinking_with_signature_and_redacted_thinking_are_kept_and_sent_back(server, make_backend, settings):
    settings.AGENT_REASONING = "low"
    server.script(thinking_answer())
    backend = make_backend()
    events_ = run(backend, tools=TOOLS)
    assert events_[:4] == [
        {"kind": "reasoning", "text": "Weather needs "},
        {"kind": "reasoning", "text": "the tool."},
        {"kind": "reasoning", "text": "", "signature": SIGNATURE},
        {"kind": "reasoning", "text": "", "provider_data": {"redacted": REDACTED}},
    ]
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}

    history = [
        *USER,
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "Weather needs the tool.", "signature": SIGNATURE},
                {"type": "reasoning", "text": "", "provider_data": {"redacted": REDACTED}},
                {"type": "tool_use", "id": "toolu_01C", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": "toolu_01C", "result": {"t": 21}, "status": "ok"}],
        },
    ]
    server.script(answer(message_start(), text_block(0, "21 degrees."), message_end("end_turn")))
    run(backend, messages=history, tools=TOOLS)
    assistant, results = server.requests[1].body["messages"][1:]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Weather needs the tool.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "tool_use", "id": "toolu_01C", "name": "get_weather", "input": {}},
    ]
    assert results["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01C",
            "content": '{"t": 21}',
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_an_answer_stopped_after_its_thinking_goes_back_without_it(server, backend):
    """Stopped while the model had only thought (or thought again after its text): the API refuses an
    assistant message whose final block is thinking, so that thinking stays out, and an answer that
    was only thinking goes back as nothing."""
    thought = {"type": "reasoning", "text": "Hmm.", "signature": SIGNATURE}
    history = [
        {"role": "user", "parts": [{"type": "text", "text": "Think first"}]},
        {
            "role": "assistant",
            "parts": [thought, {"type": "reasoning", "text": "", "provider_data": {"redacted": REDACTED}}],
        },
        {"role": "user", "parts": [{"type": "text", "text": "Then answer"}]},
        {"role": "assistant", "parts": [thought, {"type": "text", "text": "Well,"}, thought]},
        {"role": "user", "parts": [{"type": "text", "text": "Go on"}]},
    ]
    server.script(answer(message_start(), text_block(0, "Done."), message_end("end_turn")))
    run(backend, messages=history)
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[0]["content"]] == [
        "text",
        "text",
    ]  # the two asks, the bare thought between them gone
    assert [b["type"] for b in sent[1]["content"]] == ["thinking", "text"]


@pytest.mark.parametrize("reasoning", ["off", "low"])
def test_a_model_that_binds_its_thinking_may_drop_a_block_whose_prefix_changed(
    server, make_backend, settings, reasoning
):
    """Opus 5.5 refuses a thinking block sent back after what came before it changed; our chats change
    it (summaries, tools a narrowed grant offers), so every request lets it drop such blocks instead."""
    settings.AGENT_REASONING = reasoning
    server.script(answer(message_start(), text_block(0, "Hi."), message_end("end_turn")))
    list(make_backend().stream(system="s", messages=USER, tools=TOOLS, model="claude-opus-5-5", inference=None))
    request = server.requests[0]
    assert request.body["thinking"]["type"] == "adaptive"
    assert request.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert request.headers["anthropic-beta"] == "thinking-binding-controls-2026-08-01"
    assert ("output_config" in request.body) is (reasoning != "off")


def test_a_model_that_does_not_bind_its_thinking_is_sent_no_binding(server, make_backend, settings):
    settings.AGENT_REASONING = "low"
    server.script(answer(message_start(), text_block(0, "Hi."), message_end("end_turn")))
    list(make_backend().stream(system="s", messages=USER, tools=TOOLS, model="claude-sonnet-5", inference=None))
    request = server.requests[0]
    assert "block_binding" not in request.body["thinking"] and "anthropic-beta" not in request.headers


def test_adaptive_thinking_of_a_current_claude_with_its_text_omitted_goes_back_unchanged(
    server, make_backend, settings
):
    """Sonnet 5 and later think adaptively: asked with an effort (a budget is a 400 there), and a
    thinking block whose text the API left out (its default display) is still kept and sent back."""
    settings.AGENT_REASONING = "medium"
    server.script(
        answer(
            message_start(),
            block(
                0,
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "signature_delta", "signature": SIGNATURE},
            ),
            block(1, {"type": "tool_use", "id": "toolu_01D", "name": "get_weather", "input": {}}),
            message_end("tool_use"),
        )
    )
    backend = make_backend()
    events_ = list(backend.stream(system="s", messages=USER, tools=TOOLS, model="claude-sonnet-5", inference=None))
    assert events_[0] == {"kind": "reasoning", "text": "", "signature": SIGNATURE}
    body = server.requests[0].body
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "medium"}
    history = [
        *USER,
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "", "signature": SIGNATURE},
                {"type": "tool_use", "id": "toolu_01D", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": "toolu_01D", "result": {"t": 21}, "status": "ok"}],
        },
    ]
    server.script(answer(message_start(), text_block(0, "21 degrees."), message_end("end_turn")))
    list(backend.stream(system="s", messages=history, tools=TOOLS, model="claude-sonnet-5", inference=None))
    assistant = server.requests[1].body["messages"][1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "", "signature": SIGNATURE}
    assert server.requests[1].body["thinking"]["type"] == "adaptive"


def test_sonnet_5_5_with_reasoning_off_thinks_only_between_tools_and_its_notes_show(server, make_backend, settings):
    """Sonnet 5.5 refuses `"disabled"`; `between_tools` is its lowest setting. Its progress note between
    tool calls comes as a thinking block with text: it streams as reasoning (the page shows it) and goes
    back unchanged on the next call of the loop."""
    settings.AGENT_REASONING = "off"
    note = "Checking the weather in Lisbon first."
    server.script(
        answer(
            message_start(),
            block(
                0,
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": note},
                {"type": "signature_delta", "signature": SIGNATURE},
            ),
            block(1, {"type": "tool_use", "id": "toolu_01E", "name": "get_weather", "input": {}}),
            message_end("tool_use"),
        )
    )
    backend = make_backend()
    events_ = list(backend.stream(system="s", messages=USER, tools=TOOLS, model="claude-sonnet-5-5", inference=None))
    assert events_[:2] == [
        {"kind": "reasoning", "text": note},
        {"kind": "reasoning", "text": "", "signature": SIGNATURE},
    ]
    first = server.requests[0].body
    assert first["thinking"] == {"type": "between_tools", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    assert "output_config" not in first
    history = [
        *USER,
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": note, "signature": SIGNATURE},
                {"type": "tool_use", "id": "toolu_01E", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": "toolu_01E", "result": {"t": 21}, "status": "ok"}],
        },
    ]
    server.script(answer(message_start(), text_block(0, "21 degrees."), message_end("end_turn")))
    list(backend.stream(system="s", messages=history, tools=TOOLS, model="claude-sonnet-5-5", inference=None))
    second = server.requests[1].body
    assert second["messages"][1]["content"][0] == {"type": "thinking", "thinking": note, "signature": SIGNATURE}
    assert second["thinking"]["type"] == "between_tools"


def test_images_and_pdf_documents(server, make_backend):
    png, pdf = b"\x89PNG\r\n\x1a\nfake", b"%PDF-1.7 fake"
    parts = [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "media_type": "image/png", "data": png},
        {"type": "document", "media_type": "application/pdf", "name": "report.pdf", "data": pdf},
    ]
    server.script(answer(message_start(), text_block(0, "A chart."), message_end("end_turn")))
    run(make_backend(prompt_caching=False), messages=[{"role": "user", "parts": parts}])
    assert server.requests[0].body["messages"][0]["content"] == [
        {"type": "text", "text": "What is in these?"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()},
            "title": "report.pdf",
        },
    ]


@pytest.mark.parametrize(
    ("wire", "neutral"),
    [
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
        ("pause_turn", "incomplete"),
        ("model_context_window_exceeded", "max_tokens"),
        ("something_new", "incomplete"),
        (None, "incomplete"),
    ],
)
def test_stop_reasons(server, make_backend, wire, neutral):
    server.script(answer(message_start(), text_block(0, "Well"), message_end(wire)))
    assert run(make_backend())[-1]["stop_reason"] == neutral


def test_error_event_mid_stream_is_raised_and_not_retried_after_output(server, make_backend, sleeps):
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(
        answer(message_start(), block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Par"}), error)
    )
    seen, exc = collect_until_error(make_backend())
    assert seen == [{"kind": "text", "text": "Par"}]
    assert exc.retryable and "overloaded_error" in str(exc)
    assert len(server.requests) == 1 and sleeps == []


def test_overloaded_before_output_is_retried(server, make_backend, sleeps):
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(
        answer(message_start(), {"type": "ping"}, error),
        answer(message_start(), text_block(0, "Back."), message_end("end_turn")),
    )
    assert run(make_backend())[0] == {"kind": "text", "text": "Back."}
    assert len(server.requests) == 2 and len(sleeps) == 1


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit_error"), (529, "overloaded_error")])
def test_429_and_529_honour_retry_after(server, make_backend, sleeps, status, kind):
    server.script(
        Reply(status=status, headers={"retry-after": "4"}, body=error_body(kind, "Slow down")),
        answer(message_start(), text_block(0, "ok"), message_end("end_turn")),
    )
    assert run(make_backend())[0]["text"] == "ok"
    assert sleeps == [4.0]


def test_prompt_too_long_is_a_context_overflow(server, make_backend, sleeps):
    message = "prompt is too long: 210417 tokens > 200000 maximum"
    server.script(Reply(status=400, body=error_body("invalid_request_error", message)))
    _, exc = collect_until_error(make_backend())
    assert exc.context_too_long and not exc.retryable and sleeps == []


def test_the_key_never_reaches_an_error(server, make_backend):
    server.script(Reply(status=401, body=error_body("authentication_error", f"invalid x-api-key {KEY}")))
    _, exc = collect_until_error(make_backend())
    assert KEY not in str(exc) and not exc.retryable


def test_a_stream_that_ends_before_message_stop_is_retryable(server, make_backend):
    server.script(answer(message_start(), text_block(0, "Hal")))
    seen, exc = collect_until_error(make_backend(retries=0))
    assert seen == [{"kind": "text", "text": "Hal"}] and exc.retryable


def test_between_event_timeout(server, make_backend):
    server.script(
        answer(message_start(), block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "a"}), stall=20)
    )
    seen, exc = collect_until_error(make_backend(first_event_timeout=30, event_timeout=0.3, retries=0))
    assert seen == [{"kind": "text", "text": "a"}]
    assert "no event for 0.3 seconds" in str(exc)


def test_tool_ids_of_another_provider_are_made_acceptable(server, make_backend):
    odd = "call:1/with.dots"
    history = [
        *USER,
        {"role": "assistant", "parts": [{"type": "tool_use", "id": odd, "name": "get_weather", "input": {}}]},
        {"role": "tool", "parts": [{"type": "tool_result", "tool_use_id": odd, "result": {}, "status": "error"}]},
    ]
    server.script(answer(message_start(), text_block(0, "ok"), message_end("end_turn")))
    run(make_backend(prompt_caching=False), messages=history, tools=TOOLS)
    use, result = (m["content"][0] for m in server.requests[0].body["messages"][1:])
    assert use["id"] == result["tool_use_id"] and use["id"].startswith("toolu_")
    assert result["is_error"] is True and json.loads(result["content"]) == {"error": "The tool call failed."}


def test_check_refuses_a_base_url_that_already_names_the_endpoint(make_backend):
    assert make_backend(base_url="https://api.anthropic.com/v1/messages").check() == [
        "ANTHROPIC_BASE_URL names the endpoint: the backend adds /v1/messages itself, so set it to "
        "https://api.anthropic.com."
    ]
    assert make_backend(base_url="https://gateway.example/v1").check() == []


@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
def test_unknown_part_type_is_refused_before_any_request(server, backend, role):
    messages = [*([] if role == "user" else USER), {"role": role, "parts": [{"type": "hologram", "data": b""}]}]
    with pytest.raises(BackendError) as info:
        run(backend, messages=messages)
    assert info.value.args == ("The Anthropic API cannot take a message part of type 'hologram'.",)
    assert info.value.retryable is False and server.requests == []
