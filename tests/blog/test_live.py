"""The blog's live channel: every change to a post reaches every open page of the blog (blog/live.py)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import events, streams
from agent.events.redis import RedisBus
from agent.markdown import render_markdown
from blog import live, services
from blog.grants import Actor
from blog.models import Seat
from tests.blog.conftest import ALL, browser, make_post

pytestmark = pytest.mark.django_db

NO_ACCESS = b"event: superseded\ndata: "  # the page's closing event, here saying why
EVENT_SOURCE = {"HTTP_ACCEPT": "text/event-stream"}  # what a page's EventSource sends


@pytest.fixture
def open_stream():
    """Opens a page's stream; every one opened is closed at the end of the test, passed or not (an
    open stream holds its place among its user's, `agent.streams`, for the next test)."""
    opened = []

    def open_stream(client, slug: str):
        response = client.get(f"/blogs/{slug}/events/", **EVENT_SOURCE)
        assert response.status_code == 200
        assert response["Content-Type"] == "text/event-stream"
        opened.append(response)
        chunks = iter(response.streaming_content)
        assert next(chunks) == b": keep-alive\n\n"  # listening from here on
        assert next(chunks).startswith(b"event: mark\ndata: {")  # what it listens from (blog/live.py)
        return response, chunks

    yield open_stream
    for response in opened:
        response.close()


def closing_after_a_change(team, django_capture_on_commit_callbacks, chunks) -> bytes:
    """A post of the blog changes; the page's stream relays none of it: the next thing it sends is
    its closing event, and nothing follows."""
    with django_capture_on_commit_callbacks(execute=True):
        services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Unheard")
    closing = next(chunks)
    assert list(chunks) == []
    return closing


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
    assert next(chunks).startswith(NO_ACCESS)  # the stream ends, saying why
    assert list(chunks) == []
    response.close()


def test_a_member_removed_on_the_members_screen_hears_nothing_more(
    team, django_capture_on_commit_callbacks, open_stream
):
    """The owner removes a member whose page is open, then a post changes: the page never hears of
    it; its stream ends at once with a notice that says why (and the page stops listening)."""
    response, chunks = open_stream(browser(team.viewer), team.blog.slug)
    seat = team.seat("viewer")
    with django_capture_on_commit_callbacks(execute=True):
        removed = browser(team.owner).post(f"/blogs/{team.blog.slug}/members/{seat.pk}/remove/")
        assert removed.status_code == 302
        services.post_create(blog=team.blog, actor=Actor(team.editor, frozenset(ALL)), title="After")
    closing = next(chunks)
    assert closing.startswith(NO_ACCESS)
    assert b"no longer have access" in closing and b'id="live-status"' in closing
    assert list(chunks) == []  # nothing after it, the post's change least of all
    response.close()


def test_changing_or_removing_a_seat_wakes_the_blogs_pages_to_check_again(
    team, django_capture_on_commit_callbacks, open_stream
):
    """A seat changed or removed (the Members screen, the admin, an account deleted) wakes the blog's
    channel once committed: every open page checks its member's seat again at once, not at the next
    change or heartbeat. A member who still reads goes on listening. A changed seat comes as a
    `blog.updated` effect, on which each page redraws its header and post list for its member's seat
    now (the links a new role opens or closes); a removed one as a message with no effects (its
    member's page ends; the others have nothing to redraw)."""
    probe = events.subscribe(live.channel_name(team.blog))
    response, chunks = open_stream(browser(team.editor), team.blog.slug)
    updated = [{"type": "blog.updated", "id": team.blog.pk}]
    try:
        with django_capture_on_commit_callbacks(execute=True):
            browser(team.owner).post(
                f"/blogs/{team.blog.slug}/members/",
                {"action": "update", "seat": team.seat("editor").pk, "role": "author"},
            )
        assert probe.wait(0.0) == [updated]
        assert next(chunks) == f'event: effects\ndata: [{{"type":"blog.updated","id":{team.blog.pk}}}]\n\n'.encode()
        with django_capture_on_commit_callbacks(execute=True):
            team.viewer.delete()  # its seat goes with it
        assert probe.wait(0.0) == [[]]
        post = make_post(team.blog, "Still heard")
        with django_capture_on_commit_callbacks(execute=True):
            services.post_update(post=post, actor=Actor(team.owner, frozenset(ALL)), body="x")
        assert next(chunks) == f'event: effects\ndata: [{{"type":"post.updated","id":{post.pk}}}]\n\n'.encode()
    finally:
        events.unsubscribe(probe)
        response.close()


