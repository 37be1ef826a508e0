"""Times in the reader's zone: the `tz` cookie the browser sets, checked, activated per request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.http import HttpResponse, StreamingHttpResponse
from django.template import Context, Template
from django.test import RequestFactory
from django.utils import timezone

from accounts.timezones import TimeZoneMiddleware

NOON_UTC = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def zone_seen(cookie: str | None) -> tuple[str, HttpResponse]:
    """The zone a view sees (and the response) when the request brings `cookie` as `tz`."""
    seen = []

    def view(request):
        seen.append(timezone.get_current_timezone_name())
        return HttpResponse()

    request = RequestFactory().get("/")
    if cookie is not None:
        request.COOKIES["tz"] = cookie
    response = TimeZoneMiddleware(view)(request)
    return seen[0], response


@pytest.fixture(autouse=True)
def _leave_no_zone_active():
    yield
    timezone.deactivate()


def test_a_known_zone_is_activated():
    assert zone_seen("Asia/Tokyo")[0] == "Asia/Tokyo"
    assert zone_seen("America/New_York")[0] == "America/New_York"


@pytest.mark.parametrize(
    "cookie",
    [
        "",
        "Mars/Olympus_Mons",  # no such zone
        "asia/tokyo",  # zone names are exact
        "../../etc/passwd",
        "Asia/Tokyo\x00",
        "localtime",  # the server's own zone, which no browser means
        "+09:00",
        "x" * 5000,
    ],
)
def test_a_bad_or_unknown_zone_is_ignored(cookie):
    assert zone_seen(cookie)[0] == "UTC"


def test_without_the_cookie_the_site_shows_utc():
    assert zone_seen(None)[0] == "UTC"


def test_a_zone_from_an_earlier_request_is_not_kept():
    """A keep-alive connection's greenlet serves the next request: its zone is the next cookie's."""
    assert zone_seen("Asia/Tokyo")[0] == "Asia/Tokyo"
    assert zone_seen(None)[0] == "UTC"
    assert zone_seen("Asia/Tokyo")[0] == "Asia/Tokyo"
    assert zone_seen("garbage")[0] == "UTC"


def test_a_streamed_body_is_written_in_the_readers_zone():
    """An SSE stream's fragments are rendered while the body is read, after the middleware returned
    (in the same greenlet): the zone is still the reader's then."""

    def view(request):
        return StreamingHttpResponse(timezone.get_current_timezone_name() for _ in range(1))

    request = RequestFactory().get("/")
    request.COOKIES["tz"] = "Asia/Tokyo"
    response = TimeZoneMiddleware(view)(request)
    assert b"".join(response.streaming_content) == b"Asia/Tokyo"


def test_pages_vary_on_the_cookie():
    assert "Cookie" in zone_seen("Asia/Tokyo")[1]["Vary"]


def render(template: str, value: datetime) -> str:
    return Template("{% load local_time %}" + template).render(Context({"t": value}))


def test_a_time_in_the_readers_zone_needs_no_label():
    with timezone.override("Asia/Tokyo"):
        assert render('{{ t|local_time:"M j, H:i" }}', NOON_UTC) == "Dec 3, 21:00"
        assert render('{{ t|date:"c" }}', NOON_UTC) == "2026-12-03T21:00:00+09:00"  # ISO 8601 with offset


def test_a_time_shown_in_utc_says_so():
    assert render('{{ t|local_time:"M j, H:i" }}', NOON_UTC) == "Dec 3, 12:00 UTC"
    assert render('{{ t|local_time:"M j, Y" }}', datetime(2026, 12, 3, 20, 0, tzinfo=UTC)) == "Dec 3, 2026 UTC"
    with timezone.override("America/New_York"):  # the date itself may be another day there
        assert render('{{ t|local_time:"M j, Y" }}', datetime(2026, 12, 3, 2, 0, tzinfo=UTC)) == "Dec 2, 2026"


def test_no_time_is_nothing():
    assert render('{{ t|local_time:"M j, H:i" }}', None) == ""  # type: ignore[arg-type]
