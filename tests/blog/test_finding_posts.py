"""Finding a post: the All posts page's search by the words of a title or a text and by status, and the
one match it shares with the assistant's `list_posts`."""

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
    """What the page's "Title or text contains" box holds."""
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


def test_the_page_and_the_assistant_match_alike(birds):
    """One match for both (`services.posts_matching`): what the tool lists, the page lists."""
    actor = grants.person(birds.owner, birds.blog)
    make_post(birds.blog, "Low water", body="The old HERON stood in the weir. Viel Ärger mit dem Wehr.")
    queries = ("heron", "HERON", "ärger", "ÄRGER", "A\u0308rger", "Fluss", "weir", "WEHR", "nothing")
    for query in queries:
        found = operations.perform_json("list_posts", actor, birds.blog, {"query": query})[0]["items"]
        listed = [p["title"] for p in found]
        shared = list(services.posts_matching(Post.objects.filter(blog=birds.blog), query)[0])
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
    assert "A search can be at most 200 characters, and this one has 240: shorten it." in html
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
    assert queries("?q=h%C3%A9ron") == plain + 1  # beyond ASCII: titles and texts are read once, matched here
    make_post(team.blog, "One more héron")
    assert queries("?q=ron") == plain  # no query per post
    assert queries("?q=h%C3%A9ron") == plain + 1


def test_a_search_beyond_ascii_says_when_more_match_than_it_keeps(team):
    """As many as it keeps is all of them: it says nothing then (it did, not knowing whether more matched)."""
    Post.objects.bulk_create(
        Post(blog=team.blog, author=team.owner, title=f"Ärger {n}", slug=f"a-{n}", body="")
        for n in range(services.MATCHES_MAX)
    )
    html = page(team.owner, "?q=ärger")
    assert len(titles(html)) == services.MATCHES_MAX and "letters beyond A to Z" not in html
    make_post(team.blog, "Ärger once more")
    html = page(team.owner, "?q=ärger")
    assert len(titles(html)) == services.MATCHES_MAX
    assert summary(html).startswith(f"{services.MATCHES_MAX} posts match “ärger”")
    assert (
        "A search with letters beyond A to Z finds at most the 100 most recently changed posts; add more words to narrow it."
        in html
    )
    assert "letters beyond A to Z" not in page(team.owner, "?q=rger")  # (the database matched it: every one)


def snippets(html: str) -> dict[str, str]:
    """Each listed post's line of its text around the words (tags gone, the marked words in [brackets])."""
    rows = re.findall(r'<li><a dir="auto" href="[^"]*">([^<]*)</a>(.*?)</li>', html, re.S)
    lines = {}
    for title, rest in rows:
        found = re.search(r'<p class="post-snippet" dir="auto">(.*?)</p>', rest, re.S)
        if found:
            marked = found.group(1).replace("<mark>", "[").replace("</mark>", "]")
            lines[unescape(title)] = unescape(marked)
    return lines


@pytest.fixture
def texts(team):
    """Posts found by the words of their text, not their title."""
    make_post(
        team.blog, "Low water", body="We walked the river at dusk.\n\nThe old HERON stood in the weir, still as a post."
    )
    make_post(team.blog, "Herons in winter", body="Nothing about the weir here.")
    make_post(team.blog, "Am Wehr", body="Viel ÄRGER mit dem Wehr, sagt der Müller.", published=True)
    make_post(team.blog, "Dull title", body="x" * 300 + " the kingfisher flashed past " + "y " * 200)
    return team


def test_a_member_finds_posts_by_the_words_of_their_text_each_with_the_line_that_holds_them(texts):
    html = page(texts.editor, "?q=heron")
    assert titles(html) == ["Herons in winter", "Low water"]
    assert summary(html) == "2 posts match “heron”, the most recently changed first. Clear the search"
    # The line of a text shown where the title does not hold the words: the words as written, marked.
    assert snippets(html) == {
        "Low water": "We walked the river at dusk. The old [HERON] stood in the weir, still as a post."
    }
    assert snippets(page(texts.editor, "?q=weir")) == {
        "Low water": "…at dusk. The old HERON stood in the [weir], still as a post.",  # (from a word's start)
        "Herons in winter": "Nothing about the [weir] here.",
    }


def test_a_long_text_shows_only_the_words_around_the_match(texts):
    line = snippets(page(texts.owner, "?q=kingfisher"))["Dull title"]
    assert line.startswith("…") and line.endswith("…") and "[kingfisher]" in line
    assert len(line) < 130 and "xxxx" not in line  # (cut at a word's edge: the run of x is one word)


