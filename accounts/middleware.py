"""A page fragment asked for after the person's session ended sends the whole page to sign in."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect

from accounts.http import HtmxHttpRequest


class SignInAsAPageMiddleware:
    """Turn `login_required`'s redirect of an htmx request into a redirect of the whole page.

    htmx follows a redirect itself and swaps what it finds into the fragment's place: signed out in
    another tab, a person sending a message or publishing a post got the sign-in page, header and
    all, inside the chat or the post list. The browser now goes to the sign-in page, and back to
    the page the person was on once they have signed in.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HtmxHttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not getattr(request, "htmx", False) or response.status_code != 302:
            return response
        sign_in = resolve_url(settings.LOGIN_URL)
        if urlsplit(response["Location"]).path != sign_in:
            return response
        back = request.htmx.current_url_abs_path or "/"
        return HttpResponseClientRedirect(f"{sign_in}?{urlencode({'next': back})}")
