"""One contract suite for every backend, driven through `run_agent` (CONTRACT §3 and §5).

`BackendContract` states each scenario once, in neutral events; each subclass turns the scenario into
what its provider's server would answer (the fake's JSON script, OpenAI SSE bodies, Bedrock event-stream
frames from the loopback servers) and points `get_backend()` at it. Wire-level checks of what the engine
sent back live in per-backend hooks. Retrying is a property of the network adapters only, so its
scenario lives in `RetryContract`, which the fake does not inherit.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agent.backends import get_backend, reset_backends
from agent.loop import CALM, LASTING, run_agent
from agent.models import Message, Session
from agent.state import Run
from agent.tools import register, unregister
from agent.transcript import add_message, build_neutral_messages
from tests.agent.backends.anthropic_server import ScriptedAnthropicServer, error_body, events, message_start
from tests.agent.backends.bedrock_server import BedrockStubServer
from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer, sse

pytestmark = pytest.mark.django_db

# Provider text that must reach the log at most, never an event.
PROVIDER_DETAIL = "upstream-detail-7f3a shard q-17"
PROVIDER_ERROR = ("error", {"code": "provider_error", "message": CALM["provider_error"]})
# A failure that trying again won't clear does not ask the person to try again.
PROVIDER_REFUSED = ("error", {"code": "provider_error", "message": LASTING["refused"]})
CHAT_TOO_LONG = ("error", {"code": "provider_error", "message": LASTING["too_long"]})
USAGE = {"input_tokens": 12, "output_tokens": 4, "cache_read_tokens": 0, "cache_write_tokens": 0}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


# --------------------------------------------------------------------------- neutral scenario pieces


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


def reasoning(value: str, signature: str) -> dict[str, Any]:
    return {"kind": "reasoning", "text": value, "signature": signature}


def tool_use(id: str, name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "tool_use", "id": id, "name": name, "input": input}


def signed_tool_use(id: str, name: str, input: dict[str, Any], thought_signature: str) -> dict[str, Any]:
    """A tool call with state the provider needs back (Gemini's thought signature; ignored by
    providers that have no such thing)."""
    return {**tool_use(id, name, input), "thought_signature": thought_signature}


def redacted(data: bytes) -> dict[str, Any]:
    """Reasoning the provider encrypted: kept and sent back, never shown."""
    return {"kind": "redacted", "data": data}


REDACTED = b"\x00opaque-thinking\xff"
REDACTED_B64 = base64.b64encode(REDACTED).decode()


def bad_tool_use(id: str, name: str, raw_arguments: str) -> dict[str, Any]:
    """A tool call whose arguments the provider sends as text that does not parse."""
    return {"kind": "tool_use", "id": id, "name": name, "input": {}, "raw_arguments": raw_arguments}


def done(stop_reason: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {"kind": "done", "stop_reason": stop_reason, "usage": {**USAGE, **usage}}


def stall(seconds: float) -> dict[str, Any]:
    """The server goes quiet this long here (first in a call: before anything at all)."""
    return {"stall": seconds}


def fail(kind: str) -> dict[str, Any]:
    """`retryable` or `fatal`; first in a call it fails before output, later it cuts the stream there."""
    return {"fail": kind}


def arguments_of(event: dict[str, Any]) -> str:
    return event.get("raw_arguments") or json.dumps(event["input"])


def halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [value[:middle], value[middle:]]


# --------------------------------------------------------------------------- helpers


def names(events: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in events]


def payloads(events: list[tuple[str, Any]], name: str) -> list[Any]:
    return [payload for event_name, payload in events if event_name == name]


def joined(events: list[tuple[str, Any]], name: str) -> str:
    return "".join(payload["text"] for payload in payloads(events, name))


def assistants(session: Session) -> list[Message]:
    return list(Message.objects.filter(session=session, role=Message.ASSISTANT).order_by("position"))


def parts_of(message: Message) -> list[tuple[str, str]]:
    return [(part.type, part.text) for part in message.parts.all()]


def assert_transcript_valid(session: Session) -> None:
    """Every tool_use is answered by a tool_result in the very next message, in call order."""
    messages = build_neutral_messages(session)
    for position, message in enumerate(messages):
        used = [part["id"] for part in message["parts"] if part["type"] == "tool_use"]
        if used:
            answer = messages[position + 1]
            assert answer["role"] == "tool"
            assert [part["tool_use_id"] for part in answer["parts"]] == used


def doubled(usage: dict[str, int]) -> dict[str, int]:
    return {key: 2 * value for key, value in usage.items()}


def ask(session: Session, question: str) -> None:
    add_message(Run(session), Message.USER, [{"type": "text", "text": question}])


@pytest.fixture
def chat(user) -> Session:
    session = Session.objects.create(user=user, purpose="chat", system_prompt="You are a careful calculator.")
    ask(session, "What is 2 + 3?")
    return session


@pytest.fixture
def adds():
    """The `add` tool; the list records every call the handler really received."""
    calls: list[tuple[int, int]] = []

    @register("add", description="Add two integers.", input_schema=ADD_SCHEMA)
    def add(session, a, b):
        calls.append((a, b))
        return {"sum": a + b}

    yield calls
    unregister("add")


# --------------------------------------------------------------------------- the contract


class BackendContract:
    """Scenarios every backend must pass identically; subclasses provide the server and wire hooks."""

    backend: str | None = None
    supports_signature = True  # the provider streams a reasoning signature back
    content_filter_stop = "content_filtered"  # how the provider's withheld answer is reported
    reports_cache_write = True  # the provider reports cache-write tokens

    @pytest.fixture(autouse=True)
    def _backend_under_test(self, settings, monkeypatch, tmp_path):
        monkeypatch.setattr("agent.backends.retry.backoff_seconds", lambda *args, **kwargs: 0.0)
        settings.AGENT_BACKEND = self.backend
        settings.AGENT_RETRIES = 2
        settings.AGENT_FIRST_EVENT_TIMEOUT_SECONDS = 5.0
        settings.AGENT_EVENT_TIMEOUT_SECONDS = 5.0
        settings.AGENT_MAX_TOKENS = 512
        self.tmp_path = tmp_path
        self.start(settings, monkeypatch)
        reset_backends()  # settings are read when the instance is built
        yield
        self.close_backend()
        self.stop()

    # ---- hooks

    def start(self, settings, monkeypatch) -> None:
        """Start this backend's server and point the settings at it."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the server started by `start`."""

    def close_backend(self) -> None:
        """Release the cached instance's connection pool."""

    def serve(self, calls: list[list[dict[str, Any]]]) -> None:
        """Make the server answer the k-th model request with `calls[k]`."""
        raise NotImplementedError

    def requests(self) -> list[Any]:
        """What the server received, one entry per model request, in this provider's wire shape."""
        raise NotImplementedError

    def assert_results_sent(self, request: Any, results: list[tuple[str, dict[str, Any], str]]) -> None:
        """`request` ends with the tool results (tool_use_id, result, status) where this provider wants them."""
        raise NotImplementedError

    other_model = ""  # another model of this backend, for the chat that changes model

    def assert_state_sent(self, request: Any) -> None:
        """`request`'s last assistant message carries back the state of `STATEFUL_CALL` as this provider wants it."""
        raise NotImplementedError

    def assert_no_state_sent(self, request: Any) -> None:
        """No provider state in `request` (the chat went on with another model)."""
        raise NotImplementedError

    # ---- scenarios

    def test_plain_text(self, chat):
        self.serve([[text("Hel"), text("lo!"), done()]])
        events = list(run_agent(chat))
        (message,) = assistants(chat)
        assert events == [
            ("token", {"text": "Hel"}),
            ("token", {"text": "lo!"}),
            ("done", {"message_id": message.pk, "stop_reason": "end_turn", "usage": USAGE}),
        ]
        assert parts_of(message) == [("text", "Hello!")]
        assert message.usage == USAGE
        assert (message.stop_reason, message.backend) == ("end_turn", self.backend)
        assert len(self.requests()) == 1

    def test_reasoning_then_text(self, chat):
        self.serve([[reasoning("Two plus three.", "sig-R2d2"), text("5."), done()]])
        events = list(run_agent(chat))
        assert names(events) == ["reasoning", "token", "done"]
        assert joined(events, "reasoning") == "Two plus three."
        assert joined(events, "token") == "5."
        (message,) = assistants(chat)
        assert parts_of(message) == [("reasoning", "Two plus three."), ("text", "5.")]
        signature = message.parts.get(type="reasoning").signature
        assert signature == ("sig-R2d2" if self.supports_signature else "")

    def test_one_tool_round_trip(self, chat, adds):
        self.serve(
            [
                [text("Let me add."), tool_use("call_1", "add", {"a": 2, "b": 3}), done("tool_use")],
                [text("It is 5."), done()],
            ]
        )
        events = list(run_agent(chat))
        assert names(events) == ["token", "tool_use", "tool_result", "token", "done"]
        assert payloads(events, "tool_use") == [{"id": "call_1", "name": "add", "input": {"a": 2, "b": 3}}]
        assert payloads(events, "tool_result") == [
            {"id": "call_1", "name": "add", "status": "ok", "result": {"sum": 5}}
        ]
        assert events[3] == ("token", {"text": "It is 5."})
        last = assistants(chat)[-1]
        assert events[-1] == ("done", {"message_id": last.pk, "stop_reason": "end_turn", "usage": doubled(USAGE)})
        assert adds == [(2, 3)]
        assert [m.role for m in Message.objects.filter(session=chat)] == ["user", "assistant", "tool", "assistant"]
        assert_transcript_valid(chat)
        first, second = self.requests()
        self.assert_results_sent(second, [("call_1", {"sum": 5}, "ok")])

    def test_parallel_tools(self, chat, adds):
        self.serve(
            [
                [
                    tool_use("call_1", "add", {"a": 1, "b": 2}),
                    tool_use("call_2", "add", {"a": 3, "b": 4}),
                    done("tool_use"),
                ],
                [text("3 and 7."), done()],
            ]
        )
        events = list(run_agent(chat))
        assert names(events) == ["tool_use", "tool_use", "tool_result", "tool_result", "token", "done"]
        assert [(r["id"], r["status"], r["result"]) for r in payloads(events, "tool_result")] == [
            ("call_1", "ok", {"sum": 3}),
            ("call_2", "ok", {"sum": 7}),
        ]
        assert adds == [(1, 2), (3, 4)]
        (tool_message,) = Message.objects.filter(session=chat, role=Message.TOOL)
        assert [p.tool_use_id for p in tool_message.parts.all()] == ["call_1", "call_2"]
        assert_transcript_valid(chat)
        self.assert_results_sent(self.requests()[1], [("call_1", {"sum": 3}, "ok"), ("call_2", {"sum": 7}, "ok")])

    def test_max_tokens(self, chat):
        self.serve([[text("The answer is a long"), done("max_tokens")]])
        events = list(run_agent(chat))
        assert events[-1][1]["stop_reason"] == "max_tokens"
        assert names(events) == ["token", "done"]
        assert assistants(chat)[0].stop_reason == "max_tokens"

    def test_content_filtered(self, chat):
        self.serve([[done("content_filtered")]])
        events = list(run_agent(chat))
        (message,) = assistants(chat)
        stop = self.content_filter_stop
        assert events == [("done", {"message_id": message.pk, "stop_reason": stop, "usage": USAGE})]
        assert message.stop_reason == stop

    def test_usage_with_cache_tokens(self, chat):
        self.serve(
            [[text("Cached."), done(input_tokens=20, output_tokens=7, cache_read_tokens=100, cache_write_tokens=30)]]
        )
        events = list(run_agent(chat))
        expected = {
            "input_tokens": 20,
            "output_tokens": 7,
            "cache_read_tokens": 100,
            "cache_write_tokens": 30 if self.reports_cache_write else 0,
        }
        assert events[-1][1]["usage"] == expected
        assert assistants(chat)[0].usage == expected

    def test_malformed_tool_arguments(self, chat, adds):
        self.serve([[bad_tool_use("call_1", "add", "{bad"), done("tool_use")], [text("Let me fix that."), done()]])
        events = list(run_agent(chat))
        assert names(events) == ["tool_use", "tool_result", "token", "done"]
        assert events[0] == ("tool_use", {"id": "call_1", "name": "add", "input": {}})
        (result,) = payloads(events, "tool_result")
        assert (result["id"], result["status"]) == ("call_1", "error")
        assert result["result"]["error"].startswith("The arguments for 'add' were not valid JSON")
        assert adds == []
        assert events[-1][1]["stop_reason"] == "end_turn"
        assert_transcript_valid(chat)
        self.assert_results_sent(self.requests()[1], [("call_1", result["result"], "error")])

    def test_failure_after_text_keeps_partial_then_next_run_works(self, chat):
        self.serve([[text("Partial "), fail("retryable")], [text("Recovered."), done()]])
        events = list(run_agent(chat))
        assert events == [("token", {"text": "Partial "}), PROVIDER_ERROR]
        assert PROVIDER_DETAIL not in repr(events)
        (failed,) = assistants(chat)
        assert parts_of(failed) == [("text", "Partial ")]
        assert failed.stop_reason == "error"
        assert len(self.requests()) == 1  # output had started: never retried

        ask(chat, "Try again?")
        events = list(run_agent(chat))
        assert names(events) == ["token", "done"]
        assert joined(events, "token") == "Recovered."
        assert events[-1][1]["stop_reason"] == "end_turn"
        assert len(self.requests()) == 2

    def test_non_retryable_failure(self, chat):
        self.serve([[fail("fatal")]])
        events = list(run_agent(chat))
        assert events == [PROVIDER_REFUSED]
        assert PROVIDER_DETAIL not in repr(events)
        (failed,) = assistants(chat)
        assert (failed.stop_reason, parts_of(failed)) == ("error", [])
        assert len(self.requests()) == 1  # not retried although AGENT_RETRIES is 2

    def test_reasoning_state_goes_back_to_the_model_that_made_it(self, chat, adds):
        self.serve([STATEFUL_CALL, [text("It is 5."), done()]])
        events = list(run_agent(chat))
        assert names(events) == ["reasoning", "tool_use", "tool_result", "token", "done"]
        assert joined(events, "reasoning") == "Two plus three."
        assert REDACTED_B64 not in repr(events) and repr(REDACTED) not in repr(events)
        assert_transcript_valid(chat)
        first, second = self.requests()
        self.assert_state_sent(second)

    def test_reasoning_state_is_left_out_for_another_model(self, chat, adds, settings):
        self.serve([STATEFUL_CALL, [text("It is 5."), done()], [text("7."), done()]])
        list(run_agent(chat))
        settings.AGENT_MODEL = self.other_model
        ask(chat, "And 3 + 4?")
        events = list(run_agent(chat))
        assert names(events) == ["token", "done"]
        self.assert_no_state_sent(self.requests()[-1])
        (first, *_) = assistants(chat)
        assert first.parts.filter(provider_data__isnull=False).exists()  # still kept for that model


