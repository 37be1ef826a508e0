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
from blog.chat_panel import CHATS_PER_PAGE
from tests.blog.conftest import ALL, browser, make_post, said_chat, set_consent
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


# The chats page: the person's session and user, the blog and their seat on it (may they summon the
# assistant there), a COUNT of the chats for the pager, and one read of the page's chats with their
# labels (a subquery each: the first words). A search adds no statement: its match is in the COUNT and
# the read, and each found chat's snippet is one more subquery of the read.
CHATS_PAGE = 6


@pytest.mark.parametrize("chats", [3, 30])
@pytest.mark.parametrize("q", ["", "heron"])
def test_the_chats_page_and_a_search_of_it_take_the_same_queries_whatever_the_chats(team, chats, q):
    for i in range(chats):
        session = said_chat(team.editor, team.blog, text=f"heron {i}")
        add_message(Run(session), "assistant", [{"type": "text", "text": "Herons wade."}])
    client = browser(team.editor)
    with CaptureQueriesContext(connection) as ctx:
        html = client.get("/blogs/notes/chats/", {"q": q} if q else {}).content.decode()
    assert html.count('class="chat-label"') == chats
    assert html.count("<mark>") == (chats if q else 0)
    assert len(ctx.captured_queries) == CHATS_PAGE
    reads = [query["sql"] for query in ctx.captured_queries if "agent_part" in query["sql"]]
    assert len(reads) == (2 if q else 1)  # (a search's COUNT reads the parts too; the page's read, always)


def paging_part(sql: str) -> str:
    """The part of a statement that skips a list's earlier rows: the innermost parenthesised SELECT holding
    its OFFSET, or the whole statement when the OFFSET is its own."""
    at, depth = sql.index(" OFFSET "), 0
    for start in range(at, -1, -1):
        depth += {")": 1, "(": -1}.get(sql[start], 0)
        if depth < 0:
            return sql[start : sql.index(")", at) + 1]
    return sql


@pytest.mark.parametrize("q", ["", "heron"])
def test_a_later_chats_page_reads_only_its_own_chats_labels_and_snippets(team, q):
    """A later page of the chats page skips the earlier chats without reading their labels (a subquery of
    each chat's first words) or their snippets: those are read for the page's chats only, outside the
    part of the statement that pages. What pages reads each chat's parts only for a search's match."""
    for i in range(CHATS_PER_PAGE + 5):
        said_chat(team.editor, team.blog, text=f"heron {i}")
    client = browser(team.editor)
    with CaptureQueriesContext(connection) as ctx:
        html = client.get("/blogs/notes/chats/", {"page": 2, "q": q} if q else {"page": 2}).content.decode()
    assert html.count('class="chat-label"') == 5
    assert "heron 4<" in html and "heron 5<" not in html  # (the five oldest: page 2, the latest first)
    assert len(ctx.captured_queries) == CHATS_PAGE
    (paged,) = [query["sql"] for query in ctx.captured_queries if " OFFSET " in query["sql"]]
    paging = paging_part(paged)
    assert paging != paged  # (the OFFSET is a subquery's: the chats it finds are labelled outside it)
    assert "first_words" not in paging
    assert paging.count('FROM "agent_part"') == (1 if q else 0)  # (a search's filter: no snippet read)
