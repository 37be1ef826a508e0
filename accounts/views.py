"""Sign-in with a limit on failed attempts per username (in the database, so it holds across workers).

Counted per username and address: a stranger guessing at someone's username locks out only their own
address, not the person. Failures from every address together meet a limit `FROM_ANYWHERE` times
higher, so guessing spread over many addresses is slowed as well. Behind a proxy the address is
the client's, as the proxy names it (`config.middleware.ClientAddressMiddleware`).
"""

from __future__ import annotations

import math
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.db.models import Count, Min, Q
from django.utils import timezone

from accounts.models import FailedLogin

WINDOW = timedelta(minutes=15)
#: How many times LOGIN_FAILURES_PER_15_MINUTES a username may fail from all addresses together.
FROM_ANYWHERE = 10


def attempted_username(request) -> str:
    """The username a sign-in attempt names, as failures are counted under it.

    Normalised as Django's `UsernameField` normalises it before authenticating (NFKC), so `ｄａｖｅ`
    and `𝐝ave`, which sign in as `dave`, count as `dave`; then case-folded, so case never opens a
    fresh counter either.
    """
    typed = request.POST.get("username") or ""
    return unicodedata.normalize("NFKC", typed).strip().casefold()[:150]


def address(request) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def seconds_locked(username: str, ip: str | None) -> int:
    """Seconds until `username` may try again from `ip`; 0 when it may now."""
    limit = settings.LOGIN_FAILURES_PER_15_MINUTES
    if not limit or not username:
        return 0
    since = timezone.now() - WINDOW
    recent = FailedLogin.objects.filter(username=username, created_at__gte=since)
    failures = recent.aggregate(everywhere=Count("pk"), here=Count("pk", filter=Q(ip=ip)))
    if failures["here"] >= limit:
        recent = recent.filter(ip=ip)
    elif failures["everywhere"] < limit * FROM_ANYWHERE:
        return 0
    oldest = recent.aggregate(m=Min("created_at"))["m"]
    return max(1, math.ceil((oldest + WINDOW - timezone.now()).total_seconds()))


def locked_message(wait: int) -> str:
    minutes = math.ceil(wait / 60)
    return f"Too many failed attempts for this username. Try again in {minutes} minute{'s' if minutes != 1 else ''}."


def unchecked_form(form_class, request, error: str | None = None):
    """The sign-in form as typed, never validated (validating it would check the password)."""
    form = form_class(request, initial={"username": request.POST.get("username", "")[:150]})
    if error:
        form.cleaned_data = {}  # an unbound form's errors start empty: adding one validates nothing
        form.add_error(None, error)
    return form


def record_failure(request) -> None:
    """Count a failed sign-in for its username, and forget failures too old to matter."""
    username = attempted_username(request)
    if not username:
        return
    now = timezone.now()
    FailedLogin.objects.create(username=username, ip=address(request), created_at=now)
    FailedLogin.objects.filter(created_at__lt=now - WINDOW).delete()  # indexed; keeps the table small


class ThrottledLoginView(LoginView):
    """Django's LoginView; after too many failures for a username it refuses without checking the password."""

    def post(self, request, *args, **kwargs):
        wait = seconds_locked(attempted_username(request), address(request))
        if wait:
            form = unchecked_form(self.get_form_class(), request)
            return self.render_to_response(self.get_context_data(form=form, locked=locked_message(wait)), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        record_failure(self.request)
        return super().form_invalid(form)
