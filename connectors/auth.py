"""Who is calling `/mcp`: a bearer token for this resource and one blog, still backed by a live Consent.

Checked on every request, so a revoked token, a revoked grant or a lost seat bites at once. Any
failure is a 401 with the RFC 9728 challenge that tells a client where to start authorising.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, JsonResponse
from oauth2_provider.oauth2_backends import get_oauthlib_core

from blog.models import Blog, Consent
from connectors.oauth import blog_of_scopes, resource_metadata_url, resource_url


@dataclass(frozen=True)
class Caller:
    """A verified MCP caller: the person, the client acting for them and the one blog it is bound to."""

    user: Any
    client_id: str
    client_name: str
    blog: Blog


class Unauthorized(Exception):
    """No usable credentials; `description` is safe to send (never the token)."""

    def __init__(self, description: str = "", *, presented: bool = False) -> None:
        super().__init__(description)
        self.description = description
        self.presented = presented


def authenticate(request: HttpRequest) -> Caller:
    """The caller behind the request's bearer token, or Unauthorized."""
    if not request.headers.get("Authorization", "").startswith("Bearer "):
        raise Unauthorized()
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[])
    token = getattr(oauth_request, "access_token", None) if valid else None
    if token is None:
        raise Unauthorized("The access token is invalid, expired or revoked.", presented=True)
    # Tokens are issued only for this resource (RFC 8707); one without it, or for another, is refused.
    if list(token.resource or []) != [resource_url(request)]:
        raise Unauthorized("The access token was not issued for this resource.", presented=True)
    blog_id = blog_of_scopes(token.scope)
    blog = Blog.objects.filter(pk=blog_id).first() if blog_id else None
    app = token.application
    if blog is None or app is None or token.user is None:
        raise Unauthorized("The access token is not bound to a blog.", presented=True)
    if not token.user.is_active:  # deactivated: its web sessions ended, and so do its connections
        raise Unauthorized("The access token is invalid, expired or revoked.", presented=True)
    consent = Consent.objects.filter(user=token.user, blog=blog, client=app.client_id, revoked_at__isnull=True)
    if not consent.exists():
        raise Unauthorized("This connection was revoked; connect again.", presented=True)
    return Caller(token.user, app.client_id, app.name, blog)


def challenge(request: HttpRequest, error: Unauthorized) -> JsonResponse:
    """401 with `WWW-Authenticate: Bearer resource_metadata=...` (RFC 9728 §5.1, RFC 6750 §3)."""
    params = [f'resource_metadata="{resource_metadata_url(request)}"']
    if error.presented:
        params.insert(0, 'error="invalid_token"')
        params.append(f'error_description="{error.description}"')
    body = {
        "error": "invalid_token" if error.presented else "unauthorized",
        "error_description": error.description or "Authorization needed: see the WWW-Authenticate header.",
        "resource": resource_url(request),
    }
    return JsonResponse(body, status=401, headers={"WWW-Authenticate": "Bearer " + ", ".join(params)})
