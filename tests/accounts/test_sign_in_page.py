"""The sign-in page says why a person is there when a page sent them to it."""

from __future__ import annotations

import pytest
from django.test import Client

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
