"""A blog's description, what it is about: set by its owner on Settings and New blog (`blogs.clean_description`),
shown, escaped and never as markdown, on its public index (and as its meta description), as its feed's
subtitle, on the cards of the blogs to read (front page and home) and in its page's header for members."""

from __future__ import annotations

import io
import zipfile
from html import unescape
from xml.etree import ElementTree

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog import blogs
from blog.models import Blog
from tests.blog.conftest import browser, make_post
from tests.blog.test_reading import ATOM, meta

pytestmark = pytest.mark.django_db

SETTINGS = "/blogs/notes/settings/"
HOSTILE = 'Walks & <script>alert(1)</script> **not bold** <b onmouseover="x()">"quoted"</b>'
FALLBACK = "Posts published on Notes."


def text(response) -> str:
    """The page as its reader reads it (the template escapes `'` as `&#x27;`)."""
    return unescape(response.content.decode())


def describe(team, description: str, title: str = "Notes"):
    return browser(team.owner).post(SETTINGS, {"title": title, "description": description})


def described(team) -> str:
    return Blog.objects.get(pk=team.blog.pk).description


def feed_subtitle(client=None) -> str | None:
    feed = ElementTree.fromstring((client or browser()).get("/read/notes/feed/").content)
    subtitle = feed.find(f"{ATOM}subtitle")
    return None if subtitle is None else subtitle.text


# --- Setting it ----------------------------------------------------------------------------------------


def test_the_owner_sets_the_description_trimmed_to_one_paragraph(team):
    client = browser(team.owner)
    page = client.get(SETTINGS).content.decode()
    assert 'name="description"' in page and 'id="blog-description"' in page
    response = client.post(
        SETTINGS, {"title": "Notes", "description": "  Notes from long\r\n walks,\tnear   the coast.  "}
    )
    assert response.status_code == 302 and response["Location"] == SETTINGS
    assert described(team) == "Notes from long walks, near the coast."
    page = client.get(SETTINGS)
    assert "Saved the description." in text(page)
    assert ">Notes from long walks, near the coast.</textarea>" in text(page)


def test_saving_says_what_changed(team):
    client = browser(team.owner)
    client.post(SETTINGS, {"title": "Renamed", "description": ""})
    assert "Saved the title." in text(client.get(SETTINGS))
    client.post(SETTINGS, {"title": "Notes", "description": "About walks."})
    assert "Saved the title and the description." in text(client.get(SETTINGS))


def test_an_empty_description_clears_it(team):
    describe(team, "About walks.")
    assert describe(team, "   \n  ").status_code == 302
    assert described(team) == ""


def test_a_form_without_the_field_leaves_the_description_as_it_is(team):
    """A Settings page opened before the field existed posts only the title: that is no clearing."""
    describe(team, "About walks.")
    assert browser(team.owner).post(SETTINGS, {"title": "Renamed"}).status_code == 302
    team.blog.refresh_from_db()
    assert (team.blog.title, team.blog.description) == ("Renamed", "About walks.")


def test_at_most_300_characters(team):
    assert describe(team, "a" * 300).status_code == 302
    assert described(team) == "a" * 300
    response = describe(team, "b" * 301, title="Not saved either")
    assert response.status_code == 400
    page = text(response)
    assert "A blog's description can be at most 300 characters." in page
    assert 'aria-describedby="blog-description-hint description-error" aria-invalid="true"' in page
    assert 'id="description-error" role="alert"' in page
    assert f">{'b' * 301}</textarea>" in page  # what was typed, kept
    assert 'value="Not saved either"' in page
    team.blog.refresh_from_db()
    assert (team.blog.title, team.blog.description) == ("Notes", "a" * 300)  # nothing saved


def test_a_refused_title_keeps_the_typed_description_and_saves_neither(team):
    response = describe(team, "About walks.", title="  ")
    assert response.status_code == 400
    page = text(response)
    assert "Give the blog a title." in page and ">About walks.</textarea>" in page
    assert "description-error" not in page
    assert described(team) == ""


def test_nul_and_control_characters_are_removed():
    assert blogs.clean_description("Wal\x00ks\x07 and\x1b[31m\x7f notes\u0085 here") == "Walks and[31m notes here"
    assert blogs.clean_description("\x00\x01 \u200b ") == ""  # nothing but controls and spaces: none
    assert blogs.clean_description("Cafe\u0301 👩🏽‍🌾") == "Café 👩🏽‍🌾"  # composed (NFC); ZWJ and skin tone kept


def test_nul_and_control_characters_posted_are_not_stored_nor_break_the_feed(team):
    """XML 1.0 holds no control character: one kept would make the feed a 500 (Django refuses to write it)."""
    make_post(team.blog, "Live", published=True)
    assert describe(team, "Walks\x00 by\x07 the sea\x1b").status_code == 302
    assert described(team) == "Walks by the sea"
    assert feed_subtitle() == "Walks by the sea"


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_only_the_owner_sets_it(team, role):
    response = browser(team.user(role)).post(SETTINGS, {"title": "Notes", "description": "Taken over"})
    assert response.status_code == 404
    assert described(team) == ""


