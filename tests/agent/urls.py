"""The engine's URLs in a project of its own: Django's own sign-in and admin, the toy app's notebook page
(where a chat's form sent as a page comes back to), nothing of this site's."""

from django.contrib import admin
from django.urls import include, path

from tests.agent.testapp import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),  # (login, logout, password_change...)
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
    path("notebooks/<int:pk>/", views.notebook),  # (where `NotebookPolicy.page_url` sends a chat's page)
]
