"""A wait the assistant asks for ("Try again in 36 s."): right in the server's HTML, which the page
counts down (tests/e2e/test_accessibility.py), and no older than the page that shows it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent.models import Message, Turn
from agent.sse import encode_html
from blog.chat import start_session
from tests.blog.conftest import READ, browser, set_consent
from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db

LIMIT = "The assistant is at its limit for this minute."


def retry_spans(html: str) -> list[dict]:
    return [attrs for tag, attrs in tags_of(html) if tag == "span" and attrs.get("class") == "retry"]


@pytest.mark.parametrize("first", [True, False], ids=["first message", "next message"])
def test_a_message_over_the_rate_says_its_wait_in_words_and_for_the_countdown(team, settings, script, first):
    script([[{"kind": "text", "text": "ok"}, {"kind": "done", "stop_reason": "end_turn"}]])
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    set_consent(team.editor, team.blog, [READ])
    client = browser(team.editor)
    if first:
        client.post("/blogs/notes/chats/new/")  # (a new chat counts under the rate)
        url = "/blogs/notes/chats/send"
    else:
        url = f"/chat/{start_session(team.editor, team.blog).pk}/send"
        client.post(url, {"text": "one"})
    html = client.post(url, {"text": "two"}).content.decode()
    [span] = retry_spans(html)
    seconds = int(span["data-retry-seconds"])
    assert 1 <= seconds <= 60 and span["data-retry-done"] == "That wait is over: you can send a message now."
    assert "You&#x27;re sending messages too quickly. <span" in html  # (the wait said once: the next sentence)
    assert f"><span>Try again in {seconds} s.</span></span></p>" in html  # right without JS


def _failed_turn(team, ended_ago: timedelta) -> Turn:
    chat = start_session(team.editor, team.blog)
    payload = {"code": "budget_exceeded", "message": LIMIT, "retry_after_seconds": 60}
    turn = Turn.objects.create(
        session=chat,
        status=Turn.ERROR,
        terminal_event="error",
        terminal_payload=payload,
        finished_at=timezone.now() - ended_ago,
    )
    Message.objects.create(session=chat, turn=turn, role=Message.USER, position=0)
    return turn


@pytest.mark.parametrize(("ago", "left"), [(0, 60), (45, 15), (61, None)])
def test_a_wait_shown_later_is_what_is_left_of_it(team, ago, left):
    """The error keeps the wait it had when the turn ended; a reload shows what remains, or none once over."""
    set_consent(team.editor, team.blog, [READ])
    turn = _failed_turn(team, timedelta(seconds=ago))
    html = browser(team.editor).get(f"/blogs/notes/?chat={turn.session_id}").content.decode()
    assert LIMIT in html
    spans = retry_spans(html)
    if left is None:
        assert spans == [] and "try again" not in html
    else:
        assert [int(s["data-retry-seconds"]) for s in spans] in ([left], [left - 1])
        assert f"{LIMIT} <span" in html and f"<span>Try again in {spans[0]['data-retry-seconds']} s.</span>" in html
    # The stream's final fragment (a stream opened again after the turn ended) says the same.
    final = encode_html((None, "error", turn.terminal_payload), turn).decode()
    assert [int(s["data-retry-seconds"]) for s in retry_spans(final)] in (
        ([], []) if left is None else ([left], [left - 1])
    )


def test_an_error_in_the_chat_log_is_no_alert_of_its_own(team):
    """The chat's log (role=log) announces what is added to it: an alert inside it would be heard twice."""
    set_consent(team.editor, team.blog, [READ])
    turn = _failed_turn(team, timedelta(0))
    page = browser(team.editor).get(f"/blogs/notes/?chat={turn.session_id}").content.decode()
    final = encode_html((None, "error", turn.terminal_payload), turn).decode()
    for html in (page, final):
        assert ("p", {"class": "chat-error"}) in tags_of(html)
        assert 'role="alert"' not in html
