"""A page's stream, opening, says what it listens from (`mark`): what the page was drawn from is
compared with it, so a change made between the page's drawing and its stream's first opening shows."""

from __future__ import annotations

import json
import re

import pytest

from blog import blogs, live, services
from blog.chat import start_session
from blog.grants import Actor
from blog.models import Blog, PostRevision, Seat
from tests.blog.conftest import ALL, browser, make_post

EVENT_SOURCE = {"HTTP_ACCEPT": "text/event-stream"}


@pytest.fixture
def opened():
    """Opens a page's stream and reads it up to its mark; every one opened is closed at the end."""
    responses = []

    def open_stream(client, slug: str, query: str = ""):
        response = client.get(f"/blogs/{slug}/events/{query}", **EVENT_SOURCE)
        assert response.status_code == 200
        responses.append(response)
        chunks = iter(response.streaming_content)
        assert next(chunks) == b": keep-alive\n\n"
        first = next(chunks).decode()
        assert first.startswith("event: mark\ndata: ") and first.endswith("\n\n")
        return json.loads(first.removeprefix("event: mark\ndata: ")), chunks

    yield open_stream
    for response in responses:
        response.close()


def drawn(html: str) -> str | None:
    found = re.search(r'<div id="page-stream"[^>]*\sdata-drawn="([^"]*)"', html)
    return found.group(1) if found else None


def test_each_change_a_page_hears_of_changes_the_blogs_mark(team, django_capture_on_commit_callbacks):
    actor = Actor(team.owner, frozenset(ALL))
    marks = [live.page_mark(team.blog)]
    assert marks == ["0"]
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=actor, title="One")
        marks.append(live.page_mark(team.blog))
        services.post_update(post=post, actor=actor, body="Changed.")
        marks.append(live.page_mark(team.blog))
        services.post_publish(post=post, actor=actor)
        marks.append(live.page_mark(team.blog))
        services.post_unpublish(post=post, actor=actor)
        marks.append(live.page_mark(team.blog))
        revision = PostRevision.objects.filter(post=post, action="update").get()
        services.post_revert(post=post, actor=actor, revision=revision)
        marks.append(live.page_mark(team.blog))
        services.post_delete(post=post, actor=actor)
        marks.append(live.page_mark(team.blog))
    assert len(set(marks)) == len(marks)
    assert live.page_mark(team.blog) == marks[-1]  # (read again, nothing changed: the same)


def test_another_blogs_changes_leave_the_mark_as_it_was(team, other_team):
    before = live.page_mark(team.blog)
    services.post_create(blog=other_team.blog, actor=Actor(other_team.owner, frozenset(ALL)), title="Elsewhere")
    assert live.page_mark(team.blog) == before


def test_the_blog_page_and_the_editor_carry_the_mark_they_were_drawn_from(team):
    post = make_post(team.blog)
    services.post_update(post=post, actor=Actor(team.owner, frozenset(ALL)), body="Once more.")
    mark = live.page_mark(team.blog)
    page = browser(team.owner).get(f"/blogs/{team.blog.slug}/").content.decode()
    editor = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/edit/").content.decode()
    assert drawn(page) == mark != "0"
    assert drawn(editor) == mark


def test_the_stream_that_replaces_the_pages_carries_no_mark_of_its_own(team):
    """The panel taking up a chat draws no post list: its stream has nothing to vouch for (the page
    keeps comparing with what it was drawn from)."""
    chat = start_session(team.owner, team.blog)
    html = browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/panel?chat={chat.pk}").content.decode()
    assert 'id="page-stream"' in html and drawn(html) is None


def test_a_stream_opening_after_a_change_says_the_mark_as_it_is_now(team, opened):
    page_drawn = drawn(browser(team.owner).get(f"/blogs/{team.blog.slug}/").content.decode())
    services.post_create(blog=team.blog, actor=Actor(team.editor, frozenset(ALL)), title="Meanwhile")
    mark, _ = opened(browser(team.owner), team.blog.slug)
    assert mark == {"posts": live.page_mark(team.blog), "head": live.head_mark(team.blog, team.seat("owner"))}
    assert mark["posts"] != page_drawn


def test_a_stream_opening_on_what_the_page_was_drawn_from_says_the_same_mark(team, opened):
    page_drawn = drawn(browser(team.owner).get(f"/blogs/{team.blog.slug}/").content.decode())
    mark, _ = opened(browser(team.owner), team.blog.slug, "?panel=blog")
    assert mark == {"posts": page_drawn, "head": live.head_mark(team.blog, team.seat("owner")), "chat": ""}


def test_a_change_committed_after_the_stream_read_its_mark_is_heard(
    team, monkeypatch, django_capture_on_commit_callbacks, opened
):
    """The mark is read once the stream listens: what it misses is published after, to the stream."""
    read = live.page_mark
    made = []

    def read_then_change(blog):
        mark = read(blog)
        with django_capture_on_commit_callbacks(execute=True):
            made.append(services.post_create(blog=team.blog, actor=Actor(team.editor, frozenset(ALL)), title="Late"))
        return mark

    monkeypatch.setattr(live, "page_mark", read_then_change)
    mark, chunks = opened(browser(team.owner), team.blog.slug)
    assert mark["posts"] != read(team.blog)
    effects = [{"type": "post.created", "id": made[0].pk}]
    assert next(chunks) == f"event: effects\ndata: {json.dumps(effects, separators=(',', ':'))}\n\n".encode()


