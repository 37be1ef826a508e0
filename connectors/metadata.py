"""RFC 9728 protected-resource metadata for `/mcp` (django-oauth-toolkit's view, one resource)."""

from __future__ import annotations

from oauth2_provider.views import OAuthProtectedResourceMetadataView

from connectors.oauth import resource_url


class McpResourceMetadataView(OAuthProtectedResourceMetadataView):
    """Both the root document and the `/mcp` path form name the one resource this site protects."""

    def get_resource(self, request):
        return resource_url(request)
