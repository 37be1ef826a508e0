"""Sign-in with a limit on failed attempts per username (in the database, so it holds across workers)."""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.db.models import Min
from django.utils import timezone

from accounts.models import FailedLogin

WINDOW = timedelta(minutes=15)


def _username(request) -> str:
    return (request.POST.get("username") or "").strip().lower()[:150]


def seconds_locked(username: str) -> int:
    """Seconds until `username` may try again; 0 when it may now."""
    limit = settings.LOGIN_FAILURES_PER_15_MINUTES
    if not limit or not username:
        return 0
    since = timezone.now() - WINDOW
    recent = FailedLogin.objects.filter(username=username, created_at__gte=since)
    if recent.count() < limit:
        return 0
    oldest = recent.aggregate(m=Min("created_at"))["m"]
    return max(1, math.ceil((oldest + WINDOW - timezone.now()).total_seconds()))


class ThrottledLoginView(LoginView):
    """Django's LoginView; after too many failures for a username it refuses without checking the password."""

    def post(self, request, *args, **kwargs):
        wait = seconds_locked(_username(request))
        if wait:
            form = self.get_form()
            form.errors.clear()
            minutes = math.ceil(wait / 60)
            return self.render_to_response(self.get_context_data(form=form, locked_minutes=minutes), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        username = _username(self.request)
        if username:
            FailedLogin.objects.create(username=username, ip=self.request.META.get("REMOTE_ADDR"),
                                       created_at=timezone.now())
        return super().form_invalid(form)
