"""The one write path: every change to a post goes through these mutators and leaves a revision."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from blog import grants
from blog.grants import Actor
from blog.models import Blog, Post, PostRevision


class OperationError(Exception):
    """A refusal that is safe to show to the person or the model (`public_message`)."""

    def __init__(self, public_message: str, code: str = "invalid") -> None:
        super().__init__(public_message)
        self.public_message = public_message
        self.code = code


def _revise(post: Post | None, blog: Blog, action: str, before: dict | None, actor: Actor) -> None:
    PostRevision.objects.create(
        post=post,
        blog=blog,
        action=action,
        before=before,
        after=post.snapshot() if post and action != "delete" else None,
        user=actor.user,
        via_assistant=actor.via_assistant,
        consent=actor.consent,
        chat_session=actor.chat_session,
    )


#: Slugs a post cannot have: their public address is taken by the blog's own pages (its feed).
RESERVED_SLUGS = frozenset({"feed"})


def unique_slug(blog: Blog, title: str, exclude: int | None = None) -> str:
    base = slugify(title)[:200] or "post"
    slug, n = base, 2
    taken = Post.objects.filter(blog=blog)
    if exclude:
        taken = taken.exclude(pk=exclude)
    while slug in RESERVED_SLUGS or taken.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def _clean_title(title: str) -> str:
    title = (title or "").strip()
    if not title:
        raise OperationError("A post needs a title.")
    if len(title) > 200:
        raise OperationError("A title can be at most 200 characters.")
    return title


def check_may_change(post: Post, actor: Actor) -> None:
    """Refuse a change to a published post's title or body without the publish scope (live content)."""
    if not grants.may_change(actor, post):
        raise OperationError(
            f"“{post.title}” is published: changing it needs the right to publish, which isn't granted.", "denied"
        )


def post_create(*, blog: Blog, actor: Actor, title: str, body: str = "") -> Post:
    title = _clean_title(title)
    with transaction.atomic():
        post = Post.objects.create(
            blog=blog, author=actor.user, title=title, body=body or "", slug=unique_slug(blog, title)
        )
        _revise(post, blog, "create", None, actor)
    return post


def post_update(*, post: Post, actor: Actor, title: str | None = None, body: str | None = None) -> Post:
    check_may_change(post, actor)
    before = post.snapshot()
    if title is not None:
        title = _clean_title(title)
        if title != post.title:  # a body-only edit keeps the post's address
            post.title = title
            post.slug = unique_slug(post.blog, post.title, exclude=post.pk)
    if body is not None:
        post.body = body
    with transaction.atomic():
        post.save()
        _revise(post, post.blog, "update", before, actor)
    return post


def post_publish(*, post: Post, actor: Actor) -> Post:
    if post.status == Post.PUBLISHED:
        raise OperationError(f"“{post.title}” is already published.", "conflict")
    before = post.snapshot()
    post.status, post.published_at = Post.PUBLISHED, timezone.now()
    with transaction.atomic():
        post.save()
        _revise(post, post.blog, "publish", before, actor)
    return post


def post_unpublish(*, post: Post, actor: Actor) -> Post:
    if post.status != Post.PUBLISHED:
        raise OperationError(f"“{post.title}” is not published.", "conflict")
    before = post.snapshot()
    post.status, post.published_at = Post.DRAFT, None
    with transaction.atomic():
        post.save()
        _revise(post, post.blog, "unpublish", before, actor)
    return post


def post_delete(*, post: Post, actor: Actor) -> int:
    before, pk, blog = post.snapshot(), post.pk, post.blog
    with transaction.atomic():
        PostRevision.objects.create(
            post=None,
            blog=blog,
            action="delete",
            before={**before, "id": pk},
            after=None,
            user=actor.user,
            via_assistant=actor.via_assistant,
            consent=actor.consent,
            chat_session=actor.chat_session,
        )
        post.delete()
    return pk


def post_revert(*, post: Post, actor: Actor, revision: PostRevision) -> Post:
    """Restore the title and body a revision recorded before its change."""
    if revision.post_id != post.pk or not revision.before:
        raise OperationError("That revision can't be restored.")
    check_may_change(post, actor)
    before = post.snapshot()
    post.title, post.body = revision.before["title"], revision.before["body"]
    post.slug = unique_slug(post.blog, post.title, exclude=post.pk)
    with transaction.atomic():
        post.save()
        _revise(post, post.blog, "revert", before, actor)
    return post


def post_summary(post: Post) -> dict[str, Any]:
    return {
        "id": post.pk,
        "title": post.title,
        "status": post.status,
        "published_at": post.published_at.isoformat() if post.published_at else None,
        "updated_at": post.updated_at.isoformat(),
    }
