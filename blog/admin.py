from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.db import router, transaction
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from agent.admin import DeletedWithItsOwner, SessionAdmin
from agent.models import Session
from blog import blogs, live, services, team
from blog.chat import blog_of
from blog.grants import Actor
from blog.models import Blog, ChatLink, Consent, Post, PostRevision, Seat


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Blog)
class BlogAdmin(admin.ModelAdmin):
    """Blogs made, handed over and deleted by an admin (people start their own on `/blogs/new/`,
    `blog.blogs`). Its owner always holds an owner's seat, with the assistant, made or raised when the
    blog is saved (`team.owner_seat`, as for a blog started on the site). A former owner's owner's seat
    becomes an editor's, as when an owner hands their blog over on its Settings page (`team.owner_changed`;
    the admin is not held to `BLOGS_PER_PERSON`, and may name someone not yet a member). A blog deleted here goes as its owner's deletion does (`blogs.blog_delete`):
    its chats and their files, its posts' covers, its open pages told."""

    list_display = ["title", "slug", "owner", "created_at"]
    search_fields = ["title", "slug", "owner__username"]
    prepopulated_fields = {"slug": ["title"]}
    inlines = [SeatInline]

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)  # (the seats typed below first)
        former = form.initial.get("owner") if change and "owner" in form.changed_data else None
        team.owner_changed(blog=form.instance, former_owner_id=former)  # (a new owner: announced there)
        if former is None and change and {"title", "description"} & set(form.changed_data):
            live.blog_updated(form.instance)  # (renamed here: the blog's open pages redraw their header)

    def delete_model(self, request, obj):
        blogs.blog_delete(blog=obj, actor=request.user, owner_only=False)  # (the admin need not own it)

    def delete_queryset(self, request, queryset):
        # All or none: each blog's files go once this one transaction commits (`blogs.blog_delete`).
        with transaction.atomic(using=router.db_for_write(self.model)):
            for blog in queryset:
                self.delete_model(request, blog)


@admin.register(Seat)
class SeatAdmin(admin.ModelAdmin):
    list_display = ["user", "blog", "role", "may_use_assistant"]
    list_filter = ["role", "may_use_assistant"]
    search_fields = ["user__username", "blog__slug"]


