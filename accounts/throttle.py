"""Guesses at a password, limited per username (in the database, so it holds across workers).

Every form that checks a person's password counts here: the site's sign-in, the admin's, and the
current password of both password change forms (a session someone else got hold of must not be an
unlimited oracle for the password). Counted per username and address (an IPv6 host per /64): a
stranger guessing at someone's username locks out only their own address, not the person. Failures from every address
together meet a limit `FROM_ANYWHERE` times higher, so guessing spread over many addresses is slowed
as well. Behind a proxy the address is the client's, as the proxy names it
(`config.middleware.ClientAddressMiddleware`).

An attempt is written as a failure *before* its password is checked, and the count it is judged by
includes it: under gevent the password is checked on a thread (`config/hashers.py`) while the worker
takes other requests, so a check made first and a failure written after would let a burst of guesses
sent at once all through. A refused attempt is not kept, nor one whose password was right.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone

from accounts.models import FailedLogin
from config.middleware import counted_address

WINDOW = timedelta(minutes=15)
#: How many times LOGIN_FAILURES_PER_15_MINUTES a username may fail from all addresses together.
FROM_ANYWHERE = 10


@dataclass
class Attempt:
    """One guess at `username`'s password from `ip`: `wait` seconds when refused, else its row."""

    username: str
    ip: str | None
    row: FailedLogin | None = None
    wait: int = 0


def counted_username(typed: str) -> str:
    """A username as failures are counted under it.

    Normalised as Django's `UsernameField` normalises it before authenticating (NFKC), so `ｄａｖｅ`
    and `𝐝ave`, which sign in as `dave`, count as `dave`; then case-folded, so case never opens a
    fresh counter either. A NUL, which no username has (Django's form refuses it) and PostgreSQL
    cannot hold, is counted as U+FFFD.
    """
    return unicodedata.normalize("NFKC", typed or "").strip().casefold()[:150].replace("\x00", "\ufffd")


def address(request) -> str | None:
    """The client's address as failures are counted under it: an IPv6 host by its /64, every address
    of which it may take (`config.middleware.counted_address`)."""
    return counted_address(request.META.get("REMOTE_ADDR") or "") or None


def begin(username: str, ip: str | None) -> Attempt:
    """Count a guess about to be checked; refused (`wait` > 0, nothing kept) past the limit."""
    attempt = Attempt(username, ip)
    if not settings.LOGIN_FAILURES_PER_15_MINUTES or not username:
        return attempt
    attempt.row = _written(username, ip)
    attempt.wait = seconds_locked(username, ip)
    if attempt.wait:
        attempt.row.delete()
        attempt.row = None
    return attempt


def succeeded(attempt: Attempt) -> None:
    """The password was right: the guess is no failure."""
    if attempt.row is not None:
        attempt.row.delete()
        attempt.row = None


def failed(attempt: Attempt) -> None:
    """The guess was wrong: it stays counted (and is written now when the limit is off, for the admin)."""
    if attempt.row is None and attempt.username and not attempt.wait:
        attempt.row = _written(attempt.username, attempt.ip)


def _written(username: str, ip: str | None) -> FailedLogin:
    """A failure written now; failures too old to matter are forgotten."""
    now = timezone.now()
    FailedLogin.objects.filter(created_at__lt=now - WINDOW).delete()  # indexed; keeps the table small
    return FailedLogin.objects.create(username=username, ip=ip, created_at=now)


def seconds_locked(username: str, ip: str | None) -> int:
    """Seconds until `username` may try again from `ip`, counting the attempt being made (already
    written); 0 when it may go on."""
    limit = settings.LOGIN_FAILURES_PER_15_MINUTES
    if not limit or not username:
        return 0
    since = timezone.now() - WINDOW
    recent = FailedLogin.objects.filter(username=username, created_at__gte=since)
    failures = recent.aggregate(everywhere=Count("pk"), here=Count("pk", filter=Q(ip=ip)))
    if failures["here"] > limit:
        recent = recent.filter(ip=ip)
    elif failures["everywhere"] <= limit * FROM_ANYWHERE:
        return 0
    oldest = recent.aggregate(m=Min("created_at"))["m"]
    return max(1, math.ceil((oldest + WINDOW - timezone.now()).total_seconds()))


def locked_message(wait: int) -> str:
    minutes = math.ceil(wait / 60)
    return f"Too many failed attempts for this username. Try again in {minutes} minute{'s' if minutes != 1 else ''}."