def test_a_seat_changed_in_the_admin_is_announced_as_on_the_members_screen(
    team, admin_client, django_capture_on_commit_callbacks
):
    """The admin's edit of a seat saves it as the Members screen does: its blog's open pages redraw."""
    seat = team.seat("editor")
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(
                f"/admin/blog/seat/{seat.pk}/change/",
                {"user": seat.user_id, "blog": team.blog.pk, "role": "viewer"},
            )
        assert response.status_code == 302
        assert probe.wait(0.0) == [[{"type": "blog.updated", "id": team.blog.pk}]]
    finally:
        events.unsubscribe(probe)


def test_a_change_after_the_seat_went_is_never_relayed_even_if_its_wake_up_was_lost(
    team, django_capture_on_commit_callbacks, open_stream
):
    """The seat is checked after each message arrives, before it is relayed: a change published after
    the removal is never heard, even when the removal's own message never came (its commit callback
    lost here; a worker that died between commit and publish)."""
    response, chunks = open_stream(browser(team.author), team.blog.slug)
    Seat.objects.filter(blog=team.blog, user=team.author).delete()  # (its callbacks never run in this test)
    assert closing_after_a_change(team, django_capture_on_commit_callbacks, chunks).startswith(NO_ACCESS)
    response.close()


def test_an_account_turned_off_hears_nothing_more(team, django_capture_on_commit_callbacks, open_stream):
    response, chunks = open_stream(browser(team.viewer), team.blog.slug)
    team.viewer.is_active = False
    team.viewer.save()
    assert closing_after_a_change(team, django_capture_on_commit_callbacks, chunks).startswith(NO_ACCESS)
    response.close()


def test_one_check_per_message_whatever_the_number_of_open_pages(team, django_capture_on_commit_callbacks, open_stream):
    """Every page of the blog open in this process shares one read of who may still read it per
    message: a change heard by five pages of four members costs one query, not five."""
    pages = [open_stream(browser(user), team.blog.slug) for user in (team.owner, team.editor, team.author, team.viewer)]
    pages.append(open_stream(browser(team.viewer), team.blog.slug))  # a second tab
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Fresh")
    heard = f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()
    with CaptureQueriesContext(connection) as queries:
        assert [next(chunks) for _response, chunks in pages] == [heard] * 5
    assert len(queries) == 1, [q["sql"] for q in queries]
    for response, _chunks in pages:
        response.close()


def test_with_redis_a_removed_member_hears_nothing_published_on_another_worker(
    team, redis_server, settings, open_stream
):
    """With AGENT_EVENTS_URL, a change made on another worker reaches this worker's pages through
    Redis; a member removed meanwhile never hears it."""
    settings.AGENT_EVENTS_URL = redis_server.url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    elsewhere = RedisBus(redis_server.url)  # another worker
    member, member_chunks = open_stream(browser(team.editor), team.blog.slug)
    removed, removed_chunks = open_stream(browser(team.viewer), team.blog.slug)
    Seat.objects.filter(blog=team.blog, user=team.viewer).delete()
    elsewhere.publish(live.channel_name(team.blog), [{"type": "post.updated", "id": 7}])
    assert next(member_chunks) == b'event: effects\ndata: [{"type":"post.updated","id":7}]\n\n'
    assert next(removed_chunks).startswith(NO_ACCESS)
    assert list(removed_chunks) == []
    member.close()
    removed.close()


