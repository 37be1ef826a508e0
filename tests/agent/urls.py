"""The engine's URLs with the site's sign-in and admin, and nothing of `blog`."""

from django.contrib import admin
from django.urls import include, path

from accounts.views import ThrottledLoginView, ThrottledPasswordChangeView

urlpatterns = [
    path("admin/", admin.site.urls),
    # The site's throttled views, as config/urls.py routes them; Django's own for the rest.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/password_change/", ThrottledPasswordChangeView.as_view(), name="password_change"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
]
