"""The editor's live preview: the same markdown and sanitiser as the public page, for members who write."""

from __future__ import annotations

import pytest

from blog.views import PREVIEW_MAX_CHARS
from tests.blog.conftest import browser
from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db

URL = "/blogs/notes/posts/preview/"


def test_preview_renders_markdown_like_the_public_page(team):
    response = browser(team.author).post(URL, {"body": "Some **bold**.\n\n[a link](https://example.com/)"})
    html = response.content.decode()
    assert response.status_code == 200
    assert '<div class="md">' in html and "<strong>bold</strong>" in html
    assert ("a", {"href": "https://example.com/", "rel": "noopener noreferrer nofollow"}) in tags_of(html)


def test_hostile_markdown_stays_inert_in_the_preview(team):
    body = "<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))"
    html = browser(team.owner).post(URL, {"body": body}).content.decode()
    tags = tags_of(html)
    assert [t for t, _ in tags] == ["div", "p"]
    assert "&lt;script&gt;" in html


def test_an_empty_body_and_an_oversize_one_say_so(team):
    assert "appears here as you write" in browser(team.owner).post(URL, {"body": ""}).content.decode()
    html = browser(team.owner).post(URL, {"body": "x" * (PREVIEW_MAX_CHARS + 1)}).content.decode()
    assert "too long to preview" in html


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_preview_is_for_members_who_write(team, role):
    assert browser(team.user(role)).post(URL, {"body": "hi"}).status_code == 404


def test_preview_needs_sign_in_csrf_and_post(team):
    assert browser().post(URL, {"body": "hi"}).status_code == 302
    assert browser(team.owner, csrf=True).post(URL, {"body": "hi"}).status_code == 403
    assert browser(team.owner).get(URL).status_code == 405


def test_the_editor_says_what_saving_will_do(team):
    from tests.blog.conftest import make_post

    draft, live = make_post(team.blog, "Draft"), make_post(team.blog, "Live", published=True)
    client = browser(team.owner)
    assert "saving keeps it private" in client.get(f"/blogs/notes/posts/{draft.pk}/edit/").content.decode()
    html = client.get(f"/blogs/notes/posts/{live.pk}/edit/").content.decode()
    assert "This post is live" in html and f'href="/read/notes/{live.slug}/"' in html
    assert "Creating saves a private draft" in client.get("/blogs/notes/posts/new/").content.decode()
