"""Blogs, their members, posts with revisions, and the assistant's link and grants."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Cast, Replace, Upper
from django.db.models.lookups import Exact

from agent.markdown import words_of

# The scopes of a blog's operations (CONTRACT §6); `blog/access.py` says what each role holds.
READ, WRITE, PUBLISH, DELETE = "posts:read", "posts:write", "posts:publish", "posts:delete"
ALL_SCOPES = (READ, WRITE, PUBLISH, DELETE)


#: Addresses no blog may take: `/blogs/new/` is the New blog page (routed before a blog's page).
RESERVED_BLOG_SLUGS = frozenset({"new"})


class Blog(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owned_blogs")
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    # What the blog is about: one paragraph of plain text, never markdown (`blogs.clean_description`).
    # Empty in the database too, for the INSERTs of an older release's workers, which name no such column.
    description = models.CharField(max_length=300, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        """What a form (the admin's) may not make of a blog: one at a reserved address, whose page
        would be another page."""
        if self.slug.lower() in RESERVED_BLOG_SLUGS:
            raise ValidationError({"slug": f"The address “{self.slug}” is reserved: choose another."})


class Seat(models.Model):
    OWNER, EDITOR, AUTHOR, VIEWER = "owner", "editor", "author", "viewer"
    ROLES = [(r, r.title()) for r in (OWNER, EDITOR, AUTHOR, VIEWER)]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="seats")
    blog = models.ForeignKey(Blog, on_delete=models.CASCADE, related_name="seats")
    role = models.CharField(max_length=10, choices=ROLES)
    may_use_assistant = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "blog"], name="blog_seat_unique")]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} of {self.blog}"

    def clean(self) -> None:
        """What a form (the admin's) may not make of a seat: a viewer allowed the assistant (which still
        refuses them: `grants.may_summon`), or a second owner. The owner's seat is the blog's owner's; a
        former owner's seat left an owner's when the blog changed hands (in the admin, before a change of owner
        made it an editor's: `team.owner_changed`) may be saved as it is."""
        errors = {}
        if self.role == Seat.VIEWER and self.may_use_assistant:
            errors["may_use_assistant"] = "Viewers never use the assistant."
        if self.role == Seat.OWNER and self.blog_id and self.user_id != self.blog.owner_id:
            was = Seat.objects.filter(pk=self.pk).values_list("role", flat=True).first() if self.pk else None
            if was != Seat.OWNER:
                errors["role"] = "A blog has one owner: to hand it over, change the blog's owner instead."
        if errors:
            raise ValidationError(errors)


class Post(models.Model):
    DRAFT, PUBLISHED = "draft", "published"
    STATUSES = [(DRAFT, "Draft"), (PUBLISHED, "Published")]

    blog = models.ForeignKey(Blog, on_delete=models.CASCADE, related_name="posts")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, allow_unicode=True)
    body = models.TextField(blank=True)
    # The body's words as its page reads them, without markup (`agent.markdown.plain_text`), kept with each
    # save of the body: what a search of posts matches and quotes besides the body as written. `db_default`:
    # an older release's workers, serving while `migrate` runs (README, "Upgrading"), insert without it.
    text = models.TextField(blank=True, editable=False, default="", db_default="")
    status = models.CharField(max_length=10, choices=STATUSES, default=DRAFT)
    published_at = models.DateTimeField(null=True, blank=True)
    # The cover image's key in the default storage: the post's own copy (blog/covers.py), so it
    # outlives the chat it was attached in. Served by the blog's views, never by key.
    cover_ref = models.CharField(max_length=500, blank=True)
    cover_type = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["blog", "slug"], name="blog_post_slug_unique")]
        indexes = [
            models.Index(fields=["blog", "status", "-published_at"], name="blog_post_status_idx"),
            # The blog's posts of a title, letter case aside (blog.services.posts_titled: as a title is
            # typed in the editor, at each Save, for each post the assistant drafts or renames).
            models.Index("blog", Upper("title"), name="blog_post_title_upper_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    def save(self, *, words: str | None = None, **kwargs) -> None:
        """Saved with its `text`, the words of its body, whenever the body is written: `words` when the
        caller read them from this body already (`agent.markdown.words_of`, ahead of the transaction that
        saves it: inside one on SQLite, work stays on the event loop), else read here."""
        fields = kwargs.get("update_fields")
        if fields is None or "body" in fields:
            self.text = words_of(self.body) if words is None else words
            if fields is not None:
                kwargs["update_fields"] = {*fields, "text"}
        super().save(**kwargs)

    @property
    def cover_version(self) -> str:
        """Which cover this is, for its URLs (`?v=`): a short digest of its key, "" with none. The cover's
        address is the post's; a browser keeps the image asked for by its version (`covers.cover_response`),
        so a replaced cover needs a URL of its own to be shown. A digest, not the key: keys are never shown."""
        return hashlib.sha256(self.cover_ref.encode()).hexdigest()[:12] if self.cover_ref else ""

    def snapshot(self) -> dict:
        snap = {
            "title": self.title,
            "slug": self.slug,
            "body": self.body,
            "status": self.status,
            "published_at": self.published_at.isoformat() if self.published_at else None,
        }
        if self.cover_ref:
            snap["cover"] = self.cover_ref
        return snap


class PostRevision(models.Model):
    """Who changed what: the person, or the assistant acting under a Consent in a chat session."""

    post = models.ForeignKey(Post, null=True, on_delete=models.SET_NULL, related_name="revisions")
    blog = models.ForeignKey(Blog, on_delete=models.CASCADE, related_name="revisions")
    action = models.CharField(max_length=20)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    via_assistant = models.BooleanField(default=False)
    consent = models.ForeignKey("Consent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    chat_session = models.ForeignKey(
        "agent.Session", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Not fields: what the history page shows of each revision it lists (`blog.views.post_history` sets them).
    version: int
    restore_label: str
    restorable: bool

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        # What the admin's title, breadcrumbs and links name a revision by ("PostRevision object (7)" said nothing).
        post = self.post.title if self.post else "a deleted post"
        return f"{self.action} of “{post}” by {self.actor_label}"

    @property
    def actor_label(self) -> str:
        who = self.user.username if self.user else "someone"
        if not self.via_assistant:
            return who
        return f"{self.assistant_label} for {who}"

    @property
    def assistant_label(self) -> str:
        """What acted for the person in a change made through the assistant: the connected client by its
        name, else "the assistant"."""
        client = self.consent.client_name if self.consent and self.consent.client else ""
        return client or "the assistant"


class ChatLink(models.Model):
    """Ties a chat session to a blog; the engine knows nothing of blogs."""

    session = models.OneToOneField("agent.Session", on_delete=models.CASCADE, related_name="blog_link")
    blog = models.ForeignKey(Blog, on_delete=models.CASCADE, related_name="chat_links")
    #: The post a chat beside the editor is about ("this post"); none for a chat on the blog page.
    post = models.ForeignKey(Post, null=True, blank=True, on_delete=models.SET_NULL, related_name="chat_links")


def only_known_scopes() -> Exact:
    """`scopes` is a JSON list of known scope names (any order, any of them): its text with every quoted
    name, comma and space taken out is `[]`. Said with text functions because SQLite, in a CHECK, has no
    JSON containment (`contained_by`) nor subquery (`json_each`) to say it with."""
    text: models.Func = Cast("scopes", models.TextField())
    for part in [*(f'"{scope}"' for scope in ALL_SCOPES), ",", " "]:
        text = Replace(text, models.Value(part), output_field=models.TextField())
    return Exact(text, models.Value("[]"))


class Consent(models.Model):
    """What a user lets a client (blank: the built-in assistant) do for them on one blog."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="consents")
    blog = models.ForeignKey(Blog, on_delete=models.CASCADE, related_name="consents")
    client = models.CharField(max_length=100, blank=True)
    # A connected client's name as the person saw it when they approved it (blank for the assistant).
    client_name = models.CharField(max_length=200, blank=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "blog", "client"], name="blog_consent_unique"),
            models.CheckConstraint(condition=only_known_scopes(), name="blog_consent_known_scopes"),
        ]

    def __str__(self) -> str:
        # What the admin's title, breadcrumbs and a revision's link name a grant by ("Consent object (5)" said
        # nothing): whose, which client, on which blog.
        return f"{self.user} · {self.client_label} on {self.blog}"

    @property
    def client_label(self) -> str:
        """The client as its person knows it: the built-in assistant, else the name they approved it under."""
        if not self.client:
            return "Built-in assistant"
        return self.client_name or "Unnamed client"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
