"""No cache between a person and the site keeps what the site shows one person: every answer made
from a session is `Cache-Control: private` unless its view says more (`never_cache`), and what is the
same for everyone (a public post read without signing in, static files) is left as it is."""

from __future__ import annotations

import pytest

from tests.blog.conftest import blog_chat, browser, make_post

pytestmark = pytest.mark.django_db


def test_every_page_and_fragment_of_a_signed_in_person_is_private(team):
    slug, owner = team.blog.slug, team.owner
    post = make_post(team.blog, "Private draft")
    chat = blog_chat(owner, team.blog)
    person = browser(owner)
    asks = [
        f"/blogs/{slug}/posts/",
        f"/blogs/{slug}/posts/all/",
        f"/blogs/{slug}/posts/{post.pk}/history/",
        f"/blogs/{slug}/members/",
        f"/blogs/{slug}/settings/",
        "/blogs/new/",
        f"/blogs/{slug}/clients/",
        f"/blogs/{slug}/chats/",
        f"/blogs/{slug}/chats/grant/",
        f"/chat/{chat.pk}/earlier?before=5",
        f"/api/agent/sessions/{chat.pk}",
    ]
    for ask in asks:
        answer = person.get(ask)
        assert answer.status_code == 200, ask
        assert "private" in answer.get("Cache-Control", ""), (ask, answer.get("Cache-Control"))


def test_a_view_that_says_more_keeps_its_own_words(team):
    chat = blog_chat(team.owner, team.blog)
    answer = browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/list?chat={chat.pk}")
    assert "no-store" in answer["Cache-Control"] and "private" in answer["Cache-Control"]


def test_what_is_the_same_for_everyone_is_not_marked_private(team, client):
    post = make_post(team.blog, "Open letter", published=True)
    answer = client.get(f"/read/{team.blog.slug}/{post.slug}/")
    assert answer.status_code == 200
    assert "private" not in answer.get("Cache-Control", "")


def test_a_persons_live_stream_is_never_kept_by_a_cache(team):
    """The page's stream (what the blog did, for this person) is `no-store` and `private`: a shared cache
    may neither keep it nor serve it to anyone else. A turn's stream is made by the same
    `agent.views.event_stream`."""
    answer = browser(team.owner).get(f"/blogs/{team.blog.slug}/events/", HTTP_ACCEPT="text/event-stream")
    answer.close()  # (not read: it waits for changes)
    assert answer.status_code == 200 and answer["Content-Type"] == "text/event-stream"
    kept = {part.strip() for part in answer["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= kept, answer["Cache-Control"]
