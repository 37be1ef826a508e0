"""The engine's URLs in a project of its own: Django's own sign-in and admin, nothing of this site's."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),  # (login, logout, password_change...)
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
]
