"""The sign-in page says why a person is there when a page sent them to it."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db

WHY = "That page needs you signed in"


def test_a_page_that_needs_signing_in_sends_the_person_to_sign_in_with_the_reason():
    client = Client()
    response = client.get("/blogs/any-blog/", follow=True)
    assert response.redirect_chain and response.redirect_chain[-1][0].startswith("/accounts/login/?next=")
    page = response.content.decode()
    assert WHY in page and 'role="status"' in page
    assert 'name="next" value="/blogs/any-blog/"' in page  # and back to that page once signed in


def test_the_sign_in_link_shows_no_reason():
    page = Client().get("/accounts/login/").content.decode()
    assert WHY not in page


def test_a_wrong_password_shows_its_own_error_not_the_reason(django_user_model):
    django_user_model.objects.create_user("alice", password="right-pass-123")
    response = Client().post("/accounts/login/", {"username": "alice", "password": "wrong", "next": "/blogs/"})
    page = response.content.decode()
    assert "didn't match" in page and WHY not in page


def test_a_hostile_next_is_never_shown():
    page = Client().get("/accounts/login/", {"next": "<script>alert(1)</script>"}).content.decode()
    assert "<script>alert(1)</script>" not in page


def fields_and_error(page: str) -> tuple[dict, dict, dict]:
    tags = [attrs for tag, attrs in tags_of(page) if tag in ("input", "p")]
    username = next(a for a in tags if a.get("name") == "username")
    password = next(a for a in tags if a.get("name") == "password")
    error = next(a for a in tags if a.get("role") == "alert")
    return username, password, error


def test_a_refused_sign_in_is_said_by_the_fields_it_is_about(django_user_model, settings):
    """The page comes back with focus in Username (autofocus): an alert already on a page as it loads is not
    announced, so the fields are marked invalid and described by the sentence, which is read with them."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 2
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(3):  # wrong twice, then locked
        page = client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).content.decode()
        username, password, error = fields_and_error(page)
        assert error["id"] == "sign-in-error"
        for field in (username, password):
            assert (field.get("aria-invalid"), field.get("aria-describedby")) == ("true", "sign-in-error"), field
    assert "Try again in 15 minutes." in page  # (the last: locked)


def test_a_first_sign_in_page_marks_nothing_invalid():
    username, password = (
        a
        for tag, a in tags_of(Client().get("/accounts/login/").content.decode())
        if tag == "input" and a.get("name") in ("username", "password")
    )
    assert "aria-invalid" not in username and "aria-invalid" not in password
    assert "aria-describedby" not in username and "aria-describedby" not in password


def test_the_sign_in_page_says_what_to_do_about_a_forgotten_password():
    """No reset by mail (no mail is set up): the page says who resets one, rather than leaving a
    person who forgot theirs with nowhere to go."""
    page = Client().get("/accounts/login/").content.decode()
    assert "Forgot your password? Ask the site's administrator to reset it." in page
