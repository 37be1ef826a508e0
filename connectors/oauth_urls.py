"""The authorization server's routes, named as django-oauth-toolkit's metadata views expect them.

Its RFC 8414 document lists `authorize`, `token`, `revoke-token` and (with DCR_ENABLED) `dcr-register`
by these names, so they are served here under its `oauth2_provider` namespace: its own token and
revocation views, our consent page and registration endpoint; the first three refuse a NUL in any
parameter (`connectors.oauth.refuse_nul`). No implicit, password, device or
introspection routes, and no application-management pages.
"""

from django.urls import path
from oauth2_provider import views as oauth

from connectors import consent, metadata, registration
from connectors.oauth import refuse_nul

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server", oauth.OAuthServerMetadataView.as_view(), name="oauth-server-metadata"
    ),
    path(
        ".well-known/oauth-protected-resource",
        metadata.McpResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/mcp",
        metadata.McpResourceMetadataView.as_view(),
        name="oauth-resource-metadata-path",
    ),
    path("oauth/authorize/", refuse_nul(consent.ConsentView.as_view(), page=True), name="authorize"),
    path("oauth/token/", refuse_nul(oauth.TokenView.as_view()), name="token"),
    path("oauth/revoke/", refuse_nul(oauth.RevokeTokenView.as_view()), name="revoke-token"),
    path("oauth/register/", registration.register, name="dcr-register"),
]