def test_words_beyond_ascii_are_found_in_a_text_in_any_case(texts):
    for query in ("ärger", "Ärger", "A%CC%88RGER"):
        html = page(texts.viewer, f"?q={query}")
        assert titles(html) == ["Am Wehr"], query
        assert snippets(html) == {"Am Wehr": "Viel [ÄRGER] mit dem Wehr, sagt der Müller."}, query
    assert titles(page(texts.viewer, "?q=m%C3%BCLLER")) == ["Am Wehr"]


def test_the_assistant_finds_posts_by_their_text_and_reads_the_line_that_holds_the_words(texts):
    actor = grants.person(texts.owner, texts.blog)
    listed, effects = operations.perform_json("list_posts", actor, texts.blog, {"query": "weir"})
    assert effects == []
    by_title = {p["title"]: p for p in listed["items"]}
    assert list(by_title) == ["Herons in winter", "Low water"]
    # The line around the words, plain text (the tool's results are not HTML), where the title lacks them.
    assert by_title["Low water"]["excerpt"] == "…at dusk. The old HERON stood in the weir, still as a post."
    assert by_title["Herons in winter"]["excerpt"] == "Nothing about the weir here."
    titled = operations.perform_json("list_posts", actor, texts.blog, {"query": "herons"})[0]["items"]
    assert [p["title"] for p in titled] == ["Herons in winter"] and "excerpt" not in titled[0]
    unsearched = operations.perform_json("list_posts", actor, texts.blog, {})[0]["items"]
    assert all("excerpt" not in p for p in unsearched)
    assert "title or text" in operations.OPERATIONS["list_posts"].description


def test_a_text_is_shown_escaped_in_its_line(team):
    make_post(team.blog, "Markup", body='A <script>alert("x")</script> the <b>word</b> after')
    html = page(team.owner, "?q=word")
    assert "<script>alert" not in html and "<b>word" not in html
    assert snippets(html) == {"Markup": 'A <script>alert("x")</script> the <b>[word]</b> after'}


def test_the_assistant_is_told_how_many_posts_there_are_and_pages_past_the_first_hundred(team):
    """A list is 100 posts at most: the result says how many match in all, and where the next 100 start,
    so "how many drafts do I have?" is not answered with the first page's count."""
    Post.objects.bulk_create(
        Post(blog=team.blog, author=team.owner, title=f"Note {n}", slug=f"note-{n}", body="", status=Post.DRAFT)
        for n in range(operations.LIST_MAX + 30)
    )
    make_post(team.blog, "Published one", published=True)
    actor = grants.person(team.owner, team.blog)

    def listed(**args):
        return operations.perform_json("list_posts", actor, team.blog, args)[0]

    first = listed(status="draft")
    assert len(first["items"]) == operations.LIST_MAX
    assert first["total"] == operations.LIST_MAX + 30 and first["next_offset"] == operations.LIST_MAX
    rest = listed(status="draft", offset=first["next_offset"])
    assert len(rest["items"]) == 30 and rest["total"] == operations.LIST_MAX + 30 and "next_offset" not in rest
    every = {p["id"] for p in first["items"]} | {p["id"] for p in rest["items"]}
    assert len(every) == operations.LIST_MAX + 30  # (each draft once, none skipped)
    assert listed(status="published") == {"items": [listed(status="published")["items"][0]], "total": 1}
    assert listed(status="draft", offset=10_000) == {"items": [], "total": operations.LIST_MAX + 30}
    found = listed(query="note 1")  # (Note 1, Note 10-19, Note 100-129)
    assert found["total"] == 41 and len(found["items"]) == 41 and "next_offset" not in found
    schema = operations.OPERATIONS["list_posts"].input_schema["properties"]["offset"]
    assert schema == {"type": "integer", "minimum": 0, "description": schema["description"]}
    with pytest.raises(services.OperationError, match="offset"):
        listed(offset=-1)


