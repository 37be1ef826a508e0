from django.urls import path, register_converter

from blog import blog_views, chat_panel, live, reading, team_views, views


class PostSlugConverter:
    """A post's address in any script (`blog.services.slug_base`): letters, digits, the marks of
    their letters (Devanagari's vowel signs, which Django's own slug pattern refuses), `-` and `_`."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(PostSlugConverter, "post_slug")

app_name = "blog"

urlpatterns = [
    path("", views.home, name="home"),
    path("blogs/new/", blog_views.blog_new, name="blog_new"),  # (before the blog's page: "new" is no blog's address)
    path("blogs/<slug:slug>/", views.blog_detail, name="detail"),
    path("blogs/<slug:slug>/events/", live.blog_events, name="events"),
    path("blogs/<slug:slug>/head/", blog_views.blog_head, name="head"),
    path("blogs/<slug:slug>/posts/", views.post_list, name="post_list"),
    path("blogs/<slug:slug>/posts/all/", views.all_posts, name="all_posts"),
    path("blogs/<slug:slug>/posts/new/", views.post_new, name="post_new"),
    path("blogs/<slug:slug>/posts/preview/", views.post_preview, name="post_preview"),
    path("blogs/<slug:slug>/posts/namesakes/", views.post_namesakes, name="namesakes"),
    path("blogs/<slug:slug>/posts/<int:pk>/edit/", views.post_edit, name="post_edit"),
    path("blogs/<slug:slug>/posts/<int:pk>/head/", blog_views.post_head, name="post_head"),
    path("blogs/<slug:slug>/posts/<int:pk>/namesakes/", views.post_namesakes, name="post_namesakes"),
    path("blogs/<slug:slug>/posts/<int:pk>/publish/", views.post_publish, name="post_publish"),
    path("blogs/<slug:slug>/posts/<int:pk>/unpublish/", views.post_unpublish, name="post_unpublish"),
    path("blogs/<slug:slug>/posts/<int:pk>/delete/", views.post_delete, name="post_delete"),
    path("blogs/<slug:slug>/posts/<int:pk>/history/", views.post_history, name="history"),
    path("blogs/<slug:slug>/posts/<int:pk>/cover", views.post_cover, name="post_cover"),
    path("blogs/<slug:slug>/posts/<int:pk>/history/compare/", views.post_compare, name="compare"),
    path("blogs/<slug:slug>/posts/<int:pk>/revert/<int:rev>/", views.post_revert, name="revert"),
    path("blogs/<slug:slug>/members/", team_views.members, name="members"),
    path("blogs/<slug:slug>/members/<int:pk>/remove/", team_views.member_remove, name="member_remove"),
    path("blogs/<slug:slug>/export/", team_views.blog_export, name="export"),
    path("blogs/<slug:slug>/import/", team_views.blog_import, name="import"),
    path("blogs/<slug:slug>/settings/", blog_views.blog_settings, name="settings"),
    path("blogs/<slug:slug>/delete/", blog_views.blog_delete, name="blog_delete"),
    path("blogs/<slug:slug>/hand-over/", blog_views.blog_hand_over, name="blog_hand_over"),
    path("blogs/<slug:slug>/clients/", team_views.clients, name="clients"),
    path("blogs/<slug:slug>/chats/", chat_panel.chats, name="chats"),
    path("blogs/<slug:slug>/chats/new/", chat_panel.new_chat, name="new_chat"),
    path("blogs/<slug:slug>/chats/grant/", chat_panel.grant_line, name="grant_line"),
    path("blogs/<slug:slug>/chats/send", chat_panel.first_message, name="first_message"),
    path("blogs/<slug:slug>/chats/panel", chat_panel.panel_chat, name="panel_chat"),
    path("blogs/<slug:slug>/chats/list", chat_panel.chat_list, name="chat_list"),
    path("blogs/<slug:slug>/chats/<uuid:chat_id>/rename", chat_panel.chat_rename, name="chat_rename"),
    path("blogs/<slug:slug>/posts/<int:pk>/chats/", chat_panel.chats, name="post_chats"),
    path("blogs/<slug:slug>/posts/<int:pk>/chats/new/", chat_panel.new_chat, name="post_new_chat"),
    path("blogs/<slug:slug>/posts/<int:pk>/chats/send", chat_panel.first_message, name="post_first_message"),
    path("blogs/<slug:slug>/posts/<int:pk>/chats/panel", chat_panel.panel_chat, name="post_panel_chat"),
    path("blogs/<slug:slug>/posts/<int:pk>/chats/list", chat_panel.chat_list, name="post_chat_list"),
    path("blogs/<slug:slug>/posts/<int:pk>/incoming/", views.post_incoming, name="post_incoming"),
    path("read/<slug:slug>/", reading.public_index, name="public_index"),
    path("read/<slug:slug>/feed/", reading.BlogFeed(), name="feed"),
    path("read/<slug:slug>/<post_slug:post_slug>/", reading.public_post, name="public_post"),
    path("read/<slug:slug>/<post_slug:post_slug>/cover", reading.public_cover, name="public_cover"),
]
