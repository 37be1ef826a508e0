from django.contrib import admin

from blog.models import Blog, ChatLink, Consent, Post, PostRevision, Seat


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Blog)
class BlogAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "owner", "created_at"]
    search_fields = ["title", "slug", "owner__username"]
    prepopulated_fields = {"slug": ["title"]}
    inlines = [SeatInline]


@admin.register(Seat)
class SeatAdmin(admin.ModelAdmin):
    list_display = ["user", "blog", "role", "may_use_assistant"]
    list_filter = ["role", "may_use_assistant"]
    search_fields = ["user__username", "blog__slug"]


@admin.register(Post)
class PostAdmin(admin.ModelAdmin):
    list_display = ["title", "blog", "status", "author", "published_at", "updated_at"]
    # (the admin joins only the non-null relations it shows by itself: a nullable one, the author,
    # would be one query per row)
    list_select_related = ["blog", "author"]
    list_filter = ["status", "blog"]
    search_fields = ["title", "body"]


@admin.register(PostRevision)
class PostRevisionAdmin(admin.ModelAdmin):
    list_display = ["created_at", "blog", "post", "action", "user", "via_assistant", "chat_session"]
    list_select_related = ["blog", "post", "user", "chat_session"]  # (nullable ones: a query per row each)
    list_filter = ["action", "via_assistant"]
    readonly_fields = [f.name for f in PostRevision._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Consent)
class ConsentAdmin(admin.ModelAdmin):
    list_display = ["user", "blog", "client", "scopes", "updated_at", "revoked_at", "last_used_at"]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "blog__slug"]


@admin.register(ChatLink)
class ChatLinkAdmin(admin.ModelAdmin):
    list_display = ["session", "blog"]
    readonly_fields = ["session", "blog"]
