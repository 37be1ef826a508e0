"""Each person sees times in their own time zone, the one their browser says it is in.

Django's documented way ("Time zones" → "Selecting the current time zone"): a middleware activates
the zone for the request, and every time a template renders (the `date` filter, `timezone.localtime`)
is converted to it. The browser says its zone (`Intl.DateTimeFormat().resolvedOptions().timeZone`)
in the `tz` cookie, which `static/js/timezone.js` sets on every page; it is only a preference, so a
name that is not a known zone is ignored and the page shows UTC, saying so (`accounts.templatetags.
local_time`). A stream's body is written after the middleware has returned, in the same greenlet,
with the zone still active: the middleware activates or deactivates on every request, never after.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from functools import cache

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers

COOKIE_NAME = "tz"
LONGEST_NAME = 64  # the longest IANA name is 32 characters: anything longer is not looked up


@cache
def known_zones() -> frozenset[str]:
    # "localtime" is the server's own zone under another name, which no browser means.
    return frozenset(zoneinfo.available_timezones() - {"localtime"})


def zone_named(name: str | None) -> zoneinfo.ZoneInfo | None:
    """The zone a browser named, or None for a name that is not a known IANA zone."""
    if not name or len(name) > LONGEST_NAME or name not in known_zones():
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):  # (listed, yet its file unreadable)
        return None


class TimeZoneMiddleware:
    """Activate the zone the browser named in the `tz` cookie; without one, the site's (UTC)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = zone_named(request.COOKIES.get(COOKIE_NAME))
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        response = self.get_response(request)
        # A page's times depend on the cookie: a shared cache must not give one reader's to another.
        patch_vary_headers(response, ("Cookie",))
        return response
