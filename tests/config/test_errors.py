"""A request that fails: the person gets a calm answer with a reference, the operator's log the same
reference before the traceback; the JSON API answers JSON (`config/errors.py`)."""

from __future__ import annotations

import logging
import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def failing(api, monkeypatch):
    """Opening a chat fails inside the view, as a bug or a lost database would make it."""

    def fail(user, data):
        raise RuntimeError("the chat could not be opened")

    monkeypatch.setattr("agent.views.intake.open_session", fail)
    api.client.raise_request_exception = False
    return api


def reference_in_log(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.name == "config.errors"]
    assert len(lines) == 1 and lines[0].startswith("request failed, reference "), lines
    return re.search(r"reference ([0-9a-f]{12})", lines[0])[1]


def test_a_failed_api_request_answers_json_with_the_reference_the_log_has(failing, caplog):
    with caplog.at_level(logging.ERROR):
        response = failing.post("/api/agent/sessions", {"blog": "any"})
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    reference = reference_in_log(caplog)
    assert response.json() == {
        "error": {
            "code": "server_error",
            "message": f"Something went wrong on our side. Please try again in a moment (reference {reference}).",
        }
    }
    assert "the chat could not be opened" not in response.content.decode()
    traceback = [r for r in caplog.records if r.name == "django.request"]
    assert traceback and traceback[0].exc_info[1].args == ("the chat could not be opened",)
    assert "POST /api/agent/sessions" in caplog.text


def test_a_failed_page_shows_the_reference_the_log_has(api, monkeypatch, caplog):
    def fail(view, request, *args, **kwargs):
        raise RuntimeError("the page could not be drawn")

    monkeypatch.setattr("django.contrib.auth.views.LoginView.get", fail)
    api.client.raise_request_exception = False
    with caplog.at_level(logging.ERROR):
        response = api.get("/accounts/login/")
    assert response.status_code == 500
    reference = reference_in_log(caplog)
    assert f"Reference: <code>{reference}</code>" in response.content.decode()
    assert "the page could not be drawn" not in response.content.decode()


def test_an_api_request_django_refuses_to_read_answers_json(api, settings):
    """A form-encoded body (what `curl -d` sends) over DATA_UPLOAD_MAX_MEMORY_SIZE is refused by Django
    before any view, as the CSRF check reads the form: `handler400`, JSON for the API."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.client.post(
        "/api/agent/sessions",
        data=b"blog=" + b"a" * 2000,
        content_type="application/x-www-form-urlencoded",
        HTTP_X_CSRFTOKEN=api.csrf,
    )
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": "too_large", "message": "That request is too large to read."}}


def test_a_page_request_django_refuses_to_read_stays_a_page(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.client.post(
        "/accounts/login/", data=b"username=" + b"a" * 2000, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


CSRF_FAILED = (
    "The request's security token is missing or stale. In a browser, reload the page; a script sends "
    "the csrftoken cookie's value in an X-CSRFToken header, and over HTTPS a Referer of this site."
)


@pytest.mark.parametrize("secure", [False, True], ids=["no-token", "https-no-referer"])
def test_a_failed_csrf_check_on_the_api_tells_a_script_what_to_send(api, secure):
    headers = {"HTTP_X_CSRFTOKEN": api.csrf} if secure else {}
    response = api.client.post(
        "/api/agent/sessions", data=b'{"blog": "x"}', content_type="application/json", secure=secure, **headers
    )
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": "csrf_failed", "message": CSRF_FAILED}}


def test_a_stale_form_on_a_page_says_what_happened_and_the_way_on():
    """A form sent with an outdated security token (signed in again in another tab since the page was
    opened, say) got Django's bare "Forbidden (403) CSRF verification failed. Request aborted." page;
    the site's page says what to do and leads on (`templates/403_csrf.html`)."""
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "a", "password": "b"})
    page = response.content.decode()
    assert response.status_code == 403
    assert "<h1>That form was out of date</h1>" in page
    assert (
        "This page was opened before your session last changed (you signed in or out, here or in another tab), "
        "so what you sent was not saved. Go back, reload the page, and send it again."
    ) in page
    assert 'class="brand"' in page and '<a href="/">Go to the front page</a>' in page
    assert "CSRF verification failed" not in page and "Request aborted" not in page
