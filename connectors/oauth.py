"""The OAuth 2.1 glue around django-oauth-toolkit: what this server's tokens mean and how they are checked.

A token is for one resource, this site's `/mcp` (RFC 8707), and one blog: the consent page adds the
scope `blog:<id>` to what the person approved. What the token may *do* is not in the token: every
call reads the client's Consent on that blog and the person's live seat (`blog.grants`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import get_scopes_backend

from blog.models import Consent

BLOG_SCOPE = re.compile(r"blog:([1-9][0-9]{0,18})")


def resource_url(request: HttpRequest) -> str:
    """The one resource this server issues tokens for: the absolute URL of `/mcp` (RFC 8707, RFC 9728)."""
    return request.build_absolute_uri(reverse("connectors:mcp"))


def resource_metadata_url(request: HttpRequest) -> str:
    """Where a client reads the protected-resource metadata of `/mcp` (RFC 9728 §3.1, path form)."""
    return request.build_absolute_uri(reverse("oauth2_provider:oauth-resource-metadata-path"))


def blog_scope(blog_id: int) -> str:
    return f"blog:{blog_id}"


def blog_of_scopes(scopes: list[str] | str) -> int | None:
    """The blog a token is bound to, from its scopes (exactly one `blog:<id>`), else None."""
    if isinstance(scopes, str):
        scopes = scopes.split()
    found = [int(m.group(1)) for s in scopes if (m := BLOG_SCOPE.fullmatch(s))]
    return found[0] if len(found) == 1 else None


def granted(user, scopes: list[str] | str, client_id: str) -> bool:
    """Whether `user` has a live Consent for `client_id` on the blog `scopes` bind a token to."""
    blog_id = blog_of_scopes(scopes)
    if blog_id is None:
        return False
    return Consent.objects.filter(user=user, blog_id=blog_id, client=client_id, revoked_at__isnull=True).exists()


class ConnectorValidator(OAuth2Validator):
    """django-oauth-toolkit's validator with this server's stricter rules."""

    def validate_redirect_uri(self, client_id, redirect_uri, request, *args, **kwargs):
        # Exact string comparison with a registered URI (RFC 9700 §2.1, the MCP authorization spec):
        # no loopback port latitude, so a code can only ever go where the client registered.
        return redirect_uri in request.client.redirect_uris.split()

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        # The code stands for the client's Consent on its blog: revoked (or the seat or the account gone)
        # before the client exchanged it, the code is spent and makes no token, which would otherwise
        # work again the day the person connects the same client anew.
        if not super().validate_code(client_id, code, client, request, *args, **kwargs):
            return False
        if request.user.is_active and granted(request.user, request.scopes, client.client_id):
            return True
        self.invalidate_authorization_code(client_id, code, request)
        return False

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        # A deactivated account gets no new tokens; its access tokens are refused at `/mcp` too.
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return valid and request.user.is_active

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        # The blog operations' scopes, plus the one `blog:<id>` binding the consent page adds.
        known = get_scopes_backend().get_all_scopes()
        return all(scope in known or BLOG_SCOPE.fullmatch(scope) for scope in scopes)


HOLDS_NUL = "A parameter of this request holds a NUL character."


def holds_nul(request: HttpRequest) -> bool:
    """Whether a parameter of the request, in its query string or form body, holds a NUL."""
    query = request.META.get("QUERY_STRING", "")
    if "%00" in query or "\x00" in query:
        return True
    return request.method == "POST" and any(
        "\x00" in k or any("\x00" in v for v in vs) for k, vs in request.POST.lists()
    )


def refuse_nul(view: Callable[..., HttpResponseBase], *, page: bool = False) -> Callable[..., HttpResponseBase]:
    """`view`, answering a request whose parameters hold a NUL with `400 invalid_request` (a page for the
    person's browser with `page`). PostgreSQL can neither hold a NUL nor look one up, and oauthlib and
    django-oauth-toolkit look up and store what the request says as it is (its client id, code,
    challenge, nonce): each was a 500. No parameter of OAuth has a NUL."""

    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs) -> HttpResponseBase:
        if not holds_nul(request):
            return view(request, *args, **kwargs)
        if page:
            return render(request, "connectors/oauth_error.html", {"message": HOLDS_NUL}, status=400)
        return JsonResponse({"error": "invalid_request", "error_description": HOLDS_NUL}, status=400)

    return checked
