"""A page fragment (an htmx request) asked for once the session has ended: sign in as a whole page."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.blog.conftest import make_post

pytestmark = pytest.mark.django_db
PAGE = "http://testserver/blogs/notes/?chat=1234"


def test_a_fragment_asked_for_when_signed_out_sends_the_page_to_sign_in(team):
    post = make_post(team.blog, "A draft")
    response = Client().post(f"/blogs/notes/posts/{post.pk}/publish/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=PAGE)
    assert response.status_code == 200 and response.content == b""  # nothing to swap into the post list
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fblogs%2Fnotes%2F%3Fchat%3D1234"
    post.refresh_from_db()
    assert post.status == "draft"


def test_a_whole_page_and_a_signed_in_fragment_are_answered_as_before(team):
    page = Client().get("/blogs/notes/")
    assert page.status_code == 302 and page["Location"] == "/accounts/login/?next=/blogs/notes/"
    client = Client()
    client.force_login(team.owner)
    fragment = client.get("/blogs/notes/posts/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=PAGE)
    assert fragment.status_code == 200 and "HX-Redirect" not in fragment
