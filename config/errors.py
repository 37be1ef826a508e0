"""Error answers that stay calm and, for the JSON API, stay JSON."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as django_csrf_failure


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(
            {
                "error": {
                    "code": "csrf_failed",
                    "message": "Your session's security token is missing or stale. Reload the page and try again.",
                }
            },
            status=403,
        )
    return django_csrf_failure(request, reason=reason)