def test_setting_it_needs_the_csrf_token(team):
    forged = browser(team.owner, csrf=True)
    assert forged.post(SETTINGS, {"title": "Notes", "description": "Forged"}).status_code == 403
    assert described(team) == ""


def test_a_new_blog_may_say_what_it_is_about(django_user_model):
    person = django_user_model.objects.create_user("starter", password="pw-starter-12345")
    client = browser(person)
    assert 'name="description"' in client.get("/blogs/new/").content.decode()
    response = client.post("/blogs/new/", {"title": "Herons", "slug": "", "description": " Birds\nof the marsh. "})
    assert response.status_code == 302
    assert Blog.objects.get(slug="herons").description == "Birds of the marsh."
    assert client.post("/blogs/new/", {"title": "Egrets", "slug": ""}).status_code == 302
    assert Blog.objects.get(slug="egrets").description == ""  # (optional)
    refused = client.post("/blogs/new/", {"title": "Storks", "slug": "", "description": "c" * 301})
    assert refused.status_code == 400
    page = text(refused)
    assert "A blog's description can be at most 300 characters." in page and f">{'c' * 301}</textarea>" in page
    assert 'value="Storks"' in page and 'id="blog-new-error"' in page
    assert not Blog.objects.filter(title="Storks").exists()


def test_the_admins_blog_form_shows_it(team, auditor):
    assert 'name="description"' in auditor.get(f"/admin/blog/blog/{team.blog.pk}/change/").content.decode()


# --- Where it is shown -----------------------------------------------------------------------------------


def test_shown_escaped_and_never_as_markdown_everywhere(team):
    make_post(team.blog, "Live", published=True)
    describe(team, HOSTILE)
    assert described(team) == HOSTILE
    escaped = (
        "Walks &amp; &lt;script&gt;alert(1)&lt;/script&gt; **not bold** "
        "&lt;b onmouseover=&quot;x()&quot;&gt;&quot;quoted&quot;&lt;/b&gt;"
    )

    index = browser().get("/read/notes/").content.decode()
    assert f'<p class="lede blog-about" dir="auto">{escaped}</p>' in index  # under the title
    assert index.index("<h1>Notes</h1>") < index.index('class="lede blog-about"')
    assert meta(index)["description"] == HOSTILE
    assert feed_subtitle() == HOSTILE

    for client in (browser(), browser(team.viewer)):  # the front page, a member's home
        home = client.get("/").content.decode()
        assert f'<p class="blog-about" dir="auto">{escaped}</p>' in home

    for role in ("owner", "viewer"):  # the blog's page, for its members
        members = browser(team.user(role)).get("/blogs/notes/").content.decode()
        assert f'<p class="meta blog-about" dir="auto">{escaped}</p>' in members

    for page in (index, home, members):
        assert "<script>alert(1)" not in page and "<b onmouseover" not in page and "<strong>not bold" not in page


def test_without_one_the_pages_say_what_they_said(team):
    make_post(team.blog, "Live", published=True)
    index = browser().get("/read/notes/").content.decode()
    assert meta(index)["description"] == FALLBACK
    assert feed_subtitle() == FALLBACK.rstrip(".")
    assert "blog-about" not in index
    assert "blog-about" not in browser().get("/").content.decode()
    assert "blog-about" not in browser(team.owner).get("/blogs/notes/").content.decode()


def test_the_cards_shorten_a_long_one_the_index_shows_it_whole(team):
    make_post(team.blog, "Live", published=True)
    long = " ".join(["heron"] * 50)[:300]
    describe(team, long)
    card = browser().get("/").content.decode()
    shown = card.split('<p class="blog-about" dir="auto">')[1].split("</p>")[0]
    assert shown.endswith("…") and len(shown) <= blogs.DESCRIPTION_SHOWN and long.startswith(shown[:-1])
    assert f">{long}</p>" in browser().get("/read/notes/").content.decode()


def test_the_export_readme_names_it(team):
    describe(team, "About walks.")
    response = browser(team.owner).get("/blogs/notes/export/")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert "Description: About walks.\n" in archive.read("README.txt").decode()


def test_the_front_page_and_the_public_index_read_no_more_for_it(team, other_team):
    """Read with the blog's row, as its title is: signed out, `/` counts the public blogs and reads a page
    of them (2), and a blog's index reads the blog, counts its posts and reads a page of them (3)."""
    make_post(team.blog, "Live", published=True)
    make_post(other_team.blog, "Live too", published=True)
    describe(team, "About walks.")
    client = browser()
    for url, queries in (("/", 2), ("/read/notes/", 3)):
        client.get(url)
        with CaptureQueriesContext(connection) as seen:
            assert "About walks." in client.get(url).content.decode()
        assert len(seen.captured_queries) == queries, url
