"""Bounded context: a summary of the older prefix, recent messages verbatim, never a split tool call."""

from __future__ import annotations

import pytest

from agent.backends import get_backend
from agent.context import cut_index
from agent.models import ContextSummary, Message, Spend
from agent.state import Run
from agent.transcript import add_message
from tests.agent.test_api_turns import assert_transcript_valid

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}


def history(chat, rounds):
    """`rounds` exchanges, each: user text, assistant tool_use, tool result, assistant text."""
    for i in range(rounds):
        add_message(Run(chat), "user", [{"type": "text", "text": f"request {i} " + "x" * 200}])
        add_message(Run(chat), "assistant", [{"type": "tool_use", "id": f"t{i}", "name": "look", "input": {"i": i}}])
        add_message(
            Run(chat),
            "tool",
            [{"type": "tool_result", "tool_use_id": f"t{i}", "name": "look", "result": {"i": i}, "status": "ok"}],
        )
        add_message(Run(chat), "assistant", [{"type": "text", "text": f"answer {i}"}])


def pair(role, kind="text"):
    part = {"type": kind, "text": "x"} if kind == "text" else {"type": kind}
    return (0, {"role": role, "parts": [part]})


def test_cut_lands_on_a_user_message_never_between_a_call_and_its_result():
    pairs = [
        pair("user"),
        pair("assistant", "tool_use"),
        pair("tool", "tool_result"),
        pair("assistant"),
        pair("user"),
        pair("assistant", "tool_use"),
        pair("tool", "tool_result"),
        pair("assistant"),
    ]
    assert cut_index(pairs, 4) == 4
    assert cut_index(pairs, 6) == 4  # never starts at a tool call or result: the next user message
    assert cut_index(pairs, 3) == 4  # no user message among the last 3: the latest one, whole turn kept
    assert cut_index(pairs, 100) == 0


def test_long_transcript_sends_summary_and_recent_messages(api, chat, script, settings):
    settings.AGENT_CONTEXT_MAX_TOKENS = 700
    settings.AGENT_CONTEXT_KEEP_MESSAGES = 6
    history(chat, 10)
    script([[{"kind": "text", "text": "ok"}, DONE]])
    events = api.turn(chat, "and now?")
    assert events[-1][0] == "done"
    summary = ContextSummary.objects.get(session=chat)
    sent = get_backend().requests[-1]
    assert "<conversation_summary>" in sent["system"] and summary.text in sent["system"]
    assert sent["system"].startswith(chat.system_prompt)
    assert sent["messages"][0]["role"] == "user"
    assert len(sent["messages"]) <= 6
    assert sent["messages"][-1]["parts"][0]["text"] == "and now?"
    # The summary records the last message it covers; everything after it was sent verbatim.
    after = Message.objects.filter(session=chat, position__gt=summary.up_to_position).exclude(
        role="assistant", parts=None
    )
    assert len(sent["messages"]) == after.exclude(parts=None).count() - 1  # minus the empty assistant reply
    assert_transcript_valid(chat)


def test_a_second_turn_reuses_the_summary(api, chat, script, settings):
    settings.AGENT_CONTEXT_MAX_TOKENS = 700
    settings.AGENT_CONTEXT_KEEP_MESSAGES = 6
    history(chat, 10)
    script([[{"kind": "text", "text": "ok"}, DONE], [{"kind": "text", "text": "ok again"}, DONE]])
    api.turn(chat, "one")
    api.turn(chat, "two")
    assert ContextSummary.objects.filter(session=chat).count() == 1


def test_short_transcript_is_sent_whole(api, chat, script):
    history(chat, 2)
    script([[{"kind": "text", "text": "ok"}, DONE]])
    api.turn(chat, "hi")
    assert not ContextSummary.objects.exists()
    assert len(get_backend().requests[-1]["messages"]) == 9


def test_context_too_long_triggers_one_summarise_and_retry(api, chat, script, settings):
    from agent.backends.fake import FakeBackend

    settings.AGENT_CONTEXT_KEEP_MESSAGES = 4
    history(chat, 4)
    script([[{"kind": "text", "text": "fits now"}, DONE]])
    backend = get_backend()
    original = FakeBackend.stream
    calls = []

    def stream(self, **kwargs):
        calls.append(len(kwargs["messages"]))
        if len(calls) == 1:
            from agent.exceptions import BackendError

            raise BackendError("prompt is too long", context_too_long=True)
        return original(self, **kwargs)

    backend.stream = stream.__get__(backend)
    events = api.turn(chat, "go on")
    assert [n for n, _ in events] == ["token", "done"]
    assert ContextSummary.objects.filter(session=chat).count() == 1
    summary_call, retried = calls[1], calls[2]
    assert summary_call == 1  # the summary request is one user message
    assert retried < calls[0]


def test_a_stop_cuts_a_summary_the_model_is_slow_to_write(chat, settings):
    """The summary's call is cut by a Stop like a chat call: the turn stops before the model is asked."""
    import threading

    from agent.backends import reset_backends
    from agent.backends.base import Interrupt
    from agent.loop import run_agent
    from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer, sse

    server = ScriptedOpenAIServer().start()
    try:
        chunk = {"choices": [{"index": 0, "delta": {"content": "A summary."}, "finish_reason": "stop"}]}
        server.script(Reply(body=sse(chunk), pause_before={0: 30.0}))
        settings.AGENT_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.url, "k"
        settings.AGENT_CONTEXT_MAX_TOKENS, settings.AGENT_CONTEXT_KEEP_MESSAGES = 700, 6
        reset_backends()
        history(chat, 10)
        add_message(Run(chat), "user", [{"type": "text", "text": "and now?"}])
        run, stopped = Run(chat), threading.Event()
        run.interrupt = Interrupt()

        def stop() -> None:
            stopped.set()
            run.interrupt.fire()

        server.once_asked(stop)  # (while the summary's call waits on the model)
        events = list(run_agent(chat, run=run, should_stop=stopped.is_set))
    finally:
        server.stop()
        reset_backends()
    assert events[-1][0] == "done" and events[-1][1]["stop_reason"] == "stopped", events
    assert len(server.requests) == 1 and server.requests[0].pieces_sent == 0  # the summary's, cut; no chat call
    assert not ContextSummary.objects.filter(session=chat).exists()
    assert_transcript_valid(chat)
    # Cut, it is billed all the same: counted at its prompt, as a stopped chat call is.
    assert Spend.objects.filter(user=chat.user, tokens__gt=0, settled=True).count() == 1


def test_a_full_budget_refuses_the_summary_call_too(api, chat, script, settings, user):
    """The summary is a model call like any other: with the minute's bucket full the turn ends with
    budget_exceeded before the model is asked anything, summary included."""
    from datetime import timedelta

    from django.utils import timezone

    settings.AGENT_CONTEXT_MAX_TOKENS = 700
    settings.AGENT_CONTEXT_KEEP_MESSAGES = 6
    history(chat, 10)
    Spend.objects.create(user=user, created_at=timezone.now() - timedelta(seconds=30), tokens=20000, settled=True)
    script([[{"kind": "text", "text": "never"}, DONE]])
    backend = get_backend()
    asked = len(backend.requests)
    events = api.turn(chat, "and now?")
    assert events[-1][0] == "error" and events[-1][1]["code"] == "budget_exceeded"
    assert len(backend.requests) == asked  # no summary was asked for
    assert not ContextSummary.objects.exists()
