"""Provider state on the transcript: kept losslessly with who made it, sent back only to that backend
and model, never shown to people (redacted reasoning reads "redacted thinking")."""

from __future__ import annotations

import base64

import pytest

from agent.display import REDACTED_THINKING, STOP_NOTES, turn_blocks
from agent.models import Message, Part
from agent.state import Run
from agent.transcript import add_message, build_neutral_messages, part_for_model

pytestmark = pytest.mark.django_db

SECRET_BYTES = base64.b64encode(b"encrypted-thinking-bytes").decode()
DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}


def test_redacted_reasoning_is_kept_for_the_model_and_shown_as_redacted_thinking(api, chat, script, settings):
    settings.AGENT_MODEL = "model-a"
    script(
        [
            [
                {"kind": "reasoning", "text": "", "provider_data": {"redacted": SECRET_BYTES}},
                {"kind": "text", "text": "Done."},
                DONE,
            ]
        ]
    )
    events = api.turn(chat, "Hi")
    assert [name for name, _ in events] == ["token", "done"]  # nothing of it streams to people

    part = Part.objects.get(message__session=chat, type="reasoning")
    assert (part.provider_data, part.provider_backend, part.provider_model) == (
        {"redacted": SECRET_BYTES},
        "fake",
        "model-a",
    )
    body = api.get(f"/api/agent/sessions/{chat.pk}").content.decode()
    assert SECRET_BYTES not in body
    assert api.transcript(chat)["messages"][1]["parts"][0] == {"type": "reasoning", "text": "", "redacted": True}

    message = Message.objects.get(session=chat, role=Message.ASSISTANT)
    blocks = turn_blocks([message], {})
    assert blocks[0] == {"kind": "reasoning", "text": REDACTED_THINKING}
    assert SECRET_BYTES not in repr(blocks)

    assert build_neutral_messages(chat, origin=("fake", "model-a"))[1]["parts"][0] == {
        "type": "reasoning",
        "text": "",
        "provider_data": {"redacted": SECRET_BYTES},
    }
    assert build_neutral_messages(chat, origin=("fake", "model-b"))[1]["parts"][0] == {"type": "reasoning", "text": ""}
    assert build_neutral_messages(chat, origin=("openai", "model-a"))[1]["parts"][0] == {
        "type": "reasoning",
        "text": "",
    }


def test_a_signature_is_provider_state_too(chat):
    run = Run(chat)
    add_message(run, Message.USER, [{"type": "text", "text": "Hi"}])
    add_message(
        run,
        Message.ASSISTANT,
        [{"type": "reasoning", "text": "Hm.", "signature": "sig-1"}, {"type": "text", "text": "Hello"}],
        backend="bedrock",
        model_id="anthropic.claude-x",
    )
    part = Part.objects.get(type="reasoning")
    assert (part.provider_backend, part.provider_model) == ("bedrock", "anthropic.claude-x")
    mine = {"type": "reasoning", "text": "Hm.", "signature": "sig-1"}
    assert part_for_model(part, ("bedrock", "anthropic.claude-x")) == mine
    assert part_for_model(part, ("bedrock", "anthropic.claude-y")) == {"type": "reasoning", "text": "Hm."}
    assert part_for_model(part) == mine  # no origin: everything kept (the transcript as stored)


def test_a_signature_stored_before_origins_were_recorded_is_kept(chat):
    run = Run(chat)
    message = add_message(run, Message.ASSISTANT, [{"type": "reasoning", "text": "Hm.", "signature": "sig-1"}])
    Part.objects.filter(message=message).update(provider_backend="", provider_model="")
    (part,) = Part.objects.filter(message=message)
    assert part_for_model(part, ("bedrock", "any")) == {"type": "reasoning", "text": "Hm.", "signature": "sig-1"}


@pytest.mark.parametrize("stop_reason", ["incomplete", "max_tokens", "stopped", "content_filtered", "refusal"])
def test_an_answer_that_did_not_end_normally_says_so(chat, stop_reason):
    message = add_message(Run(chat), Message.ASSISTANT, [{"type": "text", "text": "Partial"}], stop_reason=stop_reason)
    assert turn_blocks([message], {})[-1] == {"kind": "note", "text": STOP_NOTES[stop_reason]}


def test_the_admin_shows_cache_tokens_and_where_state_goes_never_its_bytes(chat, django_user_model):
    from django.test import Client

    message = add_message(
        Run(chat),
        Message.ASSISTANT,
        [{"type": "reasoning", "text": "", "provider_data": {"redacted": SECRET_BYTES}}],
        backend="bedrock",
        model_id="anthropic.claude-x",
        cache_read_tokens=1234,
        cache_write_tokens=567,
    )
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("audit", password="audit-pass-123"))
    listing = client.get("/admin/agent/message/").content.decode()
    assert "1234" in listing and "567" in listing
    page = client.get(f"/admin/agent/message/{message.pk}/change/").content.decode()
    assert "bedrock / anthropic.claude-x: redacted" in page
    assert SECRET_BYTES not in page


def test_each_call_records_the_thinking_asked_of_it(api, chat, script, settings):
    settings.AGENT_REASONING = "high"
    script([[{"kind": "text", "text": "Hm."}, DONE], [{"kind": "text", "text": "Ok."}, DONE]])
    api.turn(chat, "Hi")
    settings.AGENT_REASONING = "off"
    api.turn(chat, "Again")
    assert list(Message.objects.filter(session=chat, role="assistant").values_list("reasoning", flat=True)) == [
        "high",
        "",
    ]


def test_an_answer_keeps_the_order_the_model_wrote_it_in(chat, script, settings):
    """Reasoning, text and tool calls may alternate within one answer (a note between two tool calls:
    Sonnet 5.5, OpenAI's Responses API). Providers that sign reasoning want each block back where it
    was, so the transcript keeps the order and the next call sends it back in it."""
    from agent.loop import run_agent
    from agent.tools import register, unregister

    settings.AGENT_MODEL = "model-a"
    register("look", description="Looks")(lambda session: {"seen": True})
    try:
        script(
            [
                [
                    {"kind": "reasoning", "text": "First the list"},
                    {"kind": "reasoning", "text": ".", "signature": "sig-1"},
                    {"kind": "text", "text": "Let me "},
                    {"kind": "text", "text": "look."},
                    {"kind": "tool_use", "id": "c1", "name": "look", "input": {}},
                    {"kind": "reasoning", "text": "Then the other.", "provider_data": {"item": {"id": "rs_2"}}},
                    {"kind": "tool_use", "id": "c2", "name": "look", "input": {}},
                    {"kind": "done", "stop_reason": "tool_use"},
                ],
                [{"kind": "text", "text": "Both seen."}, DONE],
            ]
        )
        add_message(Run(chat), Message.USER, [{"type": "text", "text": "Look twice"}])
        list(run_agent(chat))
    finally:
        unregister("look")
    answer = build_neutral_messages(chat, origin=("fake", "model-a"))[1]
    assert answer["parts"] == [
        {"type": "reasoning", "text": "First the list.", "signature": "sig-1"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "c1", "name": "look", "input": {}},
        {"type": "reasoning", "text": "Then the other.", "provider_data": {"item": {"id": "rs_2"}}},
        {"type": "tool_use", "id": "c2", "name": "look", "input": {}},
    ]
    message = Message.objects.filter(session=chat, role=Message.ASSISTANT).first()
    assert [block["kind"] for block in turn_blocks([message], {"c1": "ok", "c2": "ok"})] == [
        "reasoning",
        "text",
        "chip",
        "reasoning",
        "chip",
    ]
