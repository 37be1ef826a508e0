"""The request types the project's views are annotated with (no runtime behaviour: type checking only).

`HtmxHttpRequest` is django-htmx's documented annotation for a request through its middleware
(`request.htmx`); `AuthenticatedHttpRequest` is django-stubs' for a view behind `login_required`
(`request.user` is a signed-in user, never `AnonymousUser`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    user: User
