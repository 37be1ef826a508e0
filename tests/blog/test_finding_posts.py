"""Finding a post: the All posts page's search by a title's words and by status, and the one title match
it shares with the assistant's `list_posts`."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog import grants, operations, services
from blog.models import Post
from tests.blog.conftest import browser, make_post

pytestmark = pytest.mark.django_db

ALL = "/blogs/notes/posts/all/"


def titles(html: str) -> list[str]:
    """The titles the page lists, in order."""
    return [unescape(t) for t in re.findall(r'<li><a dir="auto" href="[^"]*">([^<]*)</a>', html)]


def summary(html: str) -> str:
    """The sentence that says what the page shows, as read (tags and entities gone)."""
    found = re.search(r'id="search-summary">(.*?)</p>', html, re.S)
    assert found, "no summary"
    return unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def box(html: str) -> str:
    """What the page's "Title contains" box holds."""
    return unescape(re.search(r'<input type="search" id="search-q" name="q"[^>]*value="([^"]*)"', html).group(1))


def page(user, query: str = "") -> str:
    response = browser(user).get(ALL + query)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def birds(team):
    """Posts of several titles and both states, the most recently changed last made."""
    make_post(team.blog, "Counting swifts")
    make_post(team.blog, "Grey HERON at dawn", published=True)
    make_post(team.blog, "Ärger am Fluss")
    make_post(team.blog, "Herons and egrets")
    make_post(team.blog, "Kein ÄRGER mit Reihern", published=True)
    return team


def test_the_page_and_the_assistant_match_titles_alike(birds):
    """One match for both (`services.posts_title_contains`): what the tool lists, the page lists."""
    actor = grants.person(birds.owner, birds.blog)
    for query in ("heron", "HERON", "ärger", "ÄRGER", "A\u0308rger", "Fluss", "nothing"):
        listed = [p["title"] for p in operations.perform_json("list_posts", actor, birds.blog, {"query": query})[0]]
        shared = list(services.posts_title_contains(Post.objects.filter(blog=birds.blog), query))
        assert [p.title for p in shared] == listed, query
        assert titles(page(birds.owner, f"?q={query}")) == listed, query


def test_a_member_finds_posts_by_words_of_their_title_in_any_case(birds):
    html = page(birds.editor, "?q=heron")
    assert titles(html) == ["Herons and egrets", "Grey HERON at dawn"]
    assert summary(html) == "2 posts match “heron”, the most recently changed first. Clear the search"
    assert box(html) == "heron"
    assert '<a href="/blogs/notes/posts/all/">Clear the search</a>' in html
    assert "<title>“heron” · All posts · Notes · Field Desk</title>" in html


@pytest.mark.parametrize("query", ["ärger", "ÄRGER", "A%CC%88rger"])  # (the last: Ä typed as A + a combining mark)
def test_a_search_in_letters_beyond_ascii_ignores_their_case(birds, query):
    html = page(birds.owner, f"?q={query}")
    assert titles(html) == ["Kein ÄRGER mit Reihern", "Ärger am Fluss"]
    assert summary(html).startswith("2 posts match “")


def test_the_status_filter_narrows_the_list_alone_or_with_words(birds):
    assert titles(page(birds.owner, "?status=published")) == ["Kein ÄRGER mit Reihern", "Grey HERON at dawn"]
    html = page(birds.owner, "?q=heron&status=draft")
    assert titles(html) == ["Herons and egrets"]
    assert summary(html) == "1 draft matches “heron”, the most recently changed first. Clear the search"
    assert '<option value="draft" selected>Draft</option>' in html
    html = page(birds.owner, "?q=ärger&status=published")
    assert summary(html) == "1 published post matches “ärger”, the most recently changed first. Clear the search"
    assert summary(page(birds.owner, "?status=draft")).startswith("3 drafts, the most recently changed first.")


def test_a_search_that_finds_nothing_says_so_and_offers_to_clear_it(birds):
    html = page(birds.owner, "?q=kingfisher&status=published")
    assert titles(html) == []
    assert summary(html) == "No published posts match “kingfisher”. Clear the search"
    assert box(html) == "kingfisher" and "No posts yet." not in html


def test_the_pages_of_a_search_keep_it(birds, monkeypatch):
    from blog import views

    monkeypatch.setattr(views, "ALL_POSTS_PER_PAGE", 2)
    for n in range(3):
        make_post(birds.blog, f"Heron notes {n}")
    first = page(birds.viewer, "?q=heron&status=draft")
    assert titles(first) == ["Heron notes 2", "Heron notes 1"]
    assert 'href="?q=heron&amp;status=draft&amp;page=2"' in first
    assert summary(first).startswith("4 drafts match “heron”")
    last = page(birds.viewer, "?q=heron&status=draft&page=2")
    assert titles(last) == ["Heron notes 0", "Herons and egrets"]
    assert 'href="?q=heron&amp;status=draft&amp;page=1"' in last and box(last) == "heron"
    # A page past the last shows the last; one that is not a number, the first.
    assert titles(page(birds.viewer, "?q=heron&status=draft&page=99")) == titles(last)
    assert titles(page(birds.viewer, "?q=heron&status=draft&page=x")) == titles(first)