PNG = b"\x89PNG\r\n\x1a\n a one-pixel dot"


class ImageContract:
    """An image the user attached reaches the model in the provider's own shape."""

    def assert_image_sent(self, request: Any, data: bytes) -> None:
        raise NotImplementedError

    def test_an_image_reaches_the_model(self, chat, settings):
        from django.core.files.base import ContentFile
        from django.core.files.storage import default_storage

        settings.MEDIA_ROOT = str(self.tmp_path / "media")
        ref = default_storage.save("chat/dot.png", ContentFile(PNG))
        parts = [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "media_type": "image/png", "media_ref": ref},
        ]
        add_message(Run(chat), Message.USER, parts)
        self.serve([[text("A dot."), done()]])
        events = list(run_agent(chat))
        assert joined(events, "token") == "A dot."
        self.assert_image_sent(self.requests()[0], PNG)


STATEFUL_CALL = [
    reasoning("Two plus three.", "sig-R2d2"),
    redacted(REDACTED),
    signed_tool_use("call_1", "add", {"a": 2, "b": 3}, "ts-Gm1"),
    done("tool_use"),
]


class RetryContract:
    """Adapters that retry a failure before any output (the fake replays; it never retries)."""

    overflow_dialects: tuple[str, ...] = ()  # this provider's ways of saying the context is too long

    def test_context_too_long_summarises_and_retries(self, chat, settings):
        settings.AGENT_CONTEXT_KEEP_MESSAGES = 2
        for dialect in self.overflow_dialects:
            first = len(self.requests())
            self.serve([[text("5."), done()]])
            list(run_agent(chat))
            ask(chat, f"And now ({dialect})?")
            self.serve([[fail(f"context:{dialect}")], [text("They asked sums."), done()], [text("Sure."), done()]])
            events = list(run_agent(chat))
            assert names(events) == ["token", "done"], dialect
            assert joined(events, "token") == "Sure."
            overflowed, summary, retried = self.requests()[first + 1 :]
            assert len(self.request_text(retried)) < len(self.request_text(overflowed))
            assert "They asked sums." in self.request_text(retried)  # the summary, in the system prompt
        assert chat.summaries.count() == len(self.overflow_dialects)

    def test_context_still_too_long_after_summarising_tells_the_operator_what_to_change(self, chat, settings, caplog):
        """The model's window is smaller than what is sent even after summarising (a small local model): the
        log says so once, naming the model and the setting to lower, not the same error line twice."""
        settings.AGENT_CONTEXT_KEEP_MESSAGES = 2
        dialect = self.overflow_dialects[0]
        self.serve([[text("5."), done()]])
        list(run_agent(chat))
        ask(chat, "And now?")
        self.serve([[fail(f"context:{dialect}")], [text("They asked sums."), done()], [fail(f"context:{dialect}")]])
        with caplog.at_level("WARNING", logger="agent.loop"):
            events = list(run_agent(chat))
        assert events == [CHAT_TOO_LONG]  # the person can go on in a new chat
        lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "agent.loop"]
        model = settings.AGENT_MODEL
        assert [level for level, _ in lines] == ["WARNING", "ERROR"]
        assert lines[0][1].startswith(
            f"model {model!r} via {self.backend} refused the request as longer than its context window; "
            "summarising the older messages and trying once more: "
        )
        assert lines[1][1].startswith(
            f"model {model!r} via {self.backend} refused the request as longer than its context window even "
            "after summarising: set AGENT_CONTEXT_MAX_TOKENS below the model's window: "
        )

    def request_text(self, request: Any) -> str:
        return json.dumps(request)

    def test_a_late_first_event_is_retried(self, chat, settings):
        settings.AGENT_FIRST_EVENT_TIMEOUT_SECONDS = 0.5
        self.serve([[stall(1.5), text("Late."), done()], [text("On time."), done()]])
        events = list(run_agent(chat))
        assert names(events) == ["token", "done"]
        assert joined(events, "token") == "On time."
        assert len(self.requests()) == 2

    def test_a_stall_between_events_ends_the_call_keeping_what_came(self, chat, settings):
        settings.AGENT_FIRST_EVENT_TIMEOUT_SECONDS = 0.5
        settings.AGENT_EVENT_TIMEOUT_SECONDS = 0.5
        self.serve([[text("Partial "), stall(3), text("never"), done()]])
        events = list(run_agent(chat))
        assert events == [("token", {"text": "Partial "}), PROVIDER_ERROR]
        (message,) = assistants(chat)
        assert (message.stop_reason, parts_of(message)) == ("error", [("text", "Partial ")])
        assert len(self.requests()) == 1  # output had started: not retried

    def test_retryable_failure_before_output_then_success(self, chat):
        self.serve([[fail("retryable")], [text("Back again."), done()]])
        events = list(run_agent(chat))
        (message,) = assistants(chat)
        assert events == [
            ("token", {"text": "Back again."}),
            ("done", {"message_id": message.pk, "stop_reason": "end_turn", "usage": USAGE}),
        ]
        assert parts_of(message) == [("text", "Back again.")]
        assert len(self.requests()) == 2


