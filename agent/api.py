"""Small helpers for the JSON API: error bodies, body parsing, the rate limit."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils import timezone

from agent.conf import settings
from agent.models import RateEvent
from agent.values import storable, without_nul

MAX_TEXT = 20_000
# What `storable` has to mend in a JSON body: a NUL or a UTF-16 half spelled as an escape; NUL bytes (a
# body in UTF-16 or UTF-32, which the parser reads too, may hold either unescaped); a UTF-16 half encoded
# as UTF-8 bytes, which the parser reads too (it decodes with "surrogatepass").
UNSTORABLE_SPELLED = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|\x00|\xed[\xa0-\xbf]")


def error(status: int, code: str, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}, **extra}, status=status)


TOO_LARGE = "That request is too large to read."


def api_view(*methods: str) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """Django's `require_http_methods`, answered in the API's error shape: another method gets
    `405 method_not_allowed` (with `Allow`), and a body over `DATA_UPLOAD_MAX_MEMORY_SIZE`, which
    Django refuses to read, `413 too_large` (not Django's HTML 400 page, or its traceback page with
    `DEBUG` on)."""

    def decorator(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.method not in methods:
                response = error(405, "method_not_allowed", f"This URL takes {' or '.join(methods)} only.")
                response["Allow"] = ", ".join(methods)
                return response
            try:
                return view(request, *args, **kwargs)
            except RequestDataTooBig:
                return error(413, "too_large", TOO_LARGE)

        return wrapped

    return decorator


def json_body(request: HttpRequest) -> dict[str, Any] | None:
    """The request's JSON object, or None when the body is not one.

    Python's parser recurses once per nesting level: `[` a thousand times raises RecursionError
    before it is found not to be JSON, so that is a body we cannot read too, not a server error; so
    is a number of more than 4,300 digits, which it refuses to convert (a ValueError, as
    `JSONDecodeError` and `UnicodeDecodeError` are). Its strings and keys keep a NUL as U+FFFD
    (PostgreSQL cannot hold one, nor look one up) and half of a UTF-16 pair alone as U+FFFD too (no
    UTF-8 text holds it: neither database can look it up): `agent.values.storable`, asked only of a body
    that spells one (`UNSTORABLE_SPELLED`).
    """
    raw = request.body or b"{}"
    try:
        body = json.loads(raw)
        if isinstance(body, dict) and UNSTORABLE_SPELLED.search(raw):
            body = storable(body)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def message_text(body: dict[str, Any] | None) -> str | None:
    """The message text when valid: a non-blank string of at most 20,000 characters (code points, a
    line break sent as CR LF counted once: a browser sends a textarea's line breaks so, and its
    `maxlength` counts each once)."""
    text = (body or {}).get("text")
    if not isinstance(text, str) or not text.strip() or len(text) - text.count("\r\n") > MAX_TEXT:
        return None
    # JSON may carry a lone surrogate; a NUL, which PostgreSQL's text columns cannot hold, from a form too
    return without_nul(text.encode("utf-8", "replace").decode("utf-8"))


PAGE_MAX = 200
# ASCII digits alone: int() would also take a sign, spaces, underscores and other scripts' digits
WHOLE_NUMBER = re.compile(r"[0-9]+")
POSITION_MAX = 2**31 - 1  # a message's position is a 32-bit integer column: no position is past it


class Page(NamedTuple):
    after: int  # the messages whose position is greater (-1: from the first)
    limit: int  # at most this many


class BadQuery(Exception):
    """A query parameter out of its shape; its one argument is the sentence to answer."""


def transcript_page(request: HttpRequest) -> Page | None:
    """The page of a transcript that `?after=<position>&limit=<n>` asks for, or None when neither
    is given (the whole transcript). With either, a page is at most `PAGE_MAX` messages. Raises
    `BadQuery` for a value that is not a whole number in range, or a parameter given twice."""
    after = _whole_number(request, "after", "Give after as a message's position, a whole number (0 or more).")
    limit = _whole_number(request, "limit", f"Give limit as a whole number from 1 to {PAGE_MAX}.")
    if after is None and limit is None:
        return None
    if limit is not None and not 1 <= limit <= PAGE_MAX:
        raise BadQuery(f"Give limit as a whole number from 1 to {PAGE_MAX}.")
    return Page(after=-1 if after is None else min(after, POSITION_MAX), limit=PAGE_MAX if limit is None else limit)


def _whole_number(request: HttpRequest, name: str, sentence: str) -> int | None:
    values = request.GET.getlist(name)
    if not values:
        return None
    if len(values) > 1 or not WHOLE_NUMBER.fullmatch(values[0]):
        raise BadQuery(sentence)
    digits = values[0].lstrip("0") or "0"
    return int(digits) if len(digits) <= 12 else POSITION_MAX + 1  # (past any position or limit)


class RateSlot(NamedTuple):
    """One slot of AGENT_MESSAGES_PER_MINUTE a message took: the RateEvent recorded for it (None: no
    limit, so nothing was recorded). What `give_back_rate_slot` undoes, that one and no other."""

    pk: int | None


class RateLimited(Exception):
    """`take_rate_slot` found the minute's slots taken; `wait` is the seconds until one frees."""

    def __init__(self, wait: int) -> None:
        super().__init__(wait)
        self.wait = wait


def take_rate_slot(user: Any) -> RateSlot:
    """Record one accepted message and return its slot; RateLimited when the limit is spent.

    Insert first, then count: racing requests each see the others, so the limit holds.
    """
    limit = settings.AGENT_MESSAGES_PER_MINUTE
    if not limit:
        return RateSlot(None)
    now = timezone.now()
    window = now - timedelta(minutes=1)
    event = RateEvent.objects.create(user=user, created_at=now)
    recent = list(RateEvent.objects.filter(user=user, created_at__gt=window).order_by("created_at", "pk")[: limit + 1])
    if len(recent) <= limit or event.pk in [e.pk for e in recent[:limit]]:
        return RateSlot(event.pk)
    RateEvent.objects.filter(pk=event.pk).delete()
    raise RateLimited(max(1, math.ceil((recent[0].created_at + timedelta(minutes=1) - now).total_seconds())))


def give_back_rate_slot(slot: RateSlot) -> None:
    """Undo `take_rate_slot` for a message refused after it was taken (its files): that slot alone.

    (Not the person's latest: another tab's message may have taken one since.)"""
    if slot.pk is not None:
        RateEvent.objects.filter(pk=slot.pk).delete()
