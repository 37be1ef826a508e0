"""Create the demo blog and users whose logins `make run` prints. Safe to run again: it changes nothing that exists."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from blog.access import ROLE_SCOPES
from blog.models import Blog, Consent, Post, PostRevision, Seat

PASSWORD = "demo-pass-1234"
#: What the demo blog says it is about (its public index, feed and cards show it).
DESCRIPTION = "Small observations from the field, written down with an assistant that asks before it acts."

USERS = [
    ("alice", Seat.OWNER, True),
    ("bob", Seat.EDITOR, True),
    ("carol", Seat.VIEWER, False),
]


class Command(BaseCommand):
    help = "Create blog field-notes with alice (owner), bob (editor), carol (viewer) and admin."

    def handle(self, *args, **options):
        User = get_user_model()
        with transaction.atomic():
            people = {}
            for name, _role, _allowed in USERS:
                people[name] = self._user(User, name)
            if not User.objects.filter(username="admin").exists():
                User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
            blog, created = Blog.objects.get_or_create(
                slug="field-notes",
                defaults={"title": "Field Notes", "owner": people["alice"], "description": DESCRIPTION},
            )
            for name, role, allowed in USERS:
                Seat.objects.get_or_create(
                    user=people[name], blog=blog, defaults={"role": role, "may_use_assistant": allowed}
                )
            Consent.objects.get_or_create(
                user=people["alice"], blog=blog, client="", defaults={"scopes": sorted(ROLE_SCOPES[Seat.OWNER])}
            )
            if created:
                self._post(
                    blog=blog,
                    author=people["alice"],
                    title="Notes from the river",
                    slug="notes-from-the-river",
                    body="The heron was back this morning.\n\n*More soon.*",
                )
                self._post(
                    blog=blog,
                    author=people["alice"],
                    title="Welcome to Field Notes",
                    slug="welcome-to-field-notes",
                    status=Post.PUBLISHED,
                    published_at=timezone.now(),
                    body="# Welcome\n\nShort notes from long walks.",
                )
        self.stdout.write(
            "Demo logins (password demo-pass-1234): alice (owner), bob (editor), carol (viewer), admin (superuser)"
        )

    def _post(self, **fields):
        """A demo post with its first revision, as if its author had written it on the site."""
        post = Post.objects.create(**fields)
        PostRevision.objects.create(
            post=post, blog=post.blog, action="create", before=None, after=post.snapshot(), user=post.author
        )
        return post

    def _user(self, User, name):
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User.objects.create_user(name, f"{name}@example.com", PASSWORD)
        return user
