"""A wait in words for the chat: "36 s", "30 min", "5 h", "12 days" (static/js/chat/waits.js counts it
down in the same words)."""

from __future__ import annotations

import math

from django import template

register = template.Library()


@register.filter
def wait(seconds: int) -> str:
    """`{{ 1800|wait }}` → "30 min": seconds up to a minute and a half, then minutes, hours, days,
    each rounded up (a wait is never said shorter than it is). A month's limit is not "2592000 s"."""
    seconds = int(seconds)
    if seconds <= 90:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{math.ceil(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{math.ceil(seconds / 3600)} h"
    return f"{math.ceil(seconds / 86400)} days"
