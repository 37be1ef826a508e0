"""Error answers that stay calm and, for the JSON API, stay JSON."""

from __future__ import annotations

import logging
import uuid

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseServerError
from django.template import loader
from django.views.defaults import bad_request as django_bad_request

from agent.api import TOO_LARGE, error

logger = logging.getLogger("config.errors")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if request.path.startswith("/api/"):
        return error(
            403,
            "csrf_failed",
            "The request's security token is missing or stale. In a browser, reload the page; a script sends the "
            "csrftoken cookie's value in an X-CSRFToken header, and over HTTPS a Referer of this site.",
        )
    # A page's form: the site's page, with the way on (Django's own says "CSRF verification failed").
    return HttpResponseForbidden(loader.render_to_string("403_csrf.html", request=request))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A request Django refused before any view (`handler400`): a form-encoded body over
    DATA_UPLOAD_MAX_MEMORY_SIZE fails as the CSRF check reads the form. The API answers JSON (the
    API's views answer a JSON body too large themselves, `agent.api.api_view`)."""
    if request.path.startswith("/api/"):
        if isinstance(exception, RequestDataTooBig):
            return error(413, "too_large", TOO_LARGE)
        return error(400, "bad_request", "That request could not be read.")
    return django_bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """A request that failed (`handler500`): the person gets a reference to quote, which the log line
    before the failure's traceback (django.request's) carries too; the API's answer stays JSON.

    Nothing of the request's own is read (not its user): whatever failed may fail again here.
    """
    reference = uuid.uuid4().hex[:12]
    logger.error("request failed, reference %s: %s %s", reference, request.method, request.path)
    if request.path.startswith("/api/"):
        message = f"Something went wrong on our side. Please try again in a moment (reference {reference})."
        return error(500, "server_error", message)
    return HttpResponseServerError(loader.get_template("500.html").render({"reference": reference}))