# --------------------------------------------------------------------------- fake (CONTRACT §5)


def fake_event(event: dict[str, Any]) -> dict[str, Any]:
    if "fail" in event:
        return {"kind": "error", "retryable": event["fail"] == "retryable", "message": f"scripted {PROVIDER_DETAIL}"}
    if event.get("kind") == "redacted":
        return {"kind": "reasoning", "text": "", "provider_data": {"redacted": REDACTED_B64}}
    if "thought_signature" in event:
        event = {k: v for k, v in event.items() if k != "thought_signature"}
        return {**event, "provider_data": {"thought_signature": "ts-Gm1"}}
    if "raw_arguments" in event:  # the fake carries the adapters' verdict instead of the raw text
        event = {k: v for k, v in event.items() if k != "raw_arguments"}
        return {**event, "input": {}, "input_error": "Expecting property name enclosed in double quotes"}
    return dict(event)


class TestFakeContract(ImageContract, BackendContract):
    backend = "fake"
    other_model = "fake-other"

    def start(self, settings, monkeypatch) -> None:
        self.settings = settings

    def serve(self, calls):
        path = self.tmp_path / "script.json"
        path.write_text(json.dumps({"calls": [[fake_event(e) for e in call] for call in calls]}))
        self.settings.AGENT_FAKE_SCRIPT = str(path)

    def requests(self):
        return get_backend().requests

    def assert_state_sent(self, request):
        assert request["messages"][-2]["parts"] == [
            {"type": "reasoning", "text": "Two plus three.", "signature": "sig-R2d2"},
            {"type": "reasoning", "text": "", "provider_data": {"redacted": REDACTED_B64}},
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "add",
                "input": {"a": 2, "b": 3},
                "provider_data": {"thought_signature": "ts-Gm1"},
            },
        ]

    def assert_image_sent(self, request, data):
        parts = request["messages"][-1]["parts"]  # (an attachment's part also names its id for the model)
        images = [{k: p.get(k) for k in ("type", "media_type", "data")} for p in parts if p["type"] == "image"]
        assert images == [{"type": "image", "media_type": "image/png", "data": data}]

    def assert_no_state_sent(self, request):
        assert request["model"] == self.other_model
        assert request["messages"][1]["parts"] == [
            {"type": "reasoning", "text": "Two plus three."},
            {"type": "reasoning", "text": ""},
            {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 2, "b": 3}},
        ]

    def assert_results_sent(self, request, results):
        assert request["messages"][-1] == {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": id, "name": "add", "result": result, "status": status}
                for id, result, status in results
            ],
        }


