"""`manage.py seed_demo`: the demo blog, its people and posts, idempotent."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from blog import grants
from blog.models import Blog, Consent, Post, PostRevision, Seat
from tests.blog.conftest import ALL, READ

pytestmark = pytest.mark.django_db

PASSWORD = "demo-pass-1234"


def counts() -> dict[str, int]:
    return {
        "users": get_user_model().objects.count(),
        "blogs": Blog.objects.count(),
        "seats": Seat.objects.count(),
        "consents": Consent.objects.count(),
        "posts": Post.objects.count(),
        "revisions": PostRevision.objects.count(),
    }


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_seed_demo_creates_the_contract_data():
    output = seed()
    assert "demo-pass-1234" in output
    User = get_user_model()
    assert sorted(User.objects.values_list("username", flat=True)) == ["admin", "alice", "bob", "carol"]
    for name in ("alice", "bob", "carol", "admin"):
        assert authenticate(username=name, password=PASSWORD) == User.objects.get(username=name), name
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert not User.objects.filter(username__in=["alice", "bob", "carol"], is_staff=True).exists()

    blog = Blog.objects.get(slug="field-notes")
    assert blog.owner.username == "alice"
    assert blog.description.startswith("Small observations from the field")  # (so the demo shows one)
    seats = {s.user.username: (s.role, s.may_use_assistant) for s in Seat.objects.filter(blog=blog)}
    assert seats == {"alice": ("owner", True), "bob": ("editor", True), "carol": ("viewer", False)}

    alice, bob, carol = (User.objects.get(username=n) for n in ("alice", "bob", "carol"))
    consent = Consent.objects.get(user=alice, blog=blog, client="")
    assert sorted(consent.scopes) == sorted(ALL) and consent.revoked_at is None
    assert grants.assistant(alice, blog).scopes == frozenset(ALL)
    assert not Consent.objects.filter(user=bob).exists()
    assert grants.may_summon(Seat.objects.get(user=bob, blog=blog))
    assert grants.assistant(bob, blog).scopes == frozenset()
    assert not grants.may_summon(Seat.objects.get(user=carol, blog=blog))
    assert grants.person(carol, blog).scopes == frozenset({READ})

    posts = Post.objects.filter(blog=blog)
    assert sorted(posts.values_list("status", flat=True)) == ["draft", "published"]
    published = posts.get(status="published")
    assert published.published_at is not None
    assert posts.get(status="draft").published_at is None
    for post in posts:  # each with its first revision, so its history starts where the post did
        (first,) = post.revisions.all()
        assert (first.action, first.before, first.after, first.user) == ("create", None, post.snapshot(), alice)


def test_seed_demo_is_idempotent():
    seed()
    first = counts()
    assert first == {"users": 4, "blogs": 1, "seats": 3, "consents": 1, "posts": 2, "revisions": 2}
    seed()
    assert counts() == first


def test_seed_demo_does_not_undo_later_changes():
    seed()
    blog = Blog.objects.get(slug="field-notes")
    Consent.objects.filter(user__username="alice").update(scopes=[READ])
    Post.objects.filter(blog=blog, status="draft").update(title="Edited by alice")
    seed()
    assert Consent.objects.get(user__username="alice").scopes == [READ]
    assert Post.objects.filter(blog=blog, title="Edited by alice").exists()
    assert Post.objects.count() == 2


def test_demo_published_post_is_public(client):
    seed()
    published = Post.objects.get(status="published")
    draft = Post.objects.get(status="draft")
    assert client.get(f"/read/field-notes/{published.slug}/").status_code == 200
    assert client.get(f"/read/field-notes/{draft.slug}/").status_code == 404


def test_demo_logins_work_through_the_login_form(client):
    seed()
    response = client.post("/accounts/login/", {"username": "bob", "password": PASSWORD, "next": "/blogs/field-notes/"})
    assert response.status_code == 302 and response["Location"] == "/blogs/field-notes/"
    assert client.get("/blogs/field-notes/").status_code == 200
