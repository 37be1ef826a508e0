"""Every page shows times in the zone the reader's browser named (the `tz` cookie), or says UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from agent.models import Session
from blog.models import Consent, Post, PostRevision
from tests.blog.conftest import ALL, browser, make_post, said_chat, set_consent

pytestmark = pytest.mark.django_db

EVENING_UTC = datetime(2026, 12, 3, 20, 30, tzinfo=UTC)  # Dec 4, 05:30 in Tokyo; Dec 3, 15:30 in New York


def in_zone(client: Client, name: str) -> Client:
    client.cookies["tz"] = name
    return client


def test_post_history_in_tokyo(team):
    post = make_post(team.blog, "A draft")
    for action in ("create", "update"):  # (two versions: the page offers to compare them)
        revision = PostRevision.objects.create(
            post=post, blog=team.blog, action=action, before=post.snapshot(), after=post.snapshot(), user=team.owner
        )
    PostRevision.objects.filter(pk=revision.pk).update(created_at=EVENING_UTC)
    url = f"/blogs/notes/posts/{post.pk}/history/"
    html = in_zone(browser(team.owner), "Asia/Tokyo").get(url).content.decode()
    assert '<time datetime="2026-12-04T05:30:00+09:00">Dec 4, 2026 05:30</time>' in html
    assert " · update, Dec 4 05:30</option>" in html  # the compare form's choices
    html = browser(team.owner).get(url).content.decode()  # the browser has not said its zone yet
    assert '<time datetime="2026-12-03T20:30:00+00:00">Dec 3, 2026 20:30 UTC</time>' in html
    html = in_zone(browser(team.owner), "Not/A_Zone").get(url).content.decode()
    assert '<time datetime="2026-12-03T20:30:00+00:00">Dec 3, 2026 20:30 UTC</time>' in html


def test_post_compare_in_tokyo(team):
    post = make_post(team.blog, "A draft")
    client = in_zone(browser(team.owner), "Asia/Tokyo")
    client.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Second", "body": "b"})
    revision = PostRevision.objects.get(post=post, action="update")
    PostRevision.objects.filter(pk=revision.pk).update(created_at=EVENING_UTC)
    html = client.get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={revision.pk}").content.decode()
    assert '<time datetime="2026-12-04T05:30:00+09:00">Dec 4, 2026 05:30</time>' in html


def test_earlier_chats_in_tokyo(team):
    sessions = [said_chat(team.editor, team.blog) for _ in range(2)]
    Session.objects.filter(pk=sessions[0].pk).update(created_at=EVENING_UTC)
    html = in_zone(browser(team.editor), "Asia/Tokyo").get("/blogs/notes/").content.decode()
    assert '<time class="meta" datetime="2026-12-04T05:30:00+09:00">Dec 4, 05:30</time>' in html


def test_clients_screen_in_new_york(team):
    set_consent(team.owner, team.blog, ALL)
    Consent.objects.filter(user=team.owner).update(last_used_at=EVENING_UTC)
    html = in_zone(browser(team.owner), "America/New_York").get("/blogs/notes/clients/").content.decode()
    assert 'Last used: <time datetime="2026-12-03T15:30:00-05:00">Dec 3, 2026 15:30</time>' in html


def test_a_public_post_is_dated_in_the_readers_zone(team):
    post = make_post(team.blog, "Dawn notes", published=True)
    Post.objects.filter(pk=post.pk).update(published_at=datetime(2026, 12, 3, 2, 0, tzinfo=UTC))
    for url in ("/read/notes/", "/read/notes/dawn-notes/"):
        html = in_zone(Client(), "America/New_York").get(url).content.decode()
        assert '<time datetime="2026-12-02T21:00:00-05:00">Dec 2, 2026</time>' in html  # the day before, there
        html = Client().get(url).content.decode()
        assert '<time datetime="2026-12-03T02:00:00+00:00">Dec 3, 2026 UTC</time>' in html


def test_every_page_tells_the_server_its_zone(team):
    html = Client().get("/").content.decode()
    assert '<script src="/static/js/timezone.js"></script>' in html


def test_the_assistant_is_told_the_zone_its_person_reads_times_in(team):
    """Tool results give times in UTC (ISO 8601 with its offset); a chat opened from Tokyo asks the
    model to give them in Tokyo's zone. Before the browser named one, nothing is said (UTC it is)."""
    client = in_zone(browser(team.owner), "Asia/Tokyo")
    client.post("/blogs/notes/chats/new/")
    prompt = Session.objects.filter(user=team.owner).latest("pk").system_prompt
    assert "Times in tool results are in UTC; owner reads times in the Asia/Tokyo time zone" in prompt
    browser(team.editor).post("/blogs/notes/chats/new/")
    assert "time zone" not in Session.objects.get(user=team.editor).system_prompt


def test_a_script_on_the_api_names_its_zone_as_the_browser_does(team):
    """A chat opened through `POST /api/agent/sessions` with the `tz` cookie gets the same zone line."""
    client = in_zone(browser(team.owner), "America/New_York")
    client.get("/accounts/login/")
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/api/agent/sessions", {"blog": "notes"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 201
    prompt = Session.objects.get(pk=response.json()["id"]).system_prompt
    assert "owner reads times in the America/New_York time zone" in prompt