# --------------------------------------------------------------------------- OpenAI chat/completions SSE

OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "content_filtered": "content_filter",
}
OPENAI_HTTP_ERRORS = {
    "retryable": Reply(
        status=429,
        headers={"retry-after": "1", "x-ratelimit-remaining-requests": "0"},
        body=json.dumps(
            {
                "error": {
                    "message": f"Rate limit reached for gpt-4o-mini on requests per min (RPM). {PROVIDER_DETAIL}",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            }
        ),
    ),
    "fatal": Reply(
        status=400,
        body=json.dumps(
            {
                "error": {
                    "message": f"Invalid 'messages[1].content': {PROVIDER_DETAIL}",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": None,
                }
            }
        ),
    ),
    "context:openai": Reply(
        status=400,
        body=json.dumps(
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, your messages "
                    "resulted in 130512 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        ),
    ),
    "context:llamacpp": Reply(
        status=400,
        body=json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 4410,
                    "n_ctx": 4096,
                }
            }
        ),
    ),
    "context:gemini": Reply(
        status=400,
        body=json.dumps(
            [
                {
                    "error": {
                        "code": 400,
                        "message": "The input token count (1100230) exceeds the maximum number of tokens "
                        "allowed (1048576).",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ]
        ),
    ),
}


OPENAI_ENVELOPE = {
    "id": "chatcmpl-Contract0001",
    "object": "chat.completion.chunk",
    "created": 1730000000,
    "model": "gpt-4o-mini-2024-07-18",
    "system_fingerprint": "fp_0ba0d124f1",
}


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {**OPENAI_ENVELOPE, "choices": [choice], "usage": None}


def openai_usage_chunk(usage: dict[str, int]) -> dict[str, Any]:
    """The trailing `include_usage` chunk: no choices; prompt_tokens counts the cached ones too."""
    prompt = usage["input_tokens"] + usage["cache_read_tokens"]
    return {
        **OPENAI_ENVELOPE,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage["output_tokens"],
            "total_tokens": prompt + usage["output_tokens"],
            "prompt_tokens_details": {"cached_tokens": usage["cache_read_tokens"], "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }


def openai_reply(call: list[dict[str, Any]]) -> Reply:
    if "fail" in call[0]:
        return OPENAI_HTTP_ERRORS[call[0]["fail"]]
    chunks: list[Any] = [openai_chunk({"role": "assistant", "content": "", "refusal": None})]
    tool_index = 0
    pauses: dict[int, float] = {}
    for position, event in enumerate(call):
        if "fail" in event:
            error = {"message": f"The server had an error. {PROVIDER_DETAIL}", "type": "server_error", "code": None}
            return Reply(body=sse(*chunks, {"error": error}, done=False), pause_before=pauses)
        if "stall" in event:
            pauses[0 if position == 0 else len(chunks)] = event["stall"]
            continue
        match event["kind"]:
            case "text":
                chunks.append(openai_chunk({"content": event["text"]}))
            case "reasoning":  # DeepSeek-style; chat/completions has no signature
                chunks.append(openai_chunk({"reasoning_content": event["text"]}))
            case "redacted":  # OpenRouter's encrypted reasoning, in two pieces
                data = base64.b64encode(event["data"]).decode()
                for piece in halves(data):
                    detail = {"type": "reasoning.encrypted", "data": piece, "format": "anthropic-claude-v1", "index": 0}
                    chunks.append(openai_chunk({"content": "", "reasoning_details": [detail]}))
            case "tool_use":
                start = {"index": tool_index, "id": event["id"], "type": "function"}
                start["function"] = {"name": event["name"], "arguments": ""}
                if "thought_signature" in event:  # Gemini's OpenAI-compatible endpoint
                    start["extra_content"] = {"google": {"thought_signature": event["thought_signature"]}}
                chunks.append(openai_chunk({"tool_calls": [start]}))
                for piece in halves(arguments_of(event)):
                    chunks.append(
                        openai_chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]})
                    )
                tool_index += 1
            case "done":
                chunks.append(openai_chunk({}, OPENAI_FINISH[event["stop_reason"]]))
                chunks.append(openai_usage_chunk(event["usage"]))
    return Reply(body=sse(*chunks), pause_before=pauses)


