"""The connectors' routes: `/mcp`, and the OAuth endpoints in django-oauth-toolkit's namespace."""

from django.urls import include, path

from connectors import views

app_name = "connectors"

urlpatterns = [
    path("mcp", views.mcp, name="mcp"),
    path("", include("connectors.oauth_urls")),
]
