"""`{{ value|local_time:"M j, H:i" }}`: a time in the reader's zone, or in UTC saying so.

The `date` filter already converts to the zone the request activated (`accounts.timezones`). Until
the browser has said its zone (a first visit, a reader without scripts) that is the site's default,
UTC: the time is then followed by the zone's name, so nobody reads a UTC time as their own. Pages
whose times this filter does not write (the admin's) say it once: `{% zone_unnamed as zone %}`.
"""

from __future__ import annotations

from datetime import date, datetime

from django import template
from django.template import Context
from django.utils import formats, timezone

from accounts.timezones import COOKIE_NAME, zone_named

register = template.Library()


@register.filter
def local_time(value: datetime | date | None, format_string: str) -> str:
    if not value:
        return ""
    if not (isinstance(value, datetime) and timezone.is_aware(value)):
        return formats.date_format(value, format_string)  # (a day, or a time of no zone: nothing to convert)
    text = formats.date_format(timezone.localtime(value), format_string)
    default = timezone.get_default_timezone_name()
    return f"{text} {default}" if timezone.get_current_timezone_name() == default else text


@register.simple_tag(takes_context=True)
def zone_unnamed(context: Context) -> str:
    """The site's zone ("UTC") while the reader's browser has not named its own in the `tz` cookie (a first
    page, a name not known), so times are shown in the site's; else ""."""
    request = context.get("request")
    if request is not None and zone_named(request.COOKIES.get(COOKIE_NAME)) is not None:
        return ""
    return timezone.get_default_timezone_name()