class TestOpenAIContract(ImageContract, RetryContract, BackendContract):
    backend = "openai"
    other_model = "gpt-4.1-mini"
    overflow_dialects = ("openai", "llamacpp", "gemini")
    supports_signature = False
    reports_cache_write = False

    def start(self, settings, monkeypatch) -> None:
        self.server = ScriptedOpenAIServer().start()
        settings.OPENAI_BASE_URL = self.server.url
        settings.OPENAI_API_KEY = "sk-contract-0000"
        settings.AGENT_MODEL = "gpt-4o-mini"

    def stop(self) -> None:
        self.server.stop()

    def close_backend(self) -> None:
        get_backend().close()

    def serve(self, calls):
        self.server.script(*[openai_reply(call) for call in calls])

    def requests(self):
        return [request.body for request in self.server.requests]

    def assert_results_sent(self, request, results):
        tail = request["messages"][-len(results) :]
        assert [(m["role"], m["tool_call_id"], json.loads(m["content"])) for m in tail] == [
            ("tool", id, result) for id, result, _ in results
        ]
        calls = request["messages"][-len(results) - 1]["tool_calls"]
        assert [call["id"] for call in calls] == [id for id, _, _ in results]

    def assert_state_sent(self, request):
        assistant = request["messages"][-2]
        assert assistant["reasoning_content"] == "Two plus three."  # DeepSeek, within the tool loop
        assert assistant["reasoning_details"] == [  # OpenRouter, joined from its pieces
            {"type": "reasoning.encrypted", "data": REDACTED_B64, "format": "anthropic-claude-v1", "index": 0}
        ]
        (call,) = assistant["tool_calls"]
        assert call["extra_content"] == {"google": {"thought_signature": "ts-Gm1"}}  # Gemini

    def assert_image_sent(self, request, data):
        url = f"data:image/png;base64,{base64.b64encode(data).decode()}"
        assert {"type": "image_url", "image_url": {"url": url}} in request["messages"][-1]["content"]

    def assert_no_state_sent(self, request):
        assert request["model"] == self.other_model
        for message in request["messages"]:
            assert not {"reasoning_content", "reasoning_details"} & message.keys()
            assert all("extra_content" not in call for call in message.get("tool_calls", []))
        assert REDACTED_B64 not in json.dumps(request)