def test_words_with_signs_are_kept_on_every_page(team, monkeypatch):
    from blog import views

    monkeypatch.setattr(views, "ALL_POSTS_PER_PAGE", 1)
    make_post(team.blog, "Tea & toast")
    make_post(team.blog, "More tea & toast")
    html = page(team.owner, "?q=tea+%26+toast")
    assert 'href="?q=tea+%26+toast&amp;page=2"' in html
    assert titles(page(team.owner, "?q=tea+%26+toast&page=2")) == ["Tea & toast"]


def test_only_members_search_as_only_they_see_the_page(birds, other_team):
    for member in (birds.owner, birds.viewer):  # a viewer searches too
        assert titles(page(member, "?q=heron&status=published")) == ["Grey HERON at dawn"]
    assert browser(birds.outsider).get(ALL + "?q=heron").status_code == 404
    assert browser(other_team.owner).get(ALL + "?q=heron").status_code == 404
    signed_out = browser().get(ALL + "?q=heron")
    assert signed_out.status_code == 302 and signed_out["Location"].startswith("/accounts/login/?next=")


def test_a_status_it_does_not_know_searches_every_status_and_says_so(birds):
    html = page(birds.owner, "?q=heron&status=archived")
    assert titles(html) == ["Herons and egrets", "Grey HERON at dawn"]
    assert "There is no status “archived”, so this is a search of every status." in unescape(html)
    assert box(html) == "heron" and '<option value="" selected>All</option>' in html


def test_a_search_longer_than_any_title_is_refused_with_the_words_kept(birds):
    words = "heron " * 40  # 240 characters
    html = page(birds.owner, f"?q={words}")
    assert titles(html) == []
    assert "A title is at most 200 characters, and this search has 240: shorten it to search." in html
    assert box(html) == words and 'aria-invalid="true"' in html
    assert 'maxlength="200"' in html
    assert summary(page(birds.owner, "?q=" + "h" * 200)) == "No posts match “" + "h" * 200 + "”. Clear the search"


def test_what_was_typed_is_escaped_everywhere_it_is_shown(birds):
    typed = '"><script>alert(1)</script>'
    response = browser(birds.owner).get(ALL, {"q": typed, "status": "<b>x</b>"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert(1)" not in html and "<b>x</b>" not in html
    assert box(html) == typed and summary(html).startswith(f"No posts match “{typed}”")


def test_a_nul_in_the_words_is_read_as_a_title_keeps_it_never_a_failure(team):
    """PostgreSQL's parameters cannot hold NUL; a title's NUL is kept as U+FFFD (`clean_title`)."""
    services.post_create(blog=team.blog, actor=grants.person(team.owner, team.blog), title="a\x00b", body="")
    assert titles(page(team.owner, "?q=a%00b")) == ["a\ufffdb"]


def test_a_search_reads_one_count_and_one_page_whatever_it_finds(team):
    for n in range(30):
        make_post(team.blog, f"Héron {n}", published=n % 2 == 0)
    client = browser(team.owner)
    client.get(ALL)  # (the session's first read)

    def queries(query: str) -> int:
        with CaptureQueriesContext(connection) as seen:
            assert client.get(ALL + query).status_code == 200
        return len(seen)

    plain = queries("")
    assert queries("?q=ron&status=published") == plain  # one COUNT and one page, as without a search
    assert queries("?q=h%C3%A9ron") == plain + 1  # beyond ASCII: the titles are read once, then matched here
    make_post(team.blog, "One more héron")
    assert queries("?q=ron") == plain  # no query per post
    assert queries("?q=h%C3%A9ron") == plain + 1


def test_a_search_beyond_ascii_says_when_it_found_as_many_as_it_keeps(team):
    Post.objects.bulk_create(
        Post(blog=team.blog, author=team.owner, title=f"Ärger {n}", slug=f"a-{n}", body="")
        for n in range(services.TITLE_MATCHES_MAX + 5)
    )
    html = page(team.owner, "?q=ärger")
    assert len(titles(html)) == services.TITLE_MATCHES_MAX
    assert summary(html).startswith(f"{services.TITLE_MATCHES_MAX} posts match “ärger”")
    assert "A search with letters beyond A to Z finds at most the 100 most recently changed posts" in html
    assert "letters beyond A to Z" not in page(team.owner, "?q=rger")  # (the database matched it: every one)
