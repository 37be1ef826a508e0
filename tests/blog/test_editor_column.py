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
from blog.models import Blog, Seat
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


def lock(body: str) -> str:
    """The notice (or its empty place) the redrawn line sends out of band, by `#editor-lock`."""
    found = re.search(r'<(p|div) id="editor-lock"[^>]*>.*?</\1>', body, re.S)
    assert found, body
    return found[0]


def test_the_editor_is_drawn_editable_with_the_place_of_its_notice(team, post):
    page = browser(team.editor).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    head = re.search(r'<p id="editor-head"[^>]*>', page)
    assert head and 'data-editable="1"' in head[0]
    assert f'data-head="{live.head_mark(team.blog, team.seat("editor"))}"' in head[0]  # (the line's mark)
    assert '<div id="editor-lock"></div>' in page  # (not out of band: the page's own)


def test_made_a_viewer_the_line_says_the_post_can_no_longer_be_edited(team, post):
    Seat.objects.filter(blog=team.blog, user=team.editor).update(role=Seat.VIEWER)
    body = line(team.editor, post, "1")
    head = re.search(r'<p id="editor-head"[^>]*>', body)
    assert head and 'data-editable="0"' in head[0]
    notice = lock(body)
    assert 'class="error" role="alert"' in notice and 'hx-swap-oob="true"' in notice
    assert (
        "You can no longer edit this post: your role on Notes changed. "
        "What you typed is kept below; copy it before you leave."
    ) in notice
    assert 'id="post-form"' not in body  # (the words typed stay the page's)


def test_made_an_author_beside_a_published_post_the_line_says_why(team):
    published = make_post(team.blog, "Live now", published=True)
    assert 'data-editable="1"' in line(team.editor, published, "1")
    Seat.objects.filter(blog=team.blog, user=team.editor).update(role=Seat.AUTHOR)
    body = line(team.editor, published, "1")
    assert 'data-editable="0"' in body
    assert (
        "You can no longer edit this post: it is published, and changing a published post needs the "
        "permission to publish, which your role on Notes does not give. "
        "What you typed is kept below; copy it before you leave."
    ) in lock(body)
    assert 'data-editable="1"' in line(team.author, make_post(team.blog, "A draft of theirs"), "1")  # (drafts: yes)


def test_the_role_given_back_the_line_takes_the_notice_away(team, post):
    body = line(team.editor, post, "1")
    assert 'data-editable="1"' in body
    assert lock(body) == '<div id="editor-lock" hx-swap-oob="true"></div>'  # (a notice shown goes)
    assert "You can no longer edit" not in body


def test_every_redrawn_line_and_header_carries_its_mark(team, post):
    Blog.objects.filter(pk=team.blog.pk).update(title="Notes renamed")  # (no column change)
    team.blog.refresh_from_db()
    mark = live.head_mark(team.blog, team.seat("editor"))
    head = re.search(r'<p id="editor-head"[^>]*>', line(team.editor, post, "1"))
    assert head and f'data-head="{mark}"' in head[0]
    header = browser(team.editor).get("/blogs/notes/head/?assistant=1").content.decode()
    found = re.search(r'<header class="pane-head" id="blog-head"[^>]*>', header)
    assert found and f'data-head="{mark}"' in found[0]