# --------------------------------------------------------------------------- Bedrock ConverseStream frames

BEDROCK_STOP = {"content_filtered": "guardrail_intervened"}
BEDROCK_HTTP_ERRORS = {
    "retryable": {
        "status": 429,
        "error_type": "ThrottlingException",
        "message": f"Too many requests. {PROVIDER_DETAIL}",
    },
    "fatal": {"status": 400, "error_type": "ValidationException", "message": f"Malformed input. {PROVIDER_DETAIL}"},
    "context:claude": {
        "status": 400,
        "error_type": "ValidationException",
        "message": "prompt is too long: 210317 tokens > 200000 maximum",
    },
    "context:bedrock": {
        "status": 400,
        "error_type": "ValidationException",
        "message": "Input is too long for requested model.",
    },
}
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


def bedrock_usage(usage: dict[str, int]) -> dict[str, int]:
    wire = {"inputTokens": usage["input_tokens"], "outputTokens": usage["output_tokens"]}
    wire["totalTokens"] = sum(usage.values())
    if usage["cache_read_tokens"]:
        wire["cacheReadInputTokens"] = usage["cache_read_tokens"]
    if usage["cache_write_tokens"]:
        wire["cacheWriteInputTokens"] = usage["cache_write_tokens"]
    return wire


class _BedrockFrames:
    """Neutral events → the events boto3 yields: text blocks without a start, tool blocks with one."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        self.index = -1
        self.open: str | None = None

    def delta(self, delta: dict[str, Any]) -> None:
        self.events.append({"contentBlockDelta": {"delta": delta, "contentBlockIndex": self.index}})

    def block(self, kind: str) -> None:
        if self.open != kind:
            self.close()
            self.index, self.open = self.index + 1, kind

    def close(self) -> None:
        if self.open is not None:
            self.events.append({"contentBlockStop": {"contentBlockIndex": self.index}})
            self.open = None

    def add(self, event: dict[str, Any]) -> None:
        match event["kind"]:
            case "text":
                self.block("text")
                self.delta({"text": event["text"]})
            case "reasoning":
                self.block("reasoning")
                self.delta({"reasoningContent": {"text": event["text"]}})
                self.delta({"reasoningContent": {"signature": event["signature"]}})
                self.close()
            case "redacted":  # bytes in boto3, base64 in the frame's JSON
                self.block("redacted")
                self.delta({"reasoningContent": {"redactedContent": base64.b64encode(event["data"]).decode()}})
                self.close()
            case "tool_use":
                self.block("tool_use")
                start = {"toolUse": {"toolUseId": event["id"], "name": event["name"]}}
                self.events.append({"contentBlockStart": {"start": start, "contentBlockIndex": self.index}})
                for piece in ["", *halves(arguments_of(event))]:  # the first input piece is empty on the wire
                    self.delta({"toolUse": {"input": piece}})
                self.close()
            case "done":
                self.close()
                reason = BEDROCK_STOP.get(event["stop_reason"], event["stop_reason"])
                self.events.append({"messageStop": {"stopReason": reason}})
                metadata = {"usage": bedrock_usage(event["usage"]), "metrics": {"latencyMs": 321}}
                self.events.append({"metadata": metadata})


def bedrock_response(call: list[dict[str, Any]]) -> dict[str, Any]:
    if "fail" in call[0]:
        return BEDROCK_HTTP_ERRORS[call[0]["fail"]]
    frames = _BedrockFrames()
    for event in call:
        if "stall" in event:
            frames.events.append({"sleep": event["stall"]})
            continue
        if "fail" in event:
            frames.events.append(
                {
                    "exception": "modelStreamErrorException",
                    "message": f"Model Stream Error. {PROVIDER_DETAIL}",
                    "originalStatusCode": 500,
                }
            )
            break
        frames.add(event)
    return {"events": frames.events}


class TestBedrockContract(ImageContract, RetryContract, BackendContract):
    backend = "bedrock"
    other_model = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    overflow_dialects = ("claude", "bedrock")

    def start(self, settings, monkeypatch) -> None:
        self.server = BedrockStubServer().start()
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDCONTRACT00000000")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "contract-dummy-secret")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(self.tmp_path / "no-config"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(self.tmp_path / "no-credentials"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", self.server.url)
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
            monkeypatch.delenv(name, raising=False)
        settings.AWS_REGION = "us-east-1"
        settings.AGENT_MODEL = BEDROCK_MODEL

    def stop(self) -> None:
        self.server.stop()

    def close_backend(self) -> None:
        client = get_backend()._client
        if client is not None:
            client.close()

    def serve(self, calls):
        self.server.add(*[bedrock_response(call) for call in calls])

    def requests(self):
        assert {request["model"] for request in self.server.requests} <= {BEDROCK_MODEL, self.other_model}
        return [request["body"] for request in self.server.requests]

    def assert_results_sent(self, request, results):
        statuses = {"ok": "success", "error": "error"}
        assert request["messages"][-1] == {
            "role": "user",
            "content": [
                *[
                    {"toolResult": {"toolUseId": id, "content": [{"json": result}], "status": statuses[status]}}
                    for id, result, status in results
                ],
                {"cachePoint": {"type": "default"}},  # Claude 3.5 Haiku caches the prompt up to here
            ],
        }
        uses = [block["toolUse"]["toolUseId"] for block in request["messages"][-2]["content"] if "toolUse" in block]
        assert uses == [id for id, _, _ in results]

    def assert_state_sent(self, request):
        assert request["messages"][-2]["content"] == [
            {"reasoningContent": {"reasoningText": {"text": "Two plus three.", "signature": "sig-R2d2"}}},
            {"reasoningContent": {"redactedContent": REDACTED_B64}},  # (boto3 sends the bytes as base64)
            {"toolUse": {"toolUseId": "call_1", "name": "add", "input": {"a": 2, "b": 3}}},
        ]

    def assert_image_sent(self, request, data):
        image = {"image": {"format": "png", "source": {"bytes": base64.b64encode(data).decode()}}}
        assert image in request["messages"][-1]["content"]  # (boto3 sends the bytes as base64)

    def assert_no_state_sent(self, request):
        assert request["messages"][1]["content"] == [
            {"toolUse": {"toolUseId": "call_1", "name": "add", "input": {"a": 2, "b": 3}}}
        ]


# --------------------------------------------------------------------------- Anthropic Messages SSE

ANTHROPIC_STOP = {"content_filtered": "refusal"}  # (the API's word for an answer it withholds)
ANTHROPIC_HTTP_ERRORS = {
    "retryable": Reply(
        status=529, headers={"retry-after": "1"}, body=error_body("overloaded_error", f"Overloaded {PROVIDER_DETAIL}")
    ),
    "fatal": Reply(status=400, body=error_body("invalid_request_error", f"messages: bad {PROVIDER_DETAIL}")),
    "context:anthropic": Reply(
        status=400, body=error_body("invalid_request_error", "prompt is too long: 210417 tokens > 200000 maximum")
    ),
}


class _AnthropicEvents:
    """Neutral events → the Messages API's streamed events, a content block per kind of content."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.index = -1
        self.open: str | None = None

    def start(self, kind: str, block: dict[str, Any]) -> None:
        self.close()
        self.index, self.open = self.index + 1, kind
        self.payloads.append({"type": "content_block_start", "index": self.index, "content_block": block})

    def delta(self, delta: dict[str, Any]) -> None:
        self.payloads.append({"type": "content_block_delta", "index": self.index, "delta": delta})

    def close(self) -> None:
        if self.open is not None:
            self.payloads.append({"type": "content_block_stop", "index": self.index})
            self.open = None

    def add(self, event: dict[str, Any]) -> None:
        match event["kind"]:
            case "text":
                if self.open != "text":
                    self.start("text", {"type": "text", "text": ""})
                self.delta({"type": "text_delta", "text": event["text"]})
            case "reasoning":
                self.start("thinking", {"type": "thinking", "thinking": "", "signature": ""})
                self.delta({"type": "thinking_delta", "thinking": event["text"]})
                self.delta({"type": "signature_delta", "signature": event["signature"]})
                self.close()
            case "redacted":
                self.start("redacted", {"type": "redacted_thinking", "data": base64.b64encode(event["data"]).decode()})
                self.close()
            case "tool_use":
                self.start("tool_use", {"type": "tool_use", "id": event["id"], "name": event["name"], "input": {}})
                for piece in ["", *halves(arguments_of(event))]:
                    self.delta({"type": "input_json_delta", "partial_json": piece})
                self.close()
            case "done":
                self.close()
                reason = ANTHROPIC_STOP.get(event["stop_reason"], event["stop_reason"])
                delta = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}}
                self.payloads += [
                    {**delta, "usage": {"output_tokens": event["usage"]["output_tokens"]}},
                    {"type": "message_stop"},
                ]


