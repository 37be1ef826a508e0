"""Error answers that stay calm and, for the JSON API, stay JSON."""

from __future__ import annotations

import logging
import uuid

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views.csrf import csrf_failure as django_csrf_failure

logger = logging.getLogger("config.errors")


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


def server_error(request: HttpRequest) -> HttpResponse:
    """A request that failed (`handler500`): the person gets a reference to quote, which the log line
    before the failure's traceback (django.request's) carries too; the API's answer stays JSON.

    Nothing of the request's own is read (not its user): whatever failed may fail again here.
    """
    reference = uuid.uuid4().hex[:12]
    logger.error("request failed, reference %s: %s %s", reference, request.method, request.path)
    if request.path.startswith("/api/"):
        message = f"Something went wrong on our side. Please try again in a moment (reference {reference})."
        return JsonResponse({"error": {"code": "server_error", "message": message}}, status=500)
    return HttpResponseServerError(loader.get_template("500.html").render({"reference": reference}))
