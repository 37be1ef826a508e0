"""The consent page (the OAuth authorization endpoint): a person lets a client act on one of their blogs.

Signed in, the person sees the client's name and where it will send them back, picks a blog and
ticks scopes, offered only up to their own role there. Approve writes that client's Consent (its
`client` is the OAuth client id) and sends the client a code for a token bound to `/mcp` and that
blog; Deny sends it `access_denied`. django-oauth-toolkit validates the request (client, exact
redirect URI, PKCE S256, scopes) on the way in and again on the way out.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.models import get_application_model
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.http import AuthenticatedHttpRequest
from blog import team
from blog.access import ROLE_SCOPES, scope_choices
from blog.models import Seat
from config.middleware import POLICY
from connectors.oauth import blog_scope, resource_url


class ConsentView(LoginRequiredMixin, OAuthLibMixin, View):
    template_name = "connectors/consent.html"

    def get(self, request: AuthenticatedHttpRequest) -> HttpResponse:
        checked = self._checked(request)
        if isinstance(checked, HttpResponse):
            return checked
        application, requested, credentials = checked
        seats = list(Seat.objects.filter(user=request.user).select_related("blog").order_by("blog__title"))
        chosen = next((s for s in seats if s.blog.slug == request.GET.get("blog")), seats[0] if seats else None)
        context = {
            "application": application,
            "redirect_host": urlsplit(credentials["redirect_uri"]).netloc,
            "seats": seats,
            "chosen": chosen,
            "scopes": self._offer(chosen, requested),
            "hidden": [(k, v) for k, values in request.GET.lists() if k != "blog" for v in values],
        }
        return self._page(request, context, credentials["redirect_uri"])

    def post(self, request: AuthenticatedHttpRequest) -> HttpResponse:
        checked = self._checked(request)
        if isinstance(checked, HttpResponse):
            return checked
        application, _requested, credentials = checked
        credentials["resource"] = [resource_url(request)]
        if request.POST.get("decision") != "approve":
            return self._deny(request, credentials)
        seat = Seat.objects.filter(user=request.user, blog__slug=request.POST.get("blog", "")).first()
        # (not named "scope": oauthlib reads its own parameters from the same body)
        wanted = set(request.POST.getlist("allow"))
        if seat is None or not wanted or not wanted <= ROLE_SCOPES[seat.role]:
            # Only a tampered form gets here: the page offers nothing else.
            message = "Choose a blog and at least one thing to allow, within your role there."
            return render(request, "connectors/oauth_error.html", {"message": message}, status=400)
        scopes = " ".join([blog_scope(seat.blog.pk), *sorted(wanted)])
        try:
            uri, _headers, _body, _status = self.create_authorization_response(request, scopes, credentials, True)
        except OAuthToolkitError as error:
            return self._refuse(request, error)
        # The code is made: what it stands for is this client's Consent from now on.
        team.consent_grant(
            user=request.user, blog=seat.blog, client=application.client_id, scopes=wanted, client_name=application.name
        )
        return OAuth2ResponseRedirect(uri, application.get_allowed_schemes())

    def _checked(self, request: HttpRequest) -> tuple[Any, list[str], dict[str, Any]] | HttpResponse:
        """The validated authorization request, or the response that refuses it."""
        try:
            requested, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self._refuse(request, error)
        application = get_application_model().objects.get(client_id=credentials["client_id"])
        if request.GET.get("code_challenge_method") != "S256":
            # Refused here, before the person is asked, not only when the code is made.
            return self._refuse_request(
                request, credentials, "invalid_request", "PKCE with code_challenge_method S256 is required."
            )
        if request.GET.getlist("resource") != [resource_url(request)]:
            description = f"This server issues tokens only for resource={resource_url(request)}."
            return self._refuse_request(request, credentials, "invalid_target", description)
        return application, requested, credentials

    def _refuse_request(self, request: HttpRequest, credentials: dict[str, Any], code: str, description: str):
        uri = credentials["redirect_uri"]
        error = CustomOAuth2Error(error=code, description=description, state=credentials.get("state"))
        return self._refuse(request, OAuthToolkitError(error=error, redirect_uri=uri))

    def _deny(self, request: HttpRequest, credentials: dict[str, Any]) -> HttpResponse:
        """Back to the client with `access_denied` (and its state)."""
        try:
            self.create_authorization_response(request, "", credentials, False)
        except OAuthToolkitError as error:
            return self._refuse(request, error)
        raise AssertionError("a denied authorization always raises")  # pragma: no cover

    def _refuse(self, request: HttpRequest, error: OAuthToolkitError) -> HttpResponse:
        """Back to the client with the error when its redirect URI is known to be its own; else a page."""
        redirect, response = self.error_response(error)
        if redirect and error.oauthlib_error.redirect_uri:
            return OAuth2ResponseRedirect(response["url"], ["https", "http"])
        oauth_error = response["error"]
        return render(
            request,
            "connectors/oauth_error.html",
            {"message": oauth_error.description or "This authorization request is not valid."},
            status=400,
        )

    def _offer(self, seat: Seat | None, requested: list[str]) -> list[dict[str, Any]]:
        mine = ROLE_SCOPES[seat.role] if seat else frozenset()
        return scope_choices(mine, mine & set(requested))

    def _page(self, request: HttpRequest, context: dict[str, Any], redirect_uri: str) -> HttpResponse:
        response = render(request, self.template_name, context)
        # The form's answer redirects to the client: the page's form-action must allow its origin.
        parts = urlsplit(redirect_uri)
        response["Content-Security-Policy"] = POLICY.replace(
            "form-action 'self'", f"form-action 'self' {parts.scheme}://{parts.netloc}"
        )
        return response