def anthropic_reply(call: list[dict[str, Any]]) -> Reply:
    if "fail" in call[0]:
        return ANTHROPIC_HTTP_ERRORS[call[0]["fail"]]
    done_usage = next((e["usage"] for e in call if e.get("kind") == "done"), USAGE)
    start = message_start(
        done_usage["input_tokens"],
        cache_read=done_usage["cache_read_tokens"],
        cache_write=done_usage["cache_write_tokens"],
    )
    stream = _AnthropicEvents()
    stream.payloads.append(start)
    pauses: dict[int, float] = {}
    for position, event in enumerate(call):
        if "fail" in event:
            error = {"type": "error", "error": {"type": "overloaded_error", "message": f"Overloaded {PROVIDER_DETAIL}"}}
            stream.payloads.append(error)
            break
        if "stall" in event:
            pauses[0 if position == 0 else len(stream.payloads)] = event["stall"]
            continue
        stream.add(event)
    return Reply(body=events(*stream.payloads), pause_before=pauses)


class TestAnthropicContract(ImageContract, RetryContract, BackendContract):
    backend = "anthropic"
    other_model = "claude-sonnet-4-5"
    overflow_dialects = ("anthropic",)
    content_filter_stop = "refusal"

    def start(self, settings, monkeypatch) -> None:
        self.server = ScriptedAnthropicServer().start()
        settings.ANTHROPIC_BASE_URL = self.server.url
        settings.ANTHROPIC_API_KEY = "sk-ant-contract-0000"
        settings.AGENT_MODEL = "claude-haiku-4-5"

    def stop(self) -> None:
        self.server.stop()

    def close_backend(self) -> None:
        get_backend().close()

    def serve(self, calls):
        self.server.script(*[anthropic_reply(call) for call in calls])

    def requests(self):
        return [request.body for request in self.server.requests]

    def assert_results_sent(self, request, results):
        blocks = [
            {"type": "tool_result", "tool_use_id": id, "content": json.dumps(result)}
            | ({"is_error": True} if status == "error" else {})
            for id, result, status in results
        ]
        blocks[-1]["cache_control"] = {"type": "ephemeral"}  # the prompt is cached up to here
        assert request["messages"][-1] == {"role": "user", "content": blocks}
        uses = [block["id"] for block in request["messages"][-2]["content"] if block["type"] == "tool_use"]
        assert uses == [id for id, _, _ in results]

    def assert_state_sent(self, request):
        assert request["messages"][-2]["content"] == [
            {"type": "thinking", "thinking": "Two plus three.", "signature": "sig-R2d2"},
            {"type": "redacted_thinking", "data": REDACTED_B64},
            {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 2, "b": 3}},
        ]

    def assert_image_sent(self, request, data):
        source = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()}
        (image,) = [block for block in request["messages"][-1]["content"] if block["type"] == "image"]
        assert image == {"type": "image", "source": source, "cache_control": {"type": "ephemeral"}}  # (last block)

    def assert_no_state_sent(self, request):
        assert request["model"] == self.other_model
        assert request["messages"][1]["content"] == [
            {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 2, "b": 3}}
        ]