@admin.register(Post)
class PostAdmin(admin.ModelAdmin):
    """Read here, written on the blog's own screens (each change a revision there); deleted here
    through `services.post_delete`, so the blog's history says who deleted it and what it was."""

    list_display = ["title", "blog", "status", "author", "published_at", "updated_at"]
    # (the admin joins only the non-null relations it shows by itself: a nullable one, the author,
    # would be one query per row)
    list_select_related = ["blog", "author"]
    list_filter = ["status", "blog"]
    search_fields = ["title", "body"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        services.post_delete(post=obj, actor=Actor(request.user, frozenset()))

    def log_deletions(self, request, queryset):
        pass  # (written with the deletions, in their transaction: `delete_queryset`)

    def delete_queryset(self, request, queryset):
        # All or none, the admin's log of them too: each deletion's cover and the announcement to the blogs'
        # pages wait for this one commit (`services.post_delete`'s on_commit), one message a blog
        # (`live.Batch`), not one a post.
        actor = Actor(request.user, frozenset())
        news: dict[int, live.Batch] = {}
        with transaction.atomic(using=router.db_for_write(self.model)):
            super().log_deletions(request, queryset)
            for post in queryset.select_related("blog"):
                batch = news.setdefault(post.blog_id, live.Batch(post.blog))
                services.post_delete(post=post, actor=actor, announce=batch.announce)
            for batch in news.values():
                batch.send()


@admin.register(PostRevision)
class PostRevisionAdmin(DeletedWithItsOwner, admin.ModelAdmin):
    list_display = ["created_at", "blog", "post", "action", "user", "acted_through", "chat"]
    list_select_related = ["blog", "post", "user", "consent", "chat_session"]  # (nullable ones: a query per row each)
    list_filter = ["action", "via_assistant", "blog"]
    search_fields = ["chat_session__id", "user__username", "blog__slug", "post__title"]
    readonly_fields = [f.name for f in PostRevision._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    # A change made through the assistant names what acted: the built-in assistant or a connected client.
    @admin.display(description="through", ordering="via_assistant")
    def acted_through(self, revision: PostRevision) -> str | None:
        return revision.assistant_label if revision.via_assistant else None

    # The chat it was made in, a link to its transcript (the whole id made the list wider than a window).
    @admin.display(description="chat")
    def chat(self, revision: PostRevision) -> str | None:
        chat = revision.chat_session
        if chat is None:
            return None
        label = Truncator(chat.title).chars(30) if chat.title else f"{str(chat.pk)[:8]}…"
        return format_html('<a href="{}">{}</a>', reverse("admin:agent_session_change", args=[chat.pk]), label)


@admin.register(Consent)
class ConsentAdmin(DeletedWithItsOwner, admin.ModelAdmin):
    """Read-only: a grant is its person's to give (their Clients screen); an admin may only revoke one,
    as its person would (a connected client's tokens on that blog are revoked with it)."""

    list_display = ["user", "blog", "client_label", "scopes", "updated_at", "revoked_at", "last_used_at"]
    list_select_related = ["user", "blog"]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "blog__slug", "client_name", "client"]
    readonly_fields = [f.name for f in Consent._meta.fields]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_revoke_permission(self, request):
        return request.user.has_perm("blog.change_consent")

    # The client by name (its OAuth id, also on each grant's page, is a random string; the built-in
    # assistant's is blank, which the list showed as "-").
    @admin.display(description="client", ordering="client_name")
    def client_label(self, consent: Consent) -> str:
        return consent.client_label

    @admin.action(description="Revoke the selected grants", permissions=["revoke"])
    def revoke(self, request, queryset):
        # All or none, the admin's log of them too: a revoke that fails (its client's tokens not revoked,
        # say) leaves every selected grant as it was, not the ones before it revoked.
        with transaction.atomic(using=router.db_for_write(self.model)):
            for consent in queryset:
                if consent.revoked_at is None:  # (one revoked already stays as it was, unlogged)
                    team.consent_revoke(consent=consent)
                    self.log_change(request, consent, "Revoked.")


@admin.register(ChatLink)
class ChatLinkAdmin(DeletedWithItsOwner, admin.ModelAdmin):
    """Which blog (and post) each chat is on: made with the chat, gone with it or its blog."""

    list_display = ["session", "person", "blog", "post"]
    list_select_related = ["session__user", "blog", "post"]  # (the post is nullable: a query per row)
    list_filter = ["blog"]
    search_fields = ["session__id", "session__user__username", "blog__slug"]
    readonly_fields = ["session", "blog", "post"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="person", ordering="session__user__username")
    def person(self, link: ChatLink):
        return link.session.user


# The engine's transcripts, with what only the blog knows: which blog each chat is on (`ChatLink`).
admin.site.unregister(Session)


def after(name: str, added: str, names: Sequence[Any]) -> list[Any]:
    """`names` with `added` after `name`."""
    at = names.index(name) + 1
    return [*names[:at], added, *names[at:]]


@admin.register(Session)
class BlogSessionAdmin(SessionAdmin):
    """`SessionAdmin` with each chat's blog: a column, a filter, and a blog's slug found by the search."""

    list_display = after("user", "blog", SessionAdmin.list_display)
    list_select_related = ["user", "blog_link__blog"]  # (the blog in the query of the list)
    list_filter = [("blog_link__blog", admin.RelatedFieldListFilter), *SessionAdmin.list_filter]
    search_fields = [*SessionAdmin.search_fields, "blog_link__blog__slug"]
    readonly_fields = after("user", "blog", SessionAdmin.readonly_fields)

    @admin.display(description="blog", ordering="blog_link__blog__title")
    def blog(self, session: Session) -> str:
        found = blog_of(session)
        return "-" if found is None else str(found)
