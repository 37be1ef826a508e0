"""At most AGENT_MAX_STREAMS_PER_USER open streams per user (in a process): one more closes the oldest calmly."""

from __future__ import annotations

import re
import threading
import uuid
from contextlib import ExitStack

import pytest

from agent import hub, streams, turns
from agent.follow import follow_batches
from agent.models import Turn

DONE = {"message_id": 1, "stop_reason": "end_turn", "usage": {}}


def names(body):
    """The event names of an SSE body, in order (HTML data is not JSON: only the names are read)."""
    return re.findall(r"^event: (\S+)$", body.decode(), re.MULTILINE)


def open_stream(api, url, flavour=""):
    """A stream the user opened and read up to its first chunk (which is when it takes its place)."""
    response = api.client.get(url + flavour)
    assert response.status_code == 200
    chunks = iter(response.streaming_content)
    first = next(chunks)
    return first, chunks


@pytest.mark.django_db
@pytest.mark.parametrize("flavour", ["", "?flavour=html"])
def test_opening_one_stream_too_many_closes_the_users_oldest_and_the_turn_goes_on(api, user, chat, settings, flavour):
    settings.AGENT_MAX_STREAMS_PER_USER = 3
    run, _ = turns.begin(chat, "hi")  # a running turn, as if its greenlet were streaming it here
    channel = hub.open_channel(str(run.turn.pk))
    channel.publish("token", {"text": "Hel"})
    url = f"/api/agent/sessions/{chat.pk}/turns/{run.turn.pk}/stream"
    opened = [open_stream(api, url, flavour) for _ in range(3)]
    assert streams.open_count(user.pk) == 3
    opened.append(open_stream(api, url, flavour))  # the fourth: the first is superseded
    assert streams.open_count(user.pk) == 3

    first, rest = opened[0]
    tail = b"".join(rest)  # ends at once: no wait, no terminal event
    assert tail.startswith(streams.SUPERSEDED_BYTES)
    assert names(first + tail) == (["token", "end"] if flavour else ["token"])
    assert streams.open_count(user.pk) == 3

    channel.publish("done", DONE)
    channel.close()
    for first, rest in opened[1:]:
        assert names(first + b"".join(rest)) == (["token", "done", "end"] if flavour else ["token", "done"])
    assert streams.open_count(user.pk) == 0
    assert Turn.objects.get(pk=run.turn.pk).status == "running"  # only a stream closed, never the turn


def test_a_waiting_stream_is_woken_when_superseded():
    """Superseding wakes a follower that waits for the turn's next event (it would wait the heartbeat)."""
    channel = hub.open_channel(str(uuid.uuid4()))
    channel.publish("token", {"text": "a"})
    turn = Turn(pk=channel.turn_id)
    got = []
    with streams.opened("someone") as ticket:
        follower = threading.Thread(
            target=lambda: got.extend(follow_batches(turn, ticket=ticket, heartbeat=3600)), daemon=True
        )
        follower.start()
        with ExitStack() as newer:
            for _ in range(8):  # the default limit: the eighth newer stream supersedes it
                newer.enter_context(streams.opened("someone"))
            follower.join(60)  # (far less than the hour it would wait for a heartbeat otherwise)
            assert not follower.is_alive()
            assert ticket.superseded and streams.open_count("someone") == 8
    assert got == [[(0, "token", {"text": "a"})]]  # no heartbeat, no terminal event
    assert streams.open_count("someone") == 0


def test_zero_means_no_limit(settings):
    settings.AGENT_MAX_STREAMS_PER_USER = 0
    with ExitStack() as stack:
        tickets = [stack.enter_context(streams.opened("many")) for _ in range(50)]
        assert not any(t.superseded for t in tickets) and streams.open_count("many") == 50


def test_a_stream_opened_again_under_its_key_frees_the_place_of_the_one_it_replaces_at_once(settings):
    """A page pointing its stream elsewhere (or reconnecting) names itself: its old stream is closed and
    its place freed then, not at that stream's next heartbeat. Other keys, users and kinds keep theirs."""
    settings.AGENT_MAX_STREAMS_PER_USER = 2
    with ExitStack() as stack:
        other_page = stack.enter_context(streams.opened("me", kind="page", key="page-2"))
        no_key = stack.enter_context(streams.opened("me", kind="page"))
        elsewhere = stack.enter_context(streams.opened("someone else", kind="page", key="page-1"))
        answer = stack.enter_context(streams.opened("me", key="page-1"))
        woken = []
        first = stack.enter_context(
            streams.opened("me", kind="page", key="page-1", on_supersede=lambda: woken.append(1))
        )
        assert other_page.superseded and not no_key.superseded  # (the limit: the oldest went for it)
        again = stack.enter_context(streams.opened("me", kind="page", key="page-1"))
        assert first.superseded and woken == [1] and not no_key.superseded and not again.superseded
        assert streams.open_count("me", "page") == 2
        assert not elsewhere.superseded and not answer.superseded
