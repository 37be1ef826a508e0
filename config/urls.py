from django.contrib import admin
from django.urls import include, path

from accounts.views import ThrottledLoginView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
    path("", include("connectors.urls")),
    path("", include("connectors.oauth_urls")),  # the namespace django-oauth-toolkit reverses: oauth2_provider
    path("", include("blog.urls")),
]