def test_the_blog_page_listens_on_its_channel(team):
    page = browser(team.viewer).get(f"/blogs/{team.blog.slug}/").content.decode()
    assert f'sse-connect="/blogs/{team.blog.slug}/events/"' in page
    assert 'sse-swap="effects"' in page


def test_one_page_too_many_stops_the_oldest_which_says_so(team, settings, open_stream):
    """Each open page holds a stream in its worker: past AGENT_MAX_STREAMS_PER_USER pages the oldest
    ends with `superseded` (the page stops listening and shows why), and answer streams keep their
    own places."""
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


SIGNED_OUT = b"this tab is no longer signed in"


@pytest.mark.parametrize("how", ["signed out", "password changed elsewhere", "account turned off"])
def test_a_page_whose_session_no_longer_signs_its_member_in_hears_nothing_more(
    team, monkeypatch, django_capture_on_commit_callbacks, open_stream, how
):
    """Signed out in another tab, or the password changed on another device (which ends every other
    session): the page's stream ends at its next look (once a minute at most; here at each wake),
    saying why, and relays nothing after."""
    monkeypatch.setattr(live, "SIGNED_IN_CHECK_SECONDS", 0)
    page = browser(team.viewer)
    response, chunks = open_stream(page, team.blog.slug)
    if how == "signed out":
        page.logout()
    elif how == "password changed elsewhere":
        team.viewer.set_password("a new one, 2026")
        team.viewer.save()
    else:
        type(team.viewer).objects.filter(pk=team.viewer.pk).update(is_active=False)
    closing = closing_after_a_change(team, django_capture_on_commit_callbacks, chunks)
    assert closing.startswith(NO_ACCESS) and SIGNED_OUT in closing
    response.close()


def test_a_page_still_signed_in_goes_on_hearing_and_its_session_is_left_as_it_was(
    team, monkeypatch, django_capture_on_commit_callbacks, open_stream, settings
):
    """The look reads the session and never writes it, even when it holds a hash made with an older
    secret key (still accepted: `SECRET_KEY_FALLBACKS`), which Django re-keys on the next request."""
    monkeypatch.setattr(live, "SIGNED_IN_CHECK_SECONDS", 0)
    page = browser(team.viewer)
    key = page.session.session_key
    response, chunks = open_stream(page, team.blog.slug)
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "a newer key " * 4, [settings.SECRET_KEY]  # (rotated since)
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Heard")
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()
    assert live.signed_in(key, team.viewer.pk)
    assert page.get(f"/blogs/{team.blog.slug}/").status_code == 200  # (the session the page holds still works)
    response.close()


def test_an_image_in_a_post_cannot_open_a_members_live_stream(
    team, settings, django_capture_on_commit_callbacks, open_stream
):
    """A post's body may show images from the site's own addresses (markdown, and the pages' CSP
    `img-src 'self'`), so an author's `![](/blogs/<slug>/events/)` made the browser of each member who
    read or previewed the post open one live stream per image, held as long as the page stayed open:
    past AGENT_MAX_STREAMS_PER_USER their real pages stopped hearing the blog, and on HTTP/1.1 a few
    such images take every connection the browser allows the site. Only an EventSource is answered."""
    settings.AGENT_MAX_STREAMS_PER_USER = 1
    page, chunks = open_stream(browser(team.editor), team.blog.slug)
    body = render_markdown(f"![chart](/blogs/{team.blog.slug}/events/)")
    assert f'src="/blogs/{team.blog.slug}/events/"' in body  # the sanitiser keeps it: a same-site image
    image = browser(team.editor).get(
        f"/blogs/{team.blog.slug}/events/",
        HTTP_ACCEPT="image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        HTTP_SEC_FETCH_DEST="image",
    )
    assert image.status_code == 406
    assert not image.streaming
    assert streams.open_count(team.editor.pk, live.STREAM_KIND) == 1  # the page's own
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Heard")
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()
    page.close()
