"""Every write of the blog's pages, tried by those who may not make it: the viewer (carol), a signed-in
stranger, and the owner of another blog naming this blog's objects by id. Each is refused with the
blog's 404 (a page you may not use does not exist for you) and writes nothing. CSRF is left out here
(Django's test client skips it): `tests/reliability/test_security.py` proves every write needs it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agent.models import Message, Session
from blog.models import Consent, Post, PostRevision, Seat
from blog.services import post_create, post_update
from tests.blog.conftest import ALL, blog_chat, set_consent

pytestmark = pytest.mark.django_db


def world(team) -> dict[str, Any]:
    """Everything a refused write could have changed, as it stands."""
    return {
        "posts": list(Post.objects.order_by("pk").values_list("pk", "title", "body", "status", "slug", "cover_ref")),
        "revisions": PostRevision.objects.count(),
        "seats": list(Seat.objects.order_by("pk").values_list("pk", "user_id", "role", "may_use_assistant")),
        "consents": list(Consent.objects.order_by("pk").values_list("pk", "client", "scopes", "revoked_at")),
        "chats": Session.objects.count(),
        "messages": Message.objects.count(),
    }


def writes(team) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, url, form) for every write the blog's pages take, aimed at `team`'s blog and objects."""
    from blog.grants import person

    slug = team.blog.slug
    draft = post_create(blog=team.blog, actor=person(team.owner, team.blog), title="Draft", body="first")
    post_update(post=draft, actor=person(team.owner, team.blog), body="second")
    live = post_create(blog=team.blog, actor=person(team.owner, team.blog), title="Live", body="live words")
    Post.objects.filter(pk=live.pk).update(status=Post.PUBLISHED)
    revision = PostRevision.objects.filter(post=draft).order_by("pk").last()
    seat = Seat.objects.get(blog=team.blog, user=team.editor)
    chat = blog_chat(team.owner, team.blog)
    edit = {"title": "Hacked", "body": "hacked", "version": ""}
    return [
        ("post", reverse("blog:post_new", args=[slug]), edit),
        ("post", reverse("blog:post_edit", args=[slug, draft.pk]), edit),
        ("post", reverse("blog:post_publish", args=[slug, draft.pk]), {}),
        ("post", reverse("blog:post_unpublish", args=[slug, live.pk]), {}),
        ("post", reverse("blog:post_delete", args=[slug, draft.pk]), {}),
        ("post", reverse("blog:revert", args=[slug, draft.pk, revision.pk]), {}),
        ("post", reverse("blog:members", args=[slug]), {"action": "add", "username": "outsider", "role": "editor"}),
        ("post", reverse("blog:members", args=[slug]), {"seat": seat.pk, "role": "viewer"}),
        ("post", reverse("blog:member_remove", args=[slug, seat.pk]), {}),
        ("post", reverse("blog:new_chat", args=[slug]), {}),
        ("post", reverse("blog:first_message", args=[slug]), {"text": "hello"}),
        ("post", reverse("blog:post_new_chat", args=[slug, draft.pk]), {}),
        ("post", reverse("blog:post_first_message", args=[slug, draft.pk]), {"text": "hello"}),
        ("post", reverse("chat:send", args=[chat.pk]), {"text": "hello"}),
        ("post", reverse("chat:stop", args=[chat.pk]), {}),
        ("post", reverse("connectors:client", args=[slug, "someone-elses-client"]), {"action": "revoke"}),
    ]


@pytest.mark.parametrize("who", ["viewer", "outsider", "other_owner"])
def test_every_write_is_refused_to_those_who_may_not_make_it_and_changes_nothing(team, other_team, who):
    set_consent(team.editor, team.blog, ALL)
    Consent.objects.create(user=team.editor, blog=team.blog, client="someone-elses-client", scopes=["posts:read"])
    targets = writes(team)
    before = world(team)
    browser = Client()
    browser.force_login(other_team.owner if who == "other_owner" else team.user(who))
    for method, url, form in targets:
        response = getattr(browser, method)(url, form)
        # The viewer's own Clients screen for a client she never connected is the same 404.
        assert response.status_code == 404, (who, url, response.status_code)
    assert world(team) == before


def test_a_viewer_reads_but_never_reaches_a_write_page(team):
    from blog.grants import person

    post = post_create(blog=team.blog, actor=person(team.owner, team.blog), title="Draft", body="x")
    browser = Client()
    browser.force_login(team.viewer)
    slug = team.blog.slug
    assert browser.get(reverse("blog:history", args=[slug, post.pk])).status_code == 200
    for url in (
        reverse("blog:post_new", args=[slug]),
        reverse("blog:post_edit", args=[slug, post.pk]),
        reverse("blog:post_delete", args=[slug, post.pk]),
        reverse("blog:members", args=[slug]),
        reverse("blog:chats", args=[slug]),
    ):
        assert browser.get(url).status_code == 404, url
    assert browser.post(reverse("blog:post_preview", args=[slug]), {"body": "x"}).status_code == 404
