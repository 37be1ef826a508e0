"""The assistant's column beside a post's editor follows its member's seat as the blog page's does
(tests/blog/test_column_live.py): the editor's top line is redrawn on `blog.updated` from
`/blogs/<slug>/posts/<pk>/head/?assistant=1|0`, and the other column comes out of band only when the seat
no longer matches what the page shows. The post's own form is never part of the answer: the words typed
in it are the page's alone."""

from __future__ import annotations

import re
from html import unescape

import pytest

from blog import live
from blog.chat import start_session
from blog.models import Seat
from tests.blog.conftest import browser, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def post(team):
    return make_post(team.blog, "Beside the panel")


def line(user, post, shown: str) -> str:
    response = browser(user).get(f"/blogs/notes/posts/{post.pk}/head/?assistant={shown}")
    assert response.status_code == 200
    return unescape(response.content.decode())


def assistant_off(team, role: str = "editor") -> None:
    Seat.objects.filter(blog=team.blog, user=team.user(role)).update(may_use_assistant=False)


def test_the_editor_tells_its_line_which_column_it_shows(team, post):
    panel = browser(team.editor).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert f'hx-get="/blogs/notes/posts/{post.pk}/head/?assistant=1"' in panel and 'id="assistant"' in panel
    assistant_off(team)
    note = browser(team.editor).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert f'hx-get="/blogs/notes/posts/{post.pk}/head/?assistant=0"' in note
    assert '<aside class="assistant-off" id="assistant-off"' in note and 'id="assistant"' not in note
    assert "The assistant is off for you on Notes." in note and 'href="#assistant"' not in note
    assert 'id="post-form"' in note and "data-unsent" not in note  # (the editor itself as ever)


def test_a_panel_the_seat_still_allows_is_not_sent_again(team, post):
    body = line(team.editor, post, "1")
    assert 'href="#assistant"' in body and f'hx-get="/blogs/notes/posts/{post.pk}/head/?assistant=1"' in body
    assert "<aside" not in body and "chat-form" not in body and 'id="page-stream"' not in body
    assert 'id="post-form"' not in body


def test_the_assistant_taken_away_sends_the_note_in_the_panels_place(team, post):
    start_session(team.editor, team.blog, post)
    assistant_off(team)
    body = line(team.editor, post, "1")
    assert (
        '<aside class="assistant-off" id="assistant-off" aria-label="Assistant" hx-swap-oob="outerHTML:#assistant">'
        in body
    )
    assert "The assistant is off for you on Notes." in body
    assert "<textarea readonly" in body and "wasn't sent" in body  # (filled by the page with what was typed)
    assert "chat-form" not in body and 'href="#assistant"' not in body and 'id="post-form"' not in body
    assert f'hx-get="/blogs/notes/posts/{post.pk}/head/?assistant=0"' in body
    stream = re.search(r'<div id="page-stream"[^>]*>', body)
    assert stream and 'sse-connect="/blogs/notes/events/"' in stream[0] and 'hx-swap-oob="true"' in stream[0]
    assert f'data-head="{live.head_mark(team.blog, team.seat("editor"))}"' in stream[0]  # (what it shows now)


def test_made_a_viewer_the_note_says_so(team, post):
    Seat.objects.filter(blog=team.blog, user=team.editor).update(role=Seat.VIEWER)
    body = line(team.editor, post, "1")
    assert "You're a viewer of Notes" in body and 'hx-swap-oob="outerHTML:#assistant"' in body


def test_the_assistant_allowed_again_sends_the_panel_with_the_posts_latest_chat(team, post):
    start_session(team.editor, team.blog, post)
    latest = start_session(team.editor, team.blog, post)
    start_session(team.editor, team.blog)  # (the blog page's panel: not this one's)
    body = line(team.editor, post, "0")
    assert (
        '<aside class="assistant-panel" id="assistant" aria-label="Assistant" hx-swap-oob="outerHTML:#assistant-off">'
        in body
    )
    assert f'data-chat="{latest.pk}"' in body and 'href="#assistant"' in body and 'id="post-form"' not in body
    assert f'hx-get="/blogs/notes/posts/{post.pk}/head/?assistant=1"' in body
    stream = re.search(r'<div id="page-stream"[^>]*>', body)
    assert stream and f'sse-connect="/blogs/notes/events/?chat={latest.pk}"' in stream[0]


def test_with_no_chat_yet_the_panel_sent_listens_for_one_beside_this_post(team, post):
    start_session(team.author, team.blog)  # (the blog page's)
    body = line(team.author, post, "0")
    assert 'hx-swap-oob="outerHTML:#assistant-off"' in body and 'id="chat-form"' in body
    assert f'sse-connect="/blogs/notes/events/?panel={post.pk}"' in body
    assert f'hx-post="/blogs/notes/posts/{post.pk}/chats/send"' in body


@pytest.mark.parametrize("shown", ["0", "1"])
def test_the_line_is_the_members_only_and_of_this_blogs_posts(team, other_team, client, post, shown):
    assert browser(team.outsider).get(f"/blogs/notes/posts/{post.pk}/head/?assistant={shown}").status_code == 404
    elsewhere = make_post(other_team.blog, "Not of notes")
    assert browser(team.editor).get(f"/blogs/notes/posts/{elsewhere.pk}/head/?assistant={shown}").status_code == 404
    assert client.get(f"/blogs/notes/posts/{post.pk}/head/?assistant={shown}").status_code == 302  # (to sign in)
    assert browser(team.editor).post(f"/blogs/notes/posts/{post.pk}/head/?assistant={shown}").status_code == 405
