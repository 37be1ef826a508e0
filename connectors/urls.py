"""The connectors' routes: `/mcp` and a connected client's grant (the OAuth ones are in `oauth_urls`)."""

from django.urls import path

from connectors import clients, views

app_name = "connectors"

urlpatterns = [
    path("mcp", views.mcp, name="mcp"),
    path("blogs/<slug:slug>/clients/<str:client>/", clients.client_grant, name="client"),
    path("accounts/clients/disconnect/", clients.disconnect_all, name="disconnect_all"),
]