def test_the_assistant_is_told_when_a_search_beyond_a_to_z_found_more_than_it_keeps(team):
    """Such a search is matched here, keeping MATCHES_MAX posts: its total cannot say how many match in all,
    so the result says so when more matched (as the All posts page does); one that found as many as it keeps,
    or fewer, says nothing."""
    Post.objects.bulk_create(
        Post(blog=team.blog, author=team.owner, title=f"Ärger {n}", slug=f"a-{n}", body="")
        for n in range(services.MATCHES_MAX)
    )
    make_post(team.blog, "Straße")
    actor = grants.person(team.owner, team.blog)

    def listed(**args):
        return operations.perform_json("list_posts", actor, team.blog, args)[0]

    every = listed(query="ärger")
    assert every["total"] == services.MATCHES_MAX and "note" not in every
    Post.objects.bulk_create(
        Post(blog=team.blog, author=team.owner, title=f"Ärger {n}", slug=f"a-{n}", body="")
        for n in range(services.MATCHES_MAX, services.MATCHES_MAX + 5)
    )

    capped = listed(query="ärger")
    assert capped["total"] == services.MATCHES_MAX and len(capped["items"]) == services.MATCHES_MAX
    assert capped["note"] == (
        f"A search with letters beyond A to Z finds at most the {services.MATCHES_MAX} most recently changed"
        " matching posts, and more match than total says; add more words to narrow it."
    )
    assert "note" not in listed(query="straße") and listed(query="straße")["total"] == 1
    assert "note" not in listed(query="ärger 1")  # (Ärger 1, 10-19, 100-104: 16)
    assert "note" not in listed(query="rger")  # (ASCII: the database counts them all)
    assert listed(query="rger")["total"] == services.MATCHES_MAX + 5


def test_a_short_list_costs_no_count(team):
    """The total of a list shorter than a page is its length: no COUNT is made for it."""
    for n in range(3):
        make_post(team.blog, f"Post {n}")
    actor = grants.person(team.owner, team.blog)
    with CaptureQueriesContext(connection) as seen:
        result = operations.perform_json("list_posts", actor, team.blog, {})[0]
    assert result["total"] == 3 and not any("COUNT(" in q["sql"].upper() for q in seen.captured_queries)


def test_an_excerpt_is_found_for_words_typed_with_a_combining_accent(team):
    make_post(team.blog, "Am Wehr", body="Viel ÄRGER mit dem Wehr.")
    actor = grants.person(team.owner, team.blog)
    (found,) = operations.perform_json("list_posts", actor, team.blog, {"query": "A\u0308rger"})[0]["items"]
    assert found["excerpt"] == "Viel ÄRGER mit dem Wehr."


@pytest.fixture
def marked_up(team):
    """A post whose words the page reads through markup."""
    body = "We saw a **her**on by [the weir](https://example.org/weir-walk).\n\n*More soon.*"
    return make_post(team.blog, "Dusk walk", body=body)


def test_a_text_is_searched_and_quoted_as_its_page_reads_it(team, marked_up):
    """A word split by markup is found, and a line is shown as read, without the markup's signs."""
    assert snippets(page(team.owner, "?q=heron")) == {"Dusk walk": "We saw a [heron] by the weir. More soon."}
    assert snippets(page(team.owner, "?q=more+soon")) == {"Dusk walk": "We saw a heron by the weir. [More soon]."}
    assert snippets(page(team.owner, "?q=H%C3%A9RON")) == {}  # (beyond ASCII: the same text is read)
    actor = grants.person(team.owner, team.blog)
    (found,) = operations.perform_json("list_posts", actor, team.blog, {"query": "heron"})[0]["items"]
    assert found["excerpt"] == "We saw a heron by the weir. More soon."


def test_words_only_in_the_markup_find_the_post_with_the_line_as_written(team, marked_up):
    """A link's address is not read on the page, but a writer may look for the posts that link to a site."""
    assert snippets(page(team.owner, "?q=example.org")) == {
        "Dusk walk": "…saw a **her**on by [the weir](https://[example.org]/weir-walk). *More soon.*"
    }
    assert titles(page(team.owner, "?q=%C3%A9xample")) == []


def test_a_posts_text_follows_each_change_of_its_body(team):
    actor = grants.person(team.owner, team.blog)
    post = services.post_create(blog=team.blog, actor=actor, title="Notes", body="A *first* go.")
    assert Post.objects.get(pk=post.pk).text == "A first go."
    services.post_update(post=post, actor=actor, body="## Then\n\nA [second](https://x.org) go.")
    assert Post.objects.get(pk=post.pk).text == "Then\nA second go."
    post.body = "**Third**"
    post.save(update_fields=["body"])  # (a save of some fields rereads the text only with the body)
    post.text, post.title = "stale", "Renamed"
    post.save(update_fields=["title"])
    assert Post.objects.values_list("title", "text").get(pk=post.pk) == ("Renamed", "Third")
