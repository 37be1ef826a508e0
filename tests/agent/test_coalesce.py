"""A follower that finds several events at one wake-up sends them in one chunk, byte for byte the same."""

from __future__ import annotations

import pytest

from agent import hub, sse
from agent.follow import follow, follow_batches
from agent.models import Turn
from agent.views import _html_events, _json_events

TURN_ID = "00000000-0000-0000-0000-000000000001"

EVENTS = [
    ("token", {"text": "Hello "}),
    ("token", {"text": "wörld \ud800\n<b>"}),
    ("reasoning", {"text": "hmm"}),
    ("tool_use", {"id": "t1", "name": "nope", "input": {"a": 1}}),
    ("tool_result", {"id": "t1", "name": "nope", "status": "ok", "result": {"ok": True}}),
    ("effects", [{"kind": "post_saved", "id": 1}]),
]


@pytest.fixture
def channel():
    channel = hub.TurnChannel(TURN_ID)
    hub._channels[TURN_ID] = channel
    yield channel
    hub._channels.pop(TURN_ID, None)


def test_events_found_at_one_wake_up_come_as_one_batch(channel):
    for name, payload in EVENTS:
        channel.publish(name, payload)
    channel.close()
    batches = list(follow_batches(Turn(pk=TURN_ID)))
    assert batches == [[(i, name, payload) for i, (name, payload) in enumerate(EVENTS)]]
    assert channel.delivered


def test_batches_resume_after_last_event_id(channel):
    for name, payload in EVENTS:
        channel.publish(name, payload)
    channel.close()
    items = list(follow(Turn(pk=TURN_ID), last_event_id=3))
    assert items == [(i, *EVENTS[i]) for i in (4, 5)]


def test_coalesced_json_bytes_equal_one_chunk_per_event():
    items = [(i, name, payload) for i, (name, payload) in enumerate(EVENTS)] + [
        (None, "heartbeat", None),
        (6, "done", {"x": 1}),
    ]
    one_each = list(_json_events(iter([[item] for item in items])))
    together = list(_json_events(iter([items])))
    assert len(one_each) == len(items) and len(together) == 1
    assert together[0] == b"".join(one_each)
    assert one_each == [
        sse.HEARTBEAT_BYTES if name == "heartbeat" else sse.encode(name, _json(payload), i)
        for i, name, payload in items
    ]


@pytest.mark.django_db
def test_coalesced_html_bytes_equal_one_chunk_per_event(chat):
    turn = Turn.objects.create(session=chat)
    items = [(i, name, payload) for i, (name, payload) in enumerate(EVENTS)]
    items.append((6, "done", {"message_id": None, "stop_reason": "end_turn", "usage": {}}))
    one_each = list(_html_events(iter([[item] for item in items]), turn))
    together = list(_html_events(iter([items]), turn))
    assert len(together) == 1 and together[0] == b"".join(one_each)
    assert together[0].endswith(b"event: end\ndata: end\n\n")


def test_json_encoding_is_unchanged():
    """encode_json skips `encode`'s line split (JSON has no raw line breaks): the same bytes."""
    for name, payload in EVENTS:
        for event_id in (None, 7):
            assert sse.encode_json(name, payload, event_id) == sse.encode(name, _json(payload), event_id)


def _json(payload):
    import json

    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
