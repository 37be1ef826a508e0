"""A stream pass: the stream a request has just handed out opens without reading it all again.

Accepting a message reads the user's session and account, then the chat, and asks the domain's
rules (the policy) whether the user may use it; then it hands out the turn's `stream_url`. Opening
that URL a moment later would read the session, the account and the chat again, on a database
connection of its own, before the first token of every turn. So the URL a checked request hands
out carries a *pass*: "user U may follow turn T of chat S", signed with the site's SECRET_KEY
(`django.core.signing`), bound to the browser's session cookie, good for `PASS_SECONDS`.

A stream opened with a valid pass, while its turn runs in this process, takes who is asking from
the pass and the chat from the running turn, and still asks the policy afresh whether they may read
it (a member removed since reads nothing). Every other stream is checked in full, as any request:
no pass, a pass that is forged, expired, for another turn or shown with another session cookie (a
copied URL), or a turn running on another worker. What the pass skips is only the re-reading of the
session and the account of someone signed in a minute ago; signing out ends the session, and a
stream opened with the pass in that minute can follow only that one answer, as it could have if it
had been opened at once.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core import signing
from django.http import HttpRequest

PASS_SECONDS = 60
SALT = "agent.stream-pass"


def _cookie_digest(request: HttpRequest) -> str | None:
    """A digest of the request's session cookie (never the cookie itself: the pass is readable)."""
    cookie = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    return hashlib.sha256(cookie.encode()).hexdigest()[:32] if cookie else None


def issue(request: HttpRequest, session_id: Any, turn_id: Any) -> str | None:
    """A pass for the request's user to follow the turn; None without a session cookie (other
    clients get the plain URL, checked in full)."""
    digest = _cookie_digest(request)
    if digest is None:
        return None
    value = {"s": str(session_id), "t": str(turn_id), "u": request.user.pk, "c": digest}
    return signing.TimestampSigner(salt=SALT).sign_object(value)


def holder(request: HttpRequest, token: str, session_id: Any, turn_id: Any) -> Any | None:
    """The user id a valid pass for this chat's turn was issued to, presented with the same
    session cookie within `PASS_SECONDS`; else None."""
    try:
        value = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=PASS_SECONDS)
    except (signing.BadSignature, ValueError, TypeError):
        return None
    if not isinstance(value, dict) or value.get("s") != str(session_id) or value.get("t") != str(turn_id):
        return None
    digest = _cookie_digest(request)
    if digest is None or value.get("c") != digest:
        return None
    return value.get("u")
