"""The sign-in page says why a person is there when a page sent them to it."""

from __future__ import annotations

from urllib.parse import urlencode

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


OFF_SITE = [
    "//evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "https:evil.example",
    "https:/evil.example",
    "http://evil.example",
    "///evil.example",
    "/\t/evil.example",
    " //evil.example",
    "//testserver@evil.example",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("where", OFF_SITE)
def test_signing_in_or_out_never_sends_the_person_off_the_site(django_user_model, where):
    """Guard: `next=` in the sign-in page's address or form, and on signing out, is followed only to a
    page of this site (Django's own check); anything else goes to the default page. (What only reads as
    off-site once decoded, `%2F%2Fevil.example` or `/%5Cevil.example`, is a path here and stays one.)"""
    django_user_model.objects.create_user("alice", password="right-pass-123")
    signed_in = {"username": "alice", "password": "right-pass-123"}
    client = Client()
    in_address = client.post("/accounts/login/?" + urlencode({"next": where}), signed_in)
    in_form = client.post("/accounts/login/", {**signed_in, "next": where})
    page = client.get("/accounts/login/", {"next": where}).content.decode()
    out = client.post("/accounts/logout/?" + urlencode({"next": where}))

    assert (in_address["Location"], in_form["Location"], out["Location"]) == ("/", "/", "/accounts/login/")
    assert 'name="next" value=""' in page


def test_an_htmx_request_signed_out_goes_back_only_to_a_page_of_this_site():
    """Guard: the sign-in redirect of a fragment (`SignInAsAPageMiddleware`) takes the page to return
    to from `HX-Current-URL` only when it is this site's; another origin's is never named."""
    fragment = {"HTTP_HX_REQUEST": "true"}
    ours = Client().get("/blogs/notes/posts/", HTTP_HX_CURRENT_URL="http://testserver/blogs/notes/", **fragment)
    theirs = Client().get("/blogs/notes/posts/", HTTP_HX_CURRENT_URL="http://evil.example/x", **fragment)
    assert ours["HX-Redirect"] == "/accounts/login/?next=%2Fblogs%2Fnotes%2F"
    assert theirs["HX-Redirect"] == "/accounts/login/?next=%2F"
