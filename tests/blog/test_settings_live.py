"""A blog's settings followed by its open pages: a rename or a new description, and a hand-over, are
announced on the blog's channel (`live.blog_updated`) and each page redraws its header from `blog_head`;
and the owner's deletion, which rechecks under a lock that the blog is still the requester's."""

from __future__ import annotations

import threading
from html import unescape

import pytest
from django.db import connection, connections, transaction

from agent import events
from blog import blogs, live
from blog.models import Blog, Post, Seat
from tests.blog.conftest import browser, make_blog, make_post

pytestmark = pytest.mark.django_db

UPDATED = {"type": "blog.updated"}


def updated(blog: Blog) -> list[dict]:
    return [{**UPDATED, "id": blog.pk}]


def text(response) -> str:
    return unescape(response.content.decode())


def save_settings(client, title: str, description: str = ""):
    return client.post("/blogs/notes/settings/", {"title": title, "description": description})


# --- A rename, a description -----------------------------------------------------------------------------


def test_a_rename_is_announced_to_the_blogs_open_pages_once_committed(team, django_capture_on_commit_callbacks):
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert save_settings(browser(team.owner), "Field notes", "Walks").status_code == 302
        assert probe.wait(0.0) == []  # (not before the commit)
        for callback in callbacks:
            callback()
        assert probe.wait(0.0) == [updated(team.blog)]
    finally:
        events.unsubscribe(probe)


def test_saving_what_is_there_or_a_refused_title_announces_nothing(team, django_capture_on_commit_callbacks):
    Blog.objects.filter(pk=team.blog.pk).update(description="Walks")
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert save_settings(browser(team.owner), " Notes ", "Walks").status_code == 302
            assert save_settings(browser(team.owner), "   ", "Other").status_code == 400
        assert probe.wait(0.0) == []
    finally:
        events.unsubscribe(probe)


def test_a_members_open_page_hears_the_rename_on_its_stream(team, django_capture_on_commit_callbacks):
    """The member's page stream relays it as an `effects` event, which the page turns into
    `chat:blog.updated`, on which its header redraws itself."""
    page = browser(team.viewer).get("/blogs/notes/events/", HTTP_ACCEPT="text/event-stream")
    chunks = iter(page.streaming_content)
    try:
        assert next(chunks) == b": keep-alive\n\n"
        assert next(chunks).startswith(b"event: mark\n")
        with django_capture_on_commit_callbacks(execute=True):
            save_settings(browser(team.owner), "Field notes")
        heard = next(chunks)
        assert heard == f'event: effects\ndata: [{{"type":"blog.updated","id":{team.blog.pk}}}]\n\n'.encode()
    finally:
        page.close()


