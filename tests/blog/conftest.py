"""Blog fixtures: a blog with one member per role, grants, chats and a signed-in browser client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from agent.models import Session
from blog.chat import start_session
from blog.models import Blog, Consent, Post, Seat

READ, WRITE, PUBLISH, DELETE = "posts:read", "posts:write", "posts:publish", "posts:delete"
ALL = [READ, WRITE, PUBLISH, DELETE]
PASSWORD = "pw-blog-12345"


@dataclass
class Team:
    blog: Blog
    owner: Any
    editor: Any
    author: Any
    viewer: Any
    outsider: Any

    def user(self, role: str) -> Any:
        return getattr(self, role)

    def seat(self, role: str) -> Seat:
        return Seat.objects.get(blog=self.blog, user=self.user(role))


def make_blog(django_user_model, slug: str = "notes", title: str = "Notes", prefix: str = "") -> Team:
    """A blog with owner, editor, author and viewer seats (editor and author may summon the assistant)."""
    users = {
        role: django_user_model.objects.create_user(f"{prefix}{role}", password=PASSWORD)
        for role in ("owner", "editor", "author", "viewer", "outsider")
    }
    blog = Blog.objects.create(owner=users["owner"], title=title, slug=slug)
    Seat.objects.create(blog=blog, user=users["owner"], role=Seat.OWNER, may_use_assistant=True)
    Seat.objects.create(blog=blog, user=users["editor"], role=Seat.EDITOR, may_use_assistant=True)
    Seat.objects.create(blog=blog, user=users["author"], role=Seat.AUTHOR, may_use_assistant=True)
    Seat.objects.create(blog=blog, user=users["viewer"], role=Seat.VIEWER, may_use_assistant=False)
    return Team(blog=blog, **users)


@pytest.fixture
def team(django_user_model) -> Team:
    return make_blog(django_user_model)


@pytest.fixture
def other_team(django_user_model) -> Team:
    return make_blog(django_user_model, slug="elsewhere", title="Elsewhere", prefix="x")


def set_consent(user: Any, blog: Blog, scopes: list[str] | None, *, revoked: bool = False) -> Consent:
    """The built-in assistant's grant for `user` on `blog` (created or replaced)."""
    from django.utils import timezone

    consent, _ = Consent.objects.update_or_create(
        user=user,
        blog=blog,
        client="",
        defaults={"scopes": list(scopes or []), "revoked_at": timezone.now() if revoked else None},
    )
    return consent


@pytest.fixture
def consent():
    return set_consent


def blog_chat(user: Any, blog: Blog) -> Session:
    return start_session(user, blog)


def said_chat(user: Any, blog: Blog, post: Post | None = None, text: str = "hello") -> Session:
    """A chat with its first message (one with nothing said is listed only while it is the one shown)."""
    from agent.state import Run
    from agent.transcript import add_message

    session = start_session(user, blog, post)
    add_message(Run(session), "user", [{"type": "text", "text": text}])
    return session


@pytest.fixture
def approvals_on(settings):
    """Publishing and deleting wait for the person's OK."""
    settings.AGENT_CONFIRM_TOOLS = ["delete_post", "publish_post"]


@pytest.fixture
def chat_for():
    return blog_chat


def make_post(
    blog: Blog, title: str = "A draft", body: str = "Body text.", *, published: bool = False, author: Any = None
) -> Post:
    from django.utils import timezone
    from django.utils.text import slugify

    return Post.objects.create(
        blog=blog,
        author=author or blog.owner,
        title=title,
        slug=slugify(title),
        body=body,
        status=Post.PUBLISHED if published else Post.DRAFT,
        published_at=timezone.now() if published else None,
    )


def browser(user: Any = None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def media(tmp_path, settings) -> Path:
    """MEDIA_ROOT a folder of the test's own (covers and attachments land there), returned."""
    root = tmp_path / "media"
    settings.MEDIA_ROOT = str(root)
    return root


def covers_stored(root: Path) -> list[str]:
    """The cover files in storage under `root` (the `media` fixture's), as paths relative to it, sorted."""
    base = root / "covers"
    return sorted(str(p.relative_to(root)) for p in base.rglob("*") if p.is_file()) if base.exists() else []