def test_a_page_showing_no_chat_hears_its_persons_latest_chat_of_its_panel(team, opened):
    post = make_post(team.blog)
    mine = start_session(team.owner, team.blog)
    start_session(team.owner, team.blog, post)  # (beside the editor: another panel)
    start_session(team.editor, team.blog)  # (another person's)
    mark, _ = opened(browser(team.owner), team.blog.slug, "?panel=blog")
    assert mark["chat"] == str(mine.pk)
    mark, _ = opened(browser(team.editor), team.blog.slug, f"?panel={post.pk}")
    assert mark["chat"] == ""


def test_a_page_showing_a_chat_hears_no_chat_in_its_mark(team, opened):
    chat = start_session(team.owner, team.blog)
    start_session(team.owner, team.blog)
    mark, _ = opened(browser(team.owner), team.blog.slug, f"?chat={chat.pk}")
    assert list(mark) == ["posts", "head"]


def head(html: str) -> str | None:
    found = re.search(r'<div id="page-stream"[^>]*\sdata-head="([^"]*)"', html)
    return found.group(1) if found else None


def test_the_blog_page_carries_its_headers_mark(team):
    """The header's mark (title, description, owner, the member's seat) the page was drawn from, beside
    the posts' mark."""
    page = browser(team.owner).get(f"/blogs/{team.blog.slug}/").content.decode()
    assert head(page) == live.head_mark(team.blog, team.seat("owner"))


def test_the_editor_carries_its_columns_mark(team):
    """The editor has no header of the blog's, but its assistant's column follows the seat as the blog
    page's does: it is drawn with the same mark, which the stream's first answers."""
    post = make_post(team.blog)
    editor = browser(team.editor).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/edit/").content.decode()
    assert head(editor) == live.head_mark(team.blog, team.seat("editor"))


def test_the_headers_mark_says_whether_its_member_may_summon_the_assistant(team):
    marks = {live.head_mark(team.blog, team.seat(role)) for role in ("owner", "editor", "author", "viewer")}
    assert len(marks) == 4  # (each seat's links differ: the owner's, New post, the assistant)
    allowed = live.head_mark(team.blog, team.seat("editor"))
    Seat.objects.filter(blog=team.blog, user=team.editor).update(may_use_assistant=False)
    assert live.head_mark(team.blog, team.seat("editor")) != allowed
    assert live.head_mark(team.blog, None) == ""  # (no longer a member: the page's stream ends anyway)


def assistant_taken_away(team, role: str) -> None:
    Seat.objects.filter(blog=team.blog, user=team.user(role)).update(may_use_assistant=False)


def made_a_viewer(team, role: str) -> None:
    Seat.objects.filter(blog=team.blog, user=team.user(role)).update(role=Seat.VIEWER)


def allowed_again(team, role: str) -> None:
    Seat.objects.filter(blog=team.blog, user=team.user(role)).update(may_use_assistant=True)


@pytest.mark.parametrize("change", [assistant_taken_away, made_a_viewer, allowed_again])
@pytest.mark.parametrize("where", ["blog", "editor"])
def test_a_stream_opening_after_the_members_seat_changed_says_the_header_changed(team, opened, change, where):
    """A seat saved between the page's drawing and its stream's first opening: the header's mark, the seat
    read with the blog as the stream opens (no query more), tells the page to read its header (or the
    editor's line) again, whose answer brings the column the seat allows now (chat:missed, chat/tabs.js)."""
    post = make_post(team.blog)
    if change is allowed_again:
        assistant_taken_away(team, "author")
    url = f"/blogs/{team.blog.slug}/" if where == "blog" else f"/blogs/{team.blog.slug}/posts/{post.pk}/edit/"
    page = browser(team.author).get(url).content.decode()
    change(team, "author")
    mark, _ = opened(browser(team.author), team.blog.slug)
    assert mark["posts"] == drawn(page)
    assert mark["head"] != head(page)
    assert mark["head"] == live.head_mark(team.blog, team.seat("author"))


def test_the_stream_reads_its_mark_with_no_query_more_for_the_seat(team, django_assert_num_queries):
    """The blog's mark, then the blog read again with the member's seat (one query for both), then the
    panel's latest chat."""
    with django_assert_num_queries(2):
        live.Mark(team.blog, team.editor.pk, None).read()
    with django_assert_num_queries(3):
        live.Mark(team.blog, team.editor.pk, (None,)).read()


@pytest.mark.parametrize(
    "change",
    [
        lambda team: blogs.blog_update(blog=team.blog, title="Renamed"),
        lambda team: blogs.blog_update(blog=team.blog, title=team.blog.title, description="About"),
        lambda team: blogs.blog_hand_over(blog=team.blog, to_seat=team.seat("editor"), actor=team.owner),
    ],
    ids=["renamed", "described", "handed-over"],
)
def test_a_stream_opening_after_a_rename_or_a_hand_over_says_the_header_changed(team, opened, change):
    """Neither writes a revision (the posts' mark stays): the header's mark, the blog read again as the
    stream opens, tells the page drawn before it to read its header again (chat:missed, chat/tabs.js)."""
    page = browser(team.viewer).get(f"/blogs/{team.blog.slug}/").content.decode()
    drawn_head = re.search(r'\sdata-head="([^"]*)"', page).group(1)
    change(team)
    mark, _ = opened(browser(team.viewer), team.blog.slug)
    assert mark["posts"] == drawn(page)
    assert mark["head"] != drawn_head
    assert mark["head"] == live.head_mark(Blog.objects.get(pk=team.blog.pk), team.seat("viewer"))
