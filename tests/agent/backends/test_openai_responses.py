"""OpenAIResponsesBackend against a real loopback HTTP server replaying Responses API streams.

The bodies are written as OpenAI streams them: each event an `event:` line naming its type and a
`data:` JSON object with the same `type` and a rising `sequence_number`; no `[DONE]` at the end.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agent.backends import get_backend, reset_backends
from agent.backends.openai_responses import OpenAIResponsesBackend
from agent.exceptions import BackendError
from tests.agent.backends.openai_server import Reply

BACKEND = OpenAIResponsesBackend
KEY = "sk-test-SECRET-0123456789abcdef"
TOOLS = [{"name": "get_weather", "description": "Weather for a city.", "input_schema": {"type": "object"}}]
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]
ENCRYPTED = "gAAAAABpF-opaque-reasoning-Zm9vYmFy=="


def run(backend, *, messages=None, tools=(), model="gpt-4.1", system="You are helpful.", inference=None):
    stream = backend.stream(
        system=system, messages=messages or USER, tools=list(tools), model=model, inference=inference
    )
    return list(stream)


def run_until_error(backend, **kwargs: Any) -> tuple[list[dict], BackendError]:
    events: list[dict] = []
    with pytest.raises(BackendError) as info:
        for event in backend.stream(system="", messages=USER, tools=[], model="gpt-4.1", **kwargs):
            events.append(event)
    return events, info.value


# ------------------------------------------------------------------------------- stream pieces


def sse(*events: dict[str, Any]) -> list[str]:
    """Events as OpenAI streams them: `event:` and `data:` lines, each with its sequence number."""
    return [
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': number})}\n\n"
        for number, event in enumerate(events)
    ]


def response(status: str = "in_progress", **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_68af",
        "object": "response",
        "created_at": 1767225600,
        "status": status,
        "model": "gpt-6-sol",
        "output": [],
        "usage": None,
        "incomplete_details": None,
        "error": None,
        **fields,
    }


def usage(input: int = 12, output: int = 4, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output,
    }


def started() -> list[dict[str, Any]]:
    return [
        {"type": "response.created", "response": response()},
        {"type": "response.in_progress", "response": response()},
    ]


def completed(**fields: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": response("completed", **{"usage": usage(), **fields})}


def message(*deltas: str, index: int = 0, id: str = "msg_1", phase: str | None = None) -> list[dict[str, Any]]:
    text = "".join(deltas)
    done = {"id": id, "type": "message", "status": "completed", "role": "assistant"}
    if phase:
        done["phase"] = phase
    part = {"type": "output_text", "text": text, "annotations": []}
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**done, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            "item_id": id,
            "output_index": index,
            "content_index": 0,
            "part": {**part, "text": ""},
        },
        *[
            {
                "type": "response.output_text.delta",
                "item_id": id,
                "output_index": index,
                "content_index": 0,
                "delta": d,
                "logprobs": [],
            }
            for d in deltas
        ],
        {
            "type": "response.output_text.done",
            "item_id": id,
            "output_index": index,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0, "part": part},
        {"type": "response.output_item.done", "output_index": index, "item": {**done, "content": [part]}},
    ]


def function_call(call_id: str, name: str, *pieces: str, index: int = 0, id: str = "fc_1") -> list[dict[str, Any]]:
    item = {
        "id": id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": call_id,
        "name": name,
    }
    arguments = "".join(pieces)
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        *[
            {"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": piece}
            for piece in pieces
        ],
        {"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": arguments},
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {**item, "status": "completed", "arguments": arguments},
        },
    ]


REASONING_ITEM = {
    "id": "rs_0a1b",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "**Checking the weather**\n\nI need Paris."},
        {"type": "summary_text", "text": "**Calling the tool**"},
    ],
    "encrypted_content": ENCRYPTED,
}


def reasoning(index: int = 0) -> list[dict[str, Any]]:
    id = REASONING_ITEM["id"]
    added = {"id": id, "type": "reasoning", "summary": []}
    where = {"item_id": id, "output_index": index}
    first, second = (part["text"] for part in REASONING_ITEM["summary"])
    return [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        {
            "type": "response.reasoning_summary_part.added",
            **where,
            "summary_index": 0,
            "part": {"type": "summary_text", "text": ""},
        },
        {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": first[:20]},
        {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": first[20:]},
        {"type": "response.reasoning_summary_text.done", **where, "summary_index": 0, "text": first},
        {
            "type": "response.reasoning_summary_part.added",
            **where,
            "summary_index": 1,
            "part": {"type": "summary_text", "text": ""},
        },
        {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 1, "delta": second},
        {"type": "response.output_item.done", "output_index": index, "item": {**REASONING_ITEM, "status": "completed"}},
    ]


def texts(events: list[dict], kind: str = "text") -> str:
    return "".join(e["text"] for e in events if e["kind"] == kind)


# ------------------------------------------------------------------------------------ streams


def test_plain_text_with_usage_and_cached_tokens(server, backend):
    body = sse(*started(), *message("Hel", "lo!"), completed(usage=usage(input=120, output=7, cached=100)))
    server.script(Reply(body=body, delay=0.01))
    events = run(backend, inference={"max_tokens": 99, "temperature": 0.2, "top_p": 0.9, "stop": ["END"]})
    assert events == [
        {"kind": "text", "text": "Hel"},
        {"kind": "text", "text": "lo!"},
        {
            "kind": "done",
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 20, "output_tokens": 7, "cache_read_tokens": 100, "cache_write_tokens": 0},
        },
    ]
    (request,) = server.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "gpt-4.1",
        "instructions": "You are helpful.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
        "max_output_tokens": 99,
        "stream": True,
        "store": False,
        "temperature": 0.2,  # not a reasoning model: sampling as asked (Responses has no `stop`)
        "top_p": 0.9,
    }


def test_a_function_call_split_over_deltas_then_the_history_goes_back(server, backend):
    body = sse(
        *started(),
        *message("Let me check.", index=0),
        *function_call("call_Wx9", "get_weather", '{"ci', 'ty": "Par', 'is"}', index=1),
        completed(),
    )
    server.script(Reply(body=body))
    events = run(backend, tools=TOOLS, model="gpt-6-sol")
    assert events == [
        {"kind": "text", "text": "Let me check."},
        {"kind": "tool_use", "id": "call_Wx9", "name": "get_weather", "input": {"city": "Paris"}},
        {"kind": "done", "stop_reason": "tool_use", "usage": {**usage_neutral(12, 4)}},
    ]
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]

    history = [
        *USER,
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "call_Wx9", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_result", "tool_use_id": "call_Wx9", "result": {"temp_c": 21}}]},
    ]
    server.script(Reply(body=sse(*started(), *message("It is 21 °C."), completed())))
    assert texts(run(backend, messages=history, tools=TOOLS, model="gpt-6-sol")) == "It is 21 °C."
    assert server.requests[1].body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}], "phase": "commentary"},
        {"type": "function_call", "call_id": "call_Wx9", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_Wx9", "output": '{"temp_c": 21}'},
    ]


@pytest.mark.parametrize(
    ("role", "said"), [("user", "A user message"), ("assistant", "An assistant message"), ("tool", "A tool message")]
)
def test_unknown_part_type_is_refused_before_any_request(server, backend, role, said):
    messages = [*([] if role == "user" else USER), {"role": role, "parts": [{"type": "hologram", "data": b""}]}]
    with pytest.raises(BackendError) as info:
        run(backend, messages=messages)
    assert info.value.args == (f"{said} cannot carry a 'hologram' part.",)
    assert info.value.retryable is False and server.requests == []


def usage_neutral(input: int, output: int, cached: int = 0) -> dict[str, int]:
    return {"input_tokens": input, "output_tokens": output, "cache_read_tokens": cached, "cache_write_tokens": 0}


def test_arguments_that_do_not_parse_are_reported_not_run(server, backend):
    server.script(Reply(body=sse(*started(), *function_call("call_1", "get_weather", '{"city": '), completed())))
    events = run(backend, tools=TOOLS)
    (call,) = [e for e in events if e["kind"] == "tool_use"]
    assert (call["id"], call["input"]) == ("call_1", {})
    assert call["input_error"].startswith("The tool input is not valid JSON")
    assert events[-1]["stop_reason"] == "tool_use"


def test_reasoning_summary_streams_and_the_item_is_kept_for_the_next_call(server, backend):
    body = sse(
        *started(), *reasoning(0), *function_call("call_Wx9", "get_weather", '{"city":"Paris"}', index=1), completed()
    )
    server.script(Reply(body=body))
    events = run(backend, tools=TOOLS, model="gpt-6-sol")
    first, second = (part["text"] for part in REASONING_ITEM["summary"])
    assert texts(events, "reasoning") == f"{first}\n\n{second}"
    state = [e for e in events if e.get("provider_data")]
    assert state == [{"kind": "reasoning", "text": "", "provider_data": {"item": REASONING_ITEM}}]  # no `status`
    assert [e["kind"] for e in events][-2:] == ["tool_use", "done"]


def test_reasoning_without_encrypted_content_keeps_no_state(server, backend):
    item = {k: v for k, v in REASONING_ITEM.items() if k != "encrypted_content"}
    done = {"type": "response.output_item.done", "output_index": 0, "item": item}
    server.script(Reply(body=sse(*started(), *reasoning(0)[:-1], done, *message("Hi", index=1), completed())))
    events = run(backend, model="gpt-6-sol")
    assert not [e for e in events if "provider_data" in e]  # nothing the API could take back statelessly
    assert texts(events) == "Hi"


def test_reasoning_items_go_back_only_as_this_backend_made_them():
    from agent.backends.openai_responses import to_input_items

    kept = {"type": "reasoning", "text": "Summary.", "provider_data": {"item": REASONING_ITEM}}
    foreign = {"type": "reasoning", "text": "Another model's.", "signature": "sig"}  # state stripped
    history = [*USER, {"role": "assistant", "parts": [kept, foreign, {"type": "text", "text": "Hi."}]}]
    assert to_input_items(history)[1:] == [
        REASONING_ITEM,
        {"role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
    ]


@pytest.mark.django_db
def test_reasoning_left_without_what_it_led_to_does_not_go_back(server, settings, chat):
    """The answer fails after its reasoning item, before its call is whole: the call is dropped, and
    the reasoning must not go back alone (the API refuses a reasoning item without its following
    item, so every later call of the chat would fail). The text before it still goes back."""
    from agent.loop import run_agent
    from agent.models import Message
    from agent.state import Run
    from agent.transcript import add_message

    settings.AGENT_BACKEND, settings.AGENT_MODEL = "openai-responses", "gpt-6-sol"
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.AGENT_RETRIES = server.url, KEY, 0
    reset_backends()
    try:
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "What is 2 + 3?"}])
        call = function_call("call_A1", "add", '{"a":2', index=2)[:-1]  # its arguments never finish
        server.script(
            Reply(
                body=sse(*started(), *message("Adding.", id="msg_0"), *reasoning(1), *call, failed("server_error", "x"))
            ),
            Reply(body=sse(*started(), *message("It is 5."), completed())),
        )
        assert [name for name, _ in run_agent(chat)][-1] == "error"
        kept = Message.objects.filter(session=chat, role="assistant").get().parts.values_list("type", flat=True)
        assert list(kept) == ["text", "reasoning"]  # stored as it came: the transcript is the record
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "Again?"}])
        assert [name for name, _ in run_agent(chat)][-1] == "done"
        sent = server.requests[1].body["input"]
        assert [item.get("type", item.get("role")) for item in sent] == ["user", "assistant", "user"]
        assert sent[1]["content"] == [{"type": "output_text", "text": "Adding."}]
    finally:
        get_backend().close()
        reset_backends()


def test_a_trailing_reasoning_item_is_left_out_and_one_before_its_answer_is_kept():
    from agent.backends.openai_responses import to_input_items

    thought = {"type": "reasoning", "text": "Summary.", "provider_data": {"item": REASONING_ITEM}}
    answer = {"role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}
    alone = [*USER, {"role": "assistant", "parts": [thought]}]
    assert to_input_items(alone)[1:] == []
    after = [*USER, {"role": "assistant", "parts": [{"type": "text", "text": "Hi."}, thought]}]
    assert to_input_items(after)[1:] == [answer]
    before = [*USER, {"role": "assistant", "parts": [thought, {"type": "text", "text": "Hi."}]}]
    assert to_input_items(before)[1:] == [REASONING_ITEM, answer]


@pytest.mark.django_db
def test_the_reasoning_item_comes_back_unchanged_in_the_tool_loop_and_not_to_another_model(server, settings, chat):
    """Through the loop and the stored transcript: the item goes back on the next call of the tool
    loop, byte for byte, and is left out once the chat goes on with another model."""
    from agent.loop import run_agent
    from agent.models import Message
    from agent.state import Run
    from agent.tools import register, unregister
    from agent.transcript import add_message

    settings.AGENT_BACKEND, settings.AGENT_MODEL = "openai-responses", "gpt-6-sol"
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.AGENT_RETRIES = server.url, KEY, 0
    reset_backends()

    @register("add", description="Add two integers.", input_schema={"type": "object"})
    def add(session, a, b):
        return {"sum": a + b}

    try:
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "What is 2 + 3?"}])
        server.script(
            Reply(
                body=sse(
                    *started(), *reasoning(0), *function_call("call_A1", "add", '{"a":2,"b":3}', index=1), completed()
                )
            ),
            Reply(body=sse(*started(), *message("It is 5."), completed())),
            Reply(body=sse(*started(), *message("7."), completed())),
        )
        names = [name for name, _ in run_agent(chat)]
        assert names == ["reasoning", "reasoning", "reasoning", "reasoning", "tool_use", "tool_result", "token", "done"]
        sent = server.requests[1].body["input"]
        assert [item.get("type", item.get("role")) for item in sent] == [
            "user",
            "reasoning",
            "function_call",
            "function_call_output",
        ]
        assert sent[1] == REASONING_ITEM
        assert sent[3] == {"type": "function_call_output", "call_id": "call_A1", "output": '{"sum": 5}'}

        settings.AGENT_MODEL = "gpt-6-luna"
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "And 3 + 4?"}])
        list(run_agent(chat))
        last = server.requests[2].body
        assert last["model"] == "gpt-6-luna"
        assert ENCRYPTED not in json.dumps(last)
        assert all(item.get("type") != "reasoning" for item in last["input"])
    finally:
        unregister("add")
        get_backend().close()
        reset_backends()


def test_a_preamble_goes_back_where_it_was_labelled_commentary(server, settings, chat):
    """GPT-5.3 and later write a preamble (`phase: commentary`) before their tool calls and want every
    assistant message of the history back with its phase: the preamble stays before the reasoning
    and the call it came before, and the final answer is `final_answer`. Older models get no phase."""
    from agent.loop import run_agent
    from agent.models import Message
    from agent.state import Run
    from agent.tools import register, unregister
    from agent.transcript import add_message

    settings.AGENT_BACKEND, settings.AGENT_MODEL = "openai-responses", "gpt-6-sol"
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.AGENT_RETRIES = server.url, KEY, 0
    reset_backends()
    register("add", description="Add two integers.", input_schema={"type": "object"})(lambda session, a, b: a + b)
    try:
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "What is 2 + 3?"}])
        server.script(
            Reply(
                body=sse(
                    *started(),
                    *message("Adding them up.", phase="commentary"),
                    *reasoning(1),
                    *function_call("call_A1", "add", '{"a":2,"b":3}', index=2),
                    completed(),
                )
            ),
            Reply(body=sse(*started(), *message("It is 5.", phase="final_answer"), completed())),
            Reply(body=sse(*started(), *message("7."), completed())),
        )
        list(run_agent(chat))
        sent = server.requests[1].body["input"]
        assert [(item.get("type", item.get("role")), item.get("phase")) for item in sent] == [
            ("user", None),
            ("assistant", "commentary"),
            ("reasoning", None),
            ("function_call", None),
            ("function_call_output", None),
        ]
        assert sent[1]["content"] == [{"type": "output_text", "text": "Adding them up."}]

        settings.AGENT_MODEL = "gpt-4.1"  # labels nothing, and is sent no labels
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "And 3 + 4?"}])
        list(run_agent(chat))
        assert all("phase" not in item for item in server.requests[2].body["input"])
    finally:
        unregister("add")
        get_backend().close()
        reset_backends()


def test_which_models_label_their_messages_with_a_phase():
    from agent.backends.openai.backend import labels_phases

    assert [labels_phases(m) for m in ("gpt-5.3-codex", "gpt-5.4", "gpt-6-sol", "openai/gpt-6.1-terra")] == [True] * 4
    assert [labels_phases(m) for m in ("gpt-5.2", "gpt-5", "gpt-5-mini", "gpt-4.1", "o3")] == [False] * 5


@pytest.mark.parametrize(("setting", "effort"), [("high", "high"), ("3000", "medium"), ("low", "low")])
def test_agent_reasoning_asks_for_an_effort_and_summaries(server, backend, settings, setting, effort):
    settings.AGENT_REASONING = setting
    server.script(Reply(body=sse(*started(), *message("ok"), completed())))
    run(backend, model="gpt-6-sol", inference={"max_tokens": 8000, "temperature": 0.3, "top_p": 0.9})
    body = server.requests[-1].body
    assert body["reasoning"] == {"effort": effort, "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 8000
    assert "temperature" not in body and "top_p" not in body  # a reasoning model takes no sampling


def test_a_reasoning_model_without_agent_reasoning_still_gets_its_items_back(server, backend, settings):
    settings.AGENT_REASONING = "off"
    server.script(Reply(body=sse(*started(), *message("ok"), completed())))
    run(backend, model="gpt-6-sol", tools=TOOLS, inference={"temperature": 0.3})
    body = server.requests[-1].body
    assert "reasoning" not in body and "temperature" not in body
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 4096  # AGENT_MAX_TOKENS's default


def test_a_model_made_reasoning_by_setting_gets_no_sampling(server, make_backend, settings):
    settings.AGENT_MODEL_REASONING = True
    server.script(Reply(body=sse(*started(), *message("ok"), completed())))
    run(make_backend(), model="prod-deployment", inference={"temperature": 0.3})
    body = server.requests[-1].body
    assert "temperature" not in body and body["include"] == ["reasoning.encrypted_content"]


def test_a_non_reasoning_model_is_asked_for_no_reasoning(server, backend, settings):
    settings.AGENT_REASONING = "high"
    server.script(Reply(body=sse(*started(), *message("ok"), completed())))
    run(backend, model="gpt-4.1")
    assert not {"reasoning", "include"} & server.requests[-1].body.keys()


@pytest.mark.parametrize(
    ("reason", "stop_reason"),
    [("max_output_tokens", "max_tokens"), ("content_filter", "content_filtered"), ("something_new", "incomplete")],
)
def test_an_incomplete_response_says_why(server, backend, reason, stop_reason):
    incomplete = response("incomplete", usage=usage(output=99), incomplete_details={"reason": reason})
    body = sse(
        *started(), *message("The answer is a long")[:3], {"type": "response.incomplete", "response": incomplete}
    )
    server.script(Reply(body=body))
    events = run(backend)
    assert texts(events) == "The answer is a long"
    assert events[-1] == {"kind": "done", "stop_reason": stop_reason, "usage": usage_neutral(12, 99)}


def test_a_refusal_is_shown_as_text_and_reported(server, backend):
    refusal = {"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
    server.script(Reply(body=sse(*started(), {**refusal, "delta": "I can't help with that."}, completed())))
    events = run(backend)
    assert texts(events) == "I can't help with that."
    assert events[-1]["stop_reason"] == "refusal"


# ------------------------------------------------------------------------------------- failures


def failed(code: str, message: str) -> dict[str, Any]:
    return {"type": "response.failed", "response": response("failed", error={"code": code, "message": message})}


def test_response_failed_before_output_is_retried_and_its_message_scrubbed(server, backend, sleeps):
    server.script(
        Reply(body=sse(*started(), failed("server_error", f"The server had an error (key {KEY})."))),
        Reply(body=sse(*started(), *message("Back."), completed())),
    )
    assert texts(run(backend)) == "Back."
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_response_failed_that_retrying_cannot_help_fails_at_once(server, backend):
    server.script(Reply(body=sse(*started(), failed("invalid_prompt", f"Flagged input for {KEY}."))))
    events, error = run_until_error(backend)
    assert events == []
    assert not error.retryable
    assert "invalid_prompt" in str(error) and KEY not in str(error) and "[redacted]" in str(error)
    assert len(server.requests) == 1


def test_context_too_long_is_flagged(server, backend):
    message = "Your input exceeds the context window of this model."
    server.script(Reply(body=sse(*started(), failed("context_length_exceeded", message))))
    _, error = run_until_error(backend)
    assert error.context_too_long and not error.retryable


def test_an_error_event_mid_stream_keeps_what_came_and_is_not_retried(server, backend):
    error_event = {"type": "error", "code": "server_error", "message": f"Upstream hiccup, key={KEY}", "param": None}
    server.script(Reply(body=sse(*started(), *message("Partial ")[:3], error_event)))
    events, error = run_until_error(backend)
    assert events == [{"kind": "text", "text": "Partial "}]
    assert "Upstream hiccup" in str(error) and KEY not in str(error)
    assert len(server.requests) == 1  # output had started


def test_http_429_with_retry_after_is_retried_after_that_wait(server, backend, sleeps):
    rate_limited = {"error": {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded"}}
    server.script(
        Reply(status=429, headers={"Retry-After": "2"}, body=json.dumps(rate_limited)),
        Reply(body=sse(*started(), *message("ok"), completed())),
    )
    assert texts(run(backend)) == "ok"
    assert sleeps == [2.0]
    assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses"]


def test_http_401_is_not_retried_and_names_no_key(server, backend):
    wrong = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    server.script(Reply(status=401, body=json.dumps(wrong)))
    _, error = run_until_error(backend)
    assert not error.retryable and "HTTP 401" in str(error) and KEY not in str(error)
    assert len(server.requests) == 1


def test_a_stream_cut_before_its_terminal_event_is_an_error(server, make_backend):
    backend = make_backend(retries=0)
    server.script(Reply(body=sse(*started(), *message("Half an ans", "wer")[:4])))  # ends cleanly, unfinished
    events, error = run_until_error(backend)
    assert texts(events) == "Half an answer"
    assert error.retryable and "ended before it finished" in str(error)

    server.script(Reply(body=sse(*started(), *message("Cut")[:3]), cut=True))  # the connection drops
    events, error = run_until_error(backend)
    assert texts(events) == "Cut" and error.retryable


def test_a_cut_stream_before_any_output_is_retried(server, backend):
    server.script(
        Reply(body=sse(*started()), cut=True),
        Reply(body=sse(*started(), *message("Whole."), completed())),
    )
    assert texts(run(backend)) == "Whole."
    assert len(server.requests) == 2


def test_a_whole_json_response_where_a_stream_was_expected(server, backend):
    whole = response(
        "completed",
        output=[
            {**REASONING_ITEM, "status": "completed"},
            {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "call_Z",
                "name": "get_weather",
                "arguments": '{"city":"Oslo"}',
            },
        ],
        usage=usage(input=30, cached=10),
    )
    server.script(Reply(body=json.dumps(whole), headers={"Content-Type": "application/json"}))
    events = run(backend, tools=TOOLS, model="gpt-6-sol")
    assert [e["kind"] for e in events] == ["reasoning", "reasoning", "reasoning", "reasoning", "tool_use", "done"]
    assert events[3]["provider_data"] == {"item": REASONING_ITEM}
    assert events[4] == {"kind": "tool_use", "id": "call_Z", "name": "get_weather", "input": {"city": "Oslo"}}
    assert events[-1] == {"kind": "done", "stop_reason": "tool_use", "usage": usage_neutral(20, 4, cached=10)}


def test_an_error_sent_with_http_200_is_raised_at_once(server, backend):
    body = json.dumps({"error": {"message": f"Bad key {KEY}", "type": "invalid_request_error", "code": None}})
    server.script(Reply(body=body, headers={"Content-Type": "application/json"}))
    _, error = run_until_error(backend)
    assert not error.retryable and KEY not in str(error)
    assert len(server.requests) == 1


# ------------------------------------------------------------------------------------- inputs


PNG = b"\x89PNG\r\n\x1a\n a one-pixel dot"
PDF = b"%PDF-1.4 a tiny document"


def test_images_and_pdfs_go_as_input_items(server, backend):
    parts = [
        {"type": "text", "text": "[Attachment #1: dot.png, image/png]"},
        {"type": "image", "media_type": "image/png", "data": PNG, "name": "dot.png"},
        {"type": "text", "text": "[Attachment #2: report.pdf, application/pdf, 1 page]"},
        {"type": "document", "media_type": "application/pdf", "name": "report.pdf", "data": PDF},
        {"type": "document", "media_type": "application/zip", "name": "bundle.zip", "data": b"PK"},
        {"type": "text", "text": "What are these?"},
    ]
    server.script(Reply(body=sse(*started(), *message("A dot and a report."), completed())))
    run(backend, messages=[{"role": "user", "parts": parts}])
    (item,) = server.requests[0].body["input"]
    assert item["role"] == "user"
    assert item["content"] == [
        {"type": "input_text", "text": "[Attachment #1: dot.png, image/png]"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{base64.b64encode(PNG).decode()}"},
        {"type": "input_text", "text": "[Attachment #2: report.pdf, application/pdf, 1 page]"},
        {
            "type": "input_file",
            "filename": "report.pdf",
            "file_data": f"data:application/pdf;base64,{base64.b64encode(PDF).decode()}",
        },
        {"type": "input_text", "text": "[Attached document 'bundle.zip' (application/zip) cannot be read here.]"},
        {"type": "input_text", "text": "What are these?"},
    ]


def test_no_system_prompt_sends_no_instructions(server, backend):
    server.script(Reply(body=sse(*started(), *message("ok"), completed())))
    run(backend, system="")
    assert "instructions" not in server.requests[0].body


def test_registered_and_checked_like_the_openai_backend(settings):
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "https://api.openai.com/v1", ""
    reset_backends()
    try:
        backend = get_backend("openai-responses")
        assert isinstance(backend, OpenAIResponsesBackend) and backend.default_model == "gpt-6-sol"
        assert backend.check() == ["OPENAI_API_KEY is not set, and api.openai.com needs one."]
        assert backend.cautions("gpt-6-astra") == []  # the model the `openai` backend cannot give tools
    finally:
        get_backend("openai-responses").close()
        reset_backends()
