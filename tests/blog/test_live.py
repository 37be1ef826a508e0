"""The blog's live channel: every change to a post reaches every open page of the blog (blog/live.py)."""

from __future__ import annotations

import pytest

from blog import services
from blog.grants import Actor
from blog.models import Seat
from tests.blog.conftest import ALL, browser, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_stream():
    """Opens a page's stream; every one opened is closed at the end of the test, passed or not (an
    open stream holds its place among its user's, `agent.streams`, for the next test)."""
    opened = []

    def open_stream(client, slug: str):
        response = client.get(f"/blogs/{slug}/events/")
        assert response.status_code == 200
        assert response["Content-Type"] == "text/event-stream"
        opened.append(response)
        chunks = iter(response.streaming_content)
        assert next(chunks) == b": keep-alive\n\n"  # listening from here on
        return response, chunks

    yield open_stream
    for response in opened:
        response.close()


def test_each_change_to_a_post_reaches_the_blogs_open_pages(team, django_capture_on_commit_callbacks, open_stream):
    response, chunks = open_stream(browser(team.viewer), team.blog.slug)
    actor = Actor(team.editor, frozenset(ALL))
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=actor, title="Fresh")
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()
    with django_capture_on_commit_callbacks(execute=True):
        services.post_publish(post=post, actor=actor)
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.published","id":{post.pk}}}]\n\n'.encode()
    response.close()


def test_another_blogs_changes_are_not_heard(team, other_team, django_capture_on_commit_callbacks, open_stream):
    response, chunks = open_stream(browser(team.owner), team.blog.slug)
    theirs = make_post(other_team.blog, "Theirs")
    ours = make_post(team.blog, "Ours")
    with django_capture_on_commit_callbacks(execute=True):
        services.post_update(post=theirs, actor=Actor(other_team.owner, frozenset(ALL)), body="x")
        services.post_update(post=ours, actor=Actor(team.owner, frozenset(ALL)), body="y")
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.updated","id":{ours.pk}}}]\n\n'.encode()
    response.close()


def test_only_members_may_listen(team, other_team, client):
    assert browser(team.outsider).get(f"/blogs/{team.blog.slug}/events/").status_code == 404
    assert browser(other_team.owner).get(f"/blogs/{team.blog.slug}/events/").status_code == 404
    assert browser(team.owner).get("/blogs/no-such-blog/events/").status_code == 404
    anonymous = client.get(f"/blogs/{team.blog.slug}/events/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_a_member_removed_while_listening_hears_no_more(team, monkeypatch, open_stream):
    from blog import live

    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.01)
    response, chunks = open_stream(browser(team.viewer), team.blog.slug)
    assert next(chunks) == b": keep-alive\n\n"  # still a member: a heartbeat
    Seat.objects.filter(blog=team.blog, user=team.viewer).delete()
    assert list(chunks) == []  # the stream ends
    response.close()


def test_the_blog_page_listens_on_its_channel(team):
    page = browser(team.viewer).get(f"/blogs/{team.blog.slug}/").content.decode()
    assert f'sse-connect="/blogs/{team.blog.slug}/events/"' in page
    assert 'sse-swap="effects"' in page


def test_one_page_too_many_stops_the_oldest_which_says_so(team, settings, open_stream):
    """Each open page holds a stream in its worker: past AGENT_MAX_STREAMS_PER_USER pages the oldest
    ends with `superseded` (the page stops listening and shows why), and answer streams keep their
    own places."""
    from agent import streams
    from blog.live import STREAM_KIND

    settings.AGENT_MAX_STREAMS_PER_USER = 2
    client = browser(team.viewer)
    first, first_chunks = open_stream(client, team.blog.slug)
    second, _ = open_stream(client, team.blog.slug)
    assert streams.open_count(team.viewer.pk, STREAM_KIND) == 2
    third, _ = open_stream(client, team.blog.slug)  # one too many: the first is stopped at once
    rest = b"".join(first_chunks)
    assert rest.startswith(b"event: superseded\ndata: ")
    assert b'id="live-status"' in rest and b"open in too many tabs" in rest
    assert team.blog.title.encode() in rest
    assert streams.open_count(team.viewer.pk, STREAM_KIND) == 2
    assert streams.open_count(team.viewer.pk) == 0  # answer streams: places of their own
    assert streams.open_count(team.editor.pk, STREAM_KIND) == 0  # and each user has their own
    second.close()
    third.close()
