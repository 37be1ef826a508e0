"""Database queries of whole turns through the HTTP API (POST the message, read its stream).

Deterministic counts, asserted exactly so that a regression (or an improvement) is seen here. They
do not grow with the transcript.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent import budget
from agent.state import Run
from agent.transcript import add_message
from blog.chat import start_session
from tests.blog.conftest import ALL, make_post, set_consent
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn"}
LIST = [
    {"kind": "tool_use", "id": "t1", "name": "list_posts", "input": {}},
    {"kind": "done", "stop_reason": "tool_use"},
]
TEXT = [{"kind": "text", "text": "Here you are."}, DONE]

# Rate limit and all budget caps on (the defaults), as a user runs it: each model call also keeps
# the day's running total for the global cap (2 statements). Each catalogue pass and each tool run
# reads the user's seat and their Consent (2 reads); the POST reads the seat once for both of the
# policy's answers (may read, may use: `SessionPolicy.access`); the stream, opened with the POST's pass
# (`agent.stream_pass`), reads only the seat, for the policy's "may read". A turn asks once where
# the transcript ends, reads the latest summary and what follows it, and (the fake backend) counts
# the session's model calls.
# A message and its parts are written in one transaction: the same statements on every database.
TEXT_TURN = 31
TOOL_ROUND_TRIP = 20  # incl. the grant's first "last used" stamp (later runs within a minute: 19)


def http_turn_queries(team, script, earlier: int, calls) -> int:
    set_consent(team.owner, team.blog, ALL)
    session = start_session(team.owner, team.blog)
    for i in range(earlier):
        add_message(Run(session), "user" if i % 2 == 0 else "assistant", [{"type": "text", "text": f"message {i}"}])
    api = ApiClient(team.owner)
    script(calls)
    budget.add_to_day(timezone.now().date(), Decimal("0.01"))  # steady state: today's running total exists
    with CaptureQueriesContext(connection) as ctx:
        response = api.send(session, "List my posts.")
        assert response.status_code == 202, response.content
        events = api.events(response.json()["stream_url"])
    assert events[-1][0] == "done", events
    return len(ctx.captured_queries)


@pytest.mark.parametrize("earlier", [4, 200])
def test_a_text_turn_takes_the_same_queries_whatever_the_transcript_length(team, script, earlier):
    script_calls = [TEXT] * (earlier // 2) + [TEXT]  # the fake answers by call index
    assert http_turn_queries(team, script, earlier, script_calls) == TEXT_TURN  # the user's, the reply


@pytest.mark.parametrize("earlier", [4, 200])
def test_a_tool_round_trip_takes_the_same_queries_whatever_the_transcript_length(team, script, earlier):
    make_post(team.blog, "Hello")
    before = [TEXT] * (earlier // 2)
    text = http_turn_queries(team, script, earlier, before + [TEXT])
    tool = http_turn_queries(team, script, earlier, before + [LIST, TEXT])
    # The round trip writes two more messages: the model's call of the tool, and the tool's result.
    assert (text, tool - text) == (TEXT_TURN, TOOL_ROUND_TRIP)
