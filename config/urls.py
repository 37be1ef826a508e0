from django.contrib import admin
from django.contrib.sitemaps.views import sitemap
from django.urls import include, path

from accounts.views import ThrottledLoginView
from blog.reading import SITEMAPS

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("sitemap.xml", sitemap, {"sitemaps": SITEMAPS}, name="sitemap"),
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
    path("", include("blog.urls")),
]
