"""The blog page's assistant column follows its member's seat: the header's redrawing (`blog_head`, on a
`blog.updated` the seat's saving announces) says which column the page shows (`?assistant=1` the panel,
`0` the note), and the server sends the other one out of band only when the seat no longer matches it.
A panel that stays is never sent (words may be typed in it, an answer streaming)."""

from __future__ import annotations

import re
from html import unescape

import pytest

from blog import blogs
from blog.chat import start_session
from blog.models import Seat
from tests.blog.conftest import browser

pytestmark = pytest.mark.django_db


def head(user, shown: str) -> str:
    response = browser(user).get(f"/blogs/notes/head/?assistant={shown}")
    assert response.status_code == 200
    return unescape(response.content.decode())


def assistant_off(team, role: str = "editor") -> None:
    Seat.objects.filter(blog=team.blog, user=team.user(role)).update(may_use_assistant=False)


def test_the_blog_page_tells_its_header_which_column_it_shows(team):
    panel = browser(team.editor).get("/blogs/notes/").content.decode()
    assert 'hx-get="/blogs/notes/head/?assistant=1"' in panel and 'id="assistant"' in panel
    note = browser(team.viewer).get("/blogs/notes/").content.decode()
    assert 'hx-get="/blogs/notes/head/?assistant=0"' in note
    assert '<aside class="assistant-off" id="assistant-off"' in note and 'id="assistant"' not in note
    assert "data-unsent" not in note  # (only a note that takes a panel's place keeps words typed)


def test_a_panel_the_seat_still_allows_is_not_sent_again(team):
    body = head(team.editor, "1")
    assert 'href="#assistant"' in body and 'hx-get="/blogs/notes/head/?assistant=1"' in body
    assert "<aside" not in body and "chat-form" not in body and 'id="page-stream"' not in body


def test_the_assistant_taken_away_sends_the_note_in_the_panels_place(team):
    start_session(team.editor, team.blog)
    assistant_off(team)
    body = head(team.editor, "1")
    assert (
        '<aside class="assistant-off" id="assistant-off" aria-label="Assistant" hx-swap-oob="outerHTML:#assistant">'
        in body
    )
    assert "The assistant is off for you on Notes." in body
    assert "<textarea readonly" in body and "wasn't sent" in body  # (filled by the page with what was typed)
    assert "chat-form" not in body and 'href="#assistant"' not in body
    assert 'hx-get="/blogs/notes/head/?assistant=0"' in body
    stream = re.search(r'<div id="page-stream"[^>]*>', body)
    assert stream and 'sse-connect="/blogs/notes/events/"' in stream[0] and 'hx-swap-oob="true"' in stream[0]


def test_made_a_viewer_the_note_says_so(team):
    Seat.objects.filter(blog=team.blog, user=team.editor).update(role=Seat.VIEWER)
    body = head(team.editor, "1")
    assert "You're a viewer of Notes" in body and 'hx-swap-oob="outerHTML:#assistant"' in body


def test_the_assistant_allowed_again_sends_the_panel_with_the_latest_chat(team):
    start_session(team.editor, team.blog)
    latest = start_session(team.editor, team.blog)
    body = head(team.editor, "0")
    assert (
        '<aside class="assistant-panel" id="assistant" aria-label="Assistant" hx-swap-oob="outerHTML:#assistant-off">'
        in body
    )
    assert f'data-chat="{latest.pk}"' in body and 'href="#assistant"' in body
    assert 'hx-get="/blogs/notes/head/?assistant=1"' in body
    stream = re.search(r'<div id="page-stream"[^>]*>', body)
    assert stream and f'sse-connect="/blogs/notes/events/?chat={latest.pk}"' in stream[0]


def test_with_no_chat_yet_the_panel_sent_listens_for_one(team):
    body = head(team.author, "0")
    assert 'hx-swap-oob="outerHTML:#assistant-off"' in body and 'id="chat-form"' in body
    assert 'sse-connect="/blogs/notes/events/?panel=blog"' in body


def test_a_note_that_stays_is_drawn_again_with_the_blogs_new_title(team):
    blogs.blog_update(blog=team.blog, title="Field <notes>", description=None)
    body = head(team.viewer, "0")
    assert (
        '<aside class="assistant-off" id="assistant-off" aria-label="Assistant" hx-swap-oob="outerHTML:#assistant-off">'
        in body
    )
    assert "You're a viewer of Field <notes>" in body  # (escaped: `head` unescapes)
    assert "Field <notes>" not in browser(team.viewer).get("/blogs/notes/head/?assistant=0").content.decode()
    assert 'id="page-stream"' not in body and "data-unsent" not in body  # (no reconnection, nothing typed to keep)


@pytest.mark.parametrize("shown", ["0", "1"])
def test_the_column_is_the_members_only(team, client, shown):
    assert browser(team.outsider).get(f"/blogs/notes/head/?assistant={shown}").status_code == 404
    assert client.get(f"/blogs/notes/head/?assistant={shown}").status_code == 302  # (signed out: to sign in)