def test_the_header_redrawn_shows_the_new_title_and_description_escaped(team):
    hostile = '<script>alert(1)</script> & "Notes"'
    blogs.blog_update(blog=team.blog, title=hostile, description="<b onmouseover=x>bold</b>")
    response = browser(team.viewer).get("/blogs/notes/head/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "<script>" not in body and "<b " not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Notes&quot;" in body
    assert body.lstrip().startswith("<title>&lt;script&gt;") and "· Field Desk</title>" in body  # (the page's title)
    assert "&lt;b onmouseover=x&gt;bold&lt;/b&gt;" in body
    assert 'id="blog-head"' in body and 'hx-trigger="chat:blog.updated from:body, chat:missed from:body"' in body


def test_the_blog_page_draws_the_header_the_fragment_redraws(team):
    """One template: the page's header is the fragment, with no <title> of its own inside the page."""
    page = browser(team.owner).get("/blogs/notes/").content.decode()
    assert page.count("<title>") == 1
    head = page[page.index('<header class="pane-head" id="blog-head"') :]
    assert head.index('href="/blogs/notes/settings/"') < head.index("</header>")
    assert 'hx-get="/blogs/notes/head/?assistant=1"' in page  # (the owner's page shows the assistant)


@pytest.mark.parametrize("role", ["owner", "editor", "author", "viewer"])
def test_the_header_shows_the_links_each_members_seat_opens(team, role):
    body = browser(team.user(role)).get("/blogs/notes/head/").content.decode()
    owners = ("/members/", "/export/", "/import/", "/settings/")
    assert all((f'href="/blogs/notes{path}"' in body) == (role == "owner") for path in owners)
    assert ('href="/blogs/notes/posts/new/"' in body) == (role != "viewer")
    assert 'href="#assistant"' not in body  # (asked without ?assistant=1)


def test_the_header_is_the_members_only(team, client):
    assert browser(team.outsider).get("/blogs/notes/head/").status_code == 404
    assert client.get("/blogs/notes/head/").status_code == 302  # (signed out: to sign in)
    assert browser(team.owner).post("/blogs/notes/head/").status_code == 405


# --- A hand-over -----------------------------------------------------------------------------------------


def test_a_hand_over_is_announced_and_each_header_follows_the_owner(team, django_capture_on_commit_callbacks):
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = browser(team.owner).post(
                "/blogs/notes/hand-over/", {"seat": team.seat("editor").pk, "confirm": "editor"}
            )
            assert response.status_code == 302
        assert probe.wait(0.0) == [updated(team.blog)] * 3  # (each seat saved, then the blog)
    finally:
        events.unsubscribe(probe)
    former = browser(team.owner).get("/blogs/notes/head/").content.decode()
    new = browser(team.editor).get("/blogs/notes/head/").content.decode()
    assert 'href="/blogs/notes/settings/"' not in former and 'href="/blogs/notes/members/"' not in former
    assert 'href="/blogs/notes/settings/"' in new and 'href="/blogs/notes/members/"' in new


def test_the_admins_change_of_owner_is_announced_too(team, django_user_model, django_capture_on_commit_callbacks):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    admin = browser(root)
    form = {
        "title": "Notes",
        "slug": "notes",
        "description": "",
        "owner": team.author.pk,
        "seats-TOTAL_FORMS": "0",
        "seats-INITIAL_FORMS": "0",
    }
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin.post(f"/admin/blog/blog/{team.blog.pk}/change/", form)
        assert response.status_code == 302, text(response)[:2000]
        assert updated(team.blog) in probe.wait(0.0)
    finally:
        events.unsubscribe(probe)
    assert Blog.objects.get(pk=team.blog.pk).owner == team.author


def test_the_admins_rename_is_announced_too(team, django_user_model, django_capture_on_commit_callbacks):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    form = {"title": "Renamed", "slug": "notes", "description": "", "owner": team.owner.pk}
    form.update({"seats-TOTAL_FORMS": "0", "seats-INITIAL_FORMS": "0"})
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert browser(root).post(f"/admin/blog/blog/{team.blog.pk}/change/", form).status_code == 302
        assert probe.wait(0.0) == [updated(team.blog)]
        with django_capture_on_commit_callbacks(execute=True):  # (saved again, unchanged: nothing to say)
            assert browser(root).post(f"/admin/blog/blog/{team.blog.pk}/change/", form).status_code == 302
        assert probe.wait(0.0) == []
    finally:
        events.unsubscribe(probe)


# --- Deleting, rechecked under a lock ------------------------------------------------------------------


def test_a_deletion_by_a_former_owner_is_refused_and_deletes_nothing(team):
    """The tab she deletes from was opened before she handed the blog over: its blog is as it was then."""
    stale = Blog.objects.get(pk=team.blog.pk)
    blogs.blog_hand_over(blog=Blog.objects.get(pk=team.blog.pk), to_seat=team.seat("editor"), actor=team.owner)
    with pytest.raises(blogs.OperationError) as refused:
        blogs.blog_delete(blog=stale, actor=team.owner)
    assert refused.value.args == ("You no longer own this blog: nothing was deleted.",)
    assert Blog.objects.filter(pk=team.blog.pk, owner=team.editor).exists()
    assert Seat.objects.filter(blog=team.blog).count() == 4
    # Posted from that tab, it is not hers to post any more: the Settings' own check (404), nothing deleted.
    assert browser(team.owner).post("/blogs/notes/delete/", {"confirm": "notes"}).status_code == 404
    assert Blog.objects.filter(pk=team.blog.pk).exists()


def test_the_admins_deletion_is_not_held_to_owning_it(team, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    blogs.blog_delete(blog=team.blog, actor=root, owner_only=False)
    assert not Blog.objects.filter(slug="notes").exists()


@pytest.mark.django_db(transaction=True)
def test_a_deletion_sent_while_the_blog_is_handed_over_deletes_nothing(django_user_model):
    """Her Settings tab deletes the blog while another of her tabs hands it over. The deletion passed the
    page's check (the hand-over not yet committed), then waits on the hand-over's lock on the blog's row
    (PostgreSQL; SQLite's write lock) and finds the blog no longer hers. Without the lock and the check it
    deleted the blog just handed over, the new owner's."""
    team = make_blog(django_user_model)
    make_post(team.blog, "Kept")
    holds, release = threading.Event(), threading.Event()

    def hand_over_and_hold() -> None:
        try:
            with transaction.atomic():
                blog = Blog.objects.get(pk=team.blog.pk)
                blogs.blog_hand_over(blog=blog, to_seat=team.seat("editor"), actor=team.owner)
                holds.set()
                release.wait(10)
        finally:
            connections.close_all()

    owner = browser(team.owner)
    handing = threading.Thread(target=hand_over_and_hold)
    handing.start()
    assert holds.wait(10)
    threading.Timer(0.5, release.set).start()  # (the hand-over commits while her deletion waits)
    response = owner.post("/blogs/notes/delete/", {"confirm": "notes"})
    handing.join(10)
    assert Blog.objects.filter(pk=team.blog.pk, owner=team.editor).exists(), connection.vendor
    assert Post.objects.filter(blog=team.blog.pk).count() == 1
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/"
    page = text(owner.get("/blogs/notes/"))
    assert "You no longer own this blog: nothing was deleted." in page
