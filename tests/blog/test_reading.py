"""Public reading: the front page, a blog's index, post pages, the Atom feed, the sitemap, 404s."""

from __future__ import annotations

import importlib
from datetime import timedelta
from xml.etree import ElementTree

import pytest
from django.apps import apps
from django.utils import timezone

from agent.markdown import render_markdown
from blog.models import Post, PostRevision
from blog.reading import excerpt
from blog.services import unique_slug
from tests.blog.conftest import browser, make_post
from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
HOSTILE = "Hi <script>alert(1)</script> [click](javascript:alert(2)) <img src=x onerror=alert(3)>"


def publish_many(blog, n: int, **extra) -> list[Post]:
    """`n` published posts, the first the oldest, an hour apart."""
    start = timezone.now() - timedelta(days=2)
    posts = []
    for i in range(n):
        post = make_post(blog, f"Post {i}", f"Words of post {i}. " * 30, published=True, **extra)
        Post.objects.filter(pk=post.pk).update(published_at=start + timedelta(hours=i))
        posts.append(post)
    return posts


def meta(html: str) -> dict[str, str]:
    """`<meta name|property=… content=…>` and `<link rel=… href=…>` of a page, by name."""
    found = {}
    for tag, attrs in tags_of(html):
        if tag == "meta" and ("name" in attrs or "property" in attrs):
            found[attrs.get("name") or attrs["property"]] = attrs.get("content")
        elif tag == "link" and attrs.get("rel") in ("canonical", "alternate"):
            found[f"link:{attrs['rel']}"] = attrs["href"]
    return found


def test_a_visitor_front_page_lists_blogs_with_something_published(team, other_team):
    make_post(team.blog, "Live", published=True)
    make_post(other_team.blog, "Only a draft")
    html = browser().get("/").content.decode()
    assert 'href="/read/notes/"' in html and "1 post" in html
    assert "/read/elsewhere/" not in html  # nothing published: not a public blog
    assert 'href="/accounts/login/"' in html
    signed_in = browser(team.viewer).get("/").content.decode()
    assert "Your blogs" in signed_in and 'href="/read/notes/"' in signed_in


def test_the_list_of_public_blogs_comes_a_page_at_a_time_on_the_front_page_and_at_home(team):
    """30 public blogs: the 24 most recently published on the first page, the rest on the second,
    with links between them; however many blogs there are, a page reads the same few rows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from blog.models import Blog
    from blog.reading import BLOGS_PER_PAGE

    start = timezone.now() - timedelta(days=40)
    for i in range(30):
        blog = Blog.objects.create(owner=team.owner, slug=f"b{i:02}", title=f"Blog {i:02}")
        post = make_post(blog, f"Post of {i}", published=True)
        Post.objects.filter(pk=post.pk).update(published_at=start + timedelta(days=i))
    newest_first = [f"/read/b{i:02}/" for i in reversed(range(30))]
    for client in (browser(), browser(team.viewer)):
        with CaptureQueriesContext(connection) as first_page:
            html = client.get("/").content.decode()
        assert [url for url in newest_first if f'href="{url}"' in html] == newest_first[:BLOGS_PER_PAGE]
        assert 'rel="next" href="?page=2"' in html and "Page 1 of 2" in html and 'rel="prev"' not in html
        page2 = client.get("/?page=2").content.decode()
        assert [url for url in newest_first if f'href="{url}"' in page2] == newest_first[BLOGS_PER_PAGE:]
        assert 'rel="prev" href="?page=1"' in page2 and 'rel="next"' not in page2
        assert client.get("/?page=x").content.decode().count('class="card"') >= BLOGS_PER_PAGE  # the first page
        assert client.get("/?page=99").status_code == 200  # the last page, not an error
    for i in range(30, 60):
        make_post(Blog.objects.create(owner=team.owner, slug=f"b{i:02}", title=f"Blog {i:02}"), "More", published=True)
    client = browser(team.viewer)
    with CaptureQueriesContext(connection) as later:
        client.get("/")
    assert len(later.captured_queries) == len(first_page.captured_queries)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("# Welcome\n\nShort notes from long walks.", "Short notes from long walks."),
        ("Intro &amp; more.\n\n## Part two\n\nThe rest.", "Intro & more. The rest."),
        ("# Only a heading", "Only a heading"),
        ("", ""),
    ],
)
def test_an_excerpt_is_the_body_s_sentences_without_its_headings(body, expected):
    assert excerpt(render_markdown(body)) == expected


def test_a_published_body_is_rendered_once_per_text_not_once_per_visit(team, monkeypatch):
    from agent import markdown

    rendered = []
    monkeypatch.setattr(
        markdown, "render_markdown", lambda text, **how: rendered.append(text) or render_markdown(text, **how)
    )
    post = make_post(team.blog, "Cached", "First *words*", published=True)
    for _ in range(3):
        assert "First <em>words</em>" in browser().get(f"/read/notes/{post.slug}/").content.decode()
    browser().get("/read/notes/")
    browser().get("/read/notes/feed/")
    assert rendered == ["First *words*"]
    post.body = "Second **words**"
    post.save()
    assert "Second <strong>words</strong>" in browser().get(f"/read/notes/{post.slug}/").content.decode()
    assert rendered == ["First *words*", "Second **words**"]


def test_public_index_shows_date_author_excerpt_and_pages(team):
    posts = publish_many(team.blog, 12)
    make_post(team.blog, "Secret draft")
    html = browser().get("/read/notes/").content.decode()
    assert "Secret draft" not in html
    titles = [p.title for p in posts]
    newest_first = list(reversed(titles))
    shown = [t for t in newest_first if f">{t}</a>" in html]
    assert shown == newest_first[:10]
    assert "owner ·" in html and "Words of post 11." in html and "…" in html  # author, excerpt, cut short
    assert '<time datetime="' in html
    assert 'rel="next" href="?page=2"' in html
    page2 = browser().get("/read/notes/?page=2").content.decode()
    assert [t for t in newest_first if f">{t}</a>" in page2] == newest_first[10:]
    assert meta(html)["link:alternate"] == "/read/notes/feed/"
    assert browser().get("/read/notes/?page=999").status_code == 200  # the last page, not an error


def test_post_page_has_title_description_canonical_and_open_graph(team):
    post = make_post(team.blog, "River notes", "The **heron** was back.\n\nMore soon.", published=True)
    html = browser().get(f"/read/notes/{post.slug}/").content.decode()
    assert "<title>River notes · Notes · Field Desk</title>" in html
    tags = meta(html)
    assert tags["description"] == tags["og:description"] == "The heron was back. More soon."
    assert tags["link:canonical"] == tags["og:url"] == f"http://testserver/read/notes/{post.slug}/"
    assert (tags["og:type"], tags["og:title"], tags["og:site_name"]) == ("article", "River notes", "Notes")
    assert tags["link:alternate"] == "/read/notes/feed/"


def test_drafts_and_empty_blogs_are_not_found_with_the_sites_own_404(team):
    draft = make_post(team.blog, "Draft")
    for url in ("/read/notes/", f"/read/notes/{draft.slug}/", "/read/notes/feed/", "/read/nope/"):
        response = browser().get(url)
        assert response.status_code == 404, url
        html = response.content.decode()
        assert "Nothing here" in html and 'class="topbar"' in html  # the site's page, not Django's plain one


def test_atom_feed_lists_published_posts_with_sanitised_bodies(team):
    publish_many(team.blog, 3)
    hostile = make_post(team.blog, "Hostile <b>title</b>", HOSTILE, published=True)
    make_post(team.blog, "Secret draft")
    response = browser().get("/read/notes/feed/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/atom+xml")
    feed = ElementTree.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed" and feed.find(f"{ATOM}title").text == "Notes"
    entries = feed.findall(f"{ATOM}entry")
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert titles == ["Hostile <b>title</b>", "Post 2", "Post 1", "Post 0"]  # newest first, no draft
    first = entries[0]
    assert first.find(f"{ATOM}link").get("href") == f"http://testserver/read/notes/{hostile.slug}/"
    assert first.find(f"{ATOM}author/{ATOM}name").text == "owner"
    summary = first.find(f"{ATOM}summary")
    assert summary.get("type") == "html"
    tags = tags_of(summary.text)  # the entry's HTML, as a feed reader would parse it: inert
    assert [tag for tag, _ in tags] == ["p"]
    assert not any(
        name.startswith("on") or "javascript:" in (value or "") for _, a in tags for name, value in a.items()
    )
    assert "&lt;script&gt;" in summary.text


def test_a_control_character_in_a_title_or_body_leaves_the_feed_readable(team):
    """XML 1.0 has no place for most control characters (a bell pasted into a title, a form feed in a
    body), and Django's feed writer refused them: the blog's whole feed answered 500. Its texts are written
    without them; the pages keep them as stored."""
    team.blog.title = "Notes\x07 of a bell"
    team.blog.description = "About\x0b bells"  # (written before descriptions were cleaned, or by the admin)
    team.blog.save()
    make_post(team.blog, "Bell\x07post", "ding\x0cdong\x1b and \ufffe more", published=True)
    response = browser().get("/read/notes/feed/")
    assert response.status_code == 200
    feed = ElementTree.fromstring(response.content)
    assert feed.find(f"{ATOM}title").text == "Notes of a bell"
    assert feed.find(f"{ATOM}subtitle").text == "About bells"
    entry = feed.find(f"{ATOM}entry")
    assert entry.find(f"{ATOM}title").text == "Bellpost"
    assert "dingdong and  more" in entry.find(f"{ATOM}summary").text


def test_sitemap_lists_public_pages_only(team, other_team):
    live = make_post(team.blog, "Live", published=True)
    draft = make_post(team.blog, "Draft")
    make_post(other_team.blog, "Elsewhere draft")
    response = browser().get("/sitemap.xml")
    assert response.status_code == 200
    locations = {loc.text for loc in ElementTree.fromstring(response.content).iter(f"{SITEMAP}loc")}
    assert locations == {"http://testserver/read/notes/", f"http://testserver/read/notes/{live.slug}/"}
    assert not any(draft.slug in loc for loc in locations)


def pager_links(html: str) -> dict[str, str]:
    """The newer/older links at the foot of a post page, by rel."""
    nav = html.split('class="pager post-pager"', 1)[1].split("</nav>", 1)[0] if "post-pager" in html else ""
    return {attrs["rel"]: attrs["href"] for tag, attrs in tags_of(nav) if tag == "a"}


def test_a_post_page_leads_on_to_the_newer_and_the_older_published_post(team, other_team):
    oldest, middle, newest = publish_many(team.blog, 3)
    make_post(team.blog, "A draft between them")  # (drafts are not public)
    make_post(other_team.blog, "Elsewhere", published=True)  # (another blog's newer post is not this blog's)
    page = browser().get(f"/read/notes/{middle.slug}/").content.decode()
    assert pager_links(page) == {"prev": f"/read/notes/{newest.slug}/", "next": f"/read/notes/{oldest.slug}/"}
    assert (
        '<span class="meta">← Newer</span> Post 2</a>' in page
        and '<span class="meta">Older →</span> Post 0</a>' in page
    )
    assert pager_links(browser().get(f"/read/notes/{newest.slug}/").content.decode()) == {
        "next": f"/read/notes/{middle.slug}/"
    }
    assert pager_links(browser().get(f"/read/notes/{oldest.slug}/").content.decode()) == {
        "prev": f"/read/notes/{middle.slug}/"
    }


def test_posts_published_at_the_same_moment_still_lead_on_to_each_other_in_the_indexs_order(team):
    first, second, third = publish_many(team.blog, 3)
    Post.objects.filter(blog=team.blog).update(published_at=first.published_at)  # one moment: ordered by id
    index = browser().get("/read/notes/").content.decode()
    assert index.index(third.title) < index.index(second.title) < index.index(first.title)
    assert pager_links(browser().get(f"/read/notes/{second.slug}/").content.decode()) == {
        "prev": f"/read/notes/{third.slug}/",
        "next": f"/read/notes/{first.slug}/",
    }


def test_a_lone_post_has_no_pager_and_its_neighbours_cost_two_reads(team, django_assert_max_num_queries):
    lone = make_post(team.blog, "Lone", published=True)
    assert "post-pager" not in browser().get(f"/read/notes/{lone.slug}/").content.decode()
    many = publish_many(team.blog, 30)
    client = browser()
    client.get(f"/read/notes/{many[15].slug}/")  # (its body rendered and cached)
    with django_assert_max_num_queries(3):  # the post, its newer and its older post
        client.get(f"/read/notes/{many[15].slug}/")


def test_every_public_address_answers_head_as_it_answers_get(team):
    """Link checkers, uptime monitors and some crawlers ask HEAD: HTTP says a GET resource answers it too."""
    live = make_post(team.blog, "Live", published=True)
    for url in ("/", "/read/notes/", f"/read/notes/{live.slug}/", "/read/notes/feed/", "/sitemap.xml", "/robots.txt"):
        got, head = browser().get(url), browser().head(url)
        assert (
            (head.status_code, head["Content-Type"])
            == (got.status_code, got["Content-Type"])
            == (200, got["Content-Type"])
        ), url
        assert head.content == b"", url
    assert browser().head("/favicon.ico").status_code == 302
    assert browser().head("/read/notes/no-such-post/").status_code == 404


def test_robots_txt_names_the_sitemap_and_asks_crawlers_to_keep_to_the_public_pages():
    response = browser().get("/robots.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert lines[0] == "User-agent: *"
    assert "Sitemap: http://testserver/sitemap.xml" in lines
    assert "Allow: /read/" in lines
    for private in ("/blogs/", "/admin/", "/api/", "/accounts/", "/chat/", "/mcp", "/oauth/"):
        assert f"Disallow: {private}" in lines
    assert not any(line.startswith("Disallow: /read") for line in lines)
    assert browser().post("/robots.txt").status_code == 405


def test_favicon_ico_leads_to_the_sites_icon_which_every_page_names():
    response = browser().get("/favicon.ico")
    assert response.status_code == 302
    icon = response["Location"]
    assert icon.startswith("/static/") and icon.endswith(".svg")
    assert "max-age=86400" in response["Cache-Control"]
    for page in ("/", "/accounts/login/", "/admin/login/"):
        assert f'<link rel="icon" href="{icon}" type="image/svg+xml">' in browser().get(page).content.decode()


def test_a_post_cannot_take_the_feeds_address(team):
    assert unique_slug(team.blog, "Feed") == "feed-2"


# History ----------------------------------------------------------------------------------------------------------


def edit(team, post, title, body):
    response = browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": title, "body": body})
    assert response.status_code in (200, 302)


def test_what_one_revision_changed(team):
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "Walk", "body": "one\ntwo\nthree"})
    post = Post.objects.get()
    edit(team, post, "Long walk", "one\n2\nthree\nfour")
    update = PostRevision.objects.get(action="update")
    html = browser(team.viewer).get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={update.pk}").content
    html = html.decode()
    assert "What changed: update by owner" in html
    assert (
        '<p class="diff-line removed"><span class="sign" aria-hidden="true">−</span><span class="visually-hidden">Removed: </span>Walk</p>'
        in html
    )
    assert (
        '<p class="diff-line added"><span class="sign" aria-hidden="true">+</span><span class="visually-hidden">Added: </span>Long walk</p>'
        in html
    )
    sign = {"removed": "−", "added": "+", "same": " "}
    for kind, text in (("removed", "two"), ("added", "2"), ("added", "four"), ("same", "one"), ("same", "three")):
        assert f'<span class="diff-line {kind}"><span class="sign">{sign[kind]}</span>{text}</span>' in html


def test_any_two_versions_compare_either_way_round(team):
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "V1", "body": "alpha"})
    post = Post.objects.get()
    edit(team, post, "V2", "beta")
    edit(team, post, "V3", "gamma")
    created, *_, last = PostRevision.objects.order_by("created_at", "pk")
    history = browser(team.owner).get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    assert "Version 1" in history and "Version 3" in history and 'name="from"' in history
    for a, b in ((created, last), (last, created)):
        url = f"/blogs/notes/posts/{post.pk}/history/compare/?from={a.pk}&to={b.pk}"
        html = browser(team.owner).get(url).content.decode()
        assert "Removed: </span>V1</p>" in html and "Added: </span>V3</p>" in html  # older → newer whichever way asked
        assert "</span>alpha</span>" in html and "</span>gamma</span>" in html and "beta" not in html


def test_compare_and_restore_name_the_versions_by_the_numbers_history_shows(team):
    """Three changes by one person in one minute read alike ("From update by owner (… 21:23) to update by
    owner (… 21:23)"), and a restore said only "Restored the earlier version."; the history page numbers them."""
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "V1", "body": "alpha"})
    post = Post.objects.get()
    edit(team, post, "V2", "beta")
    edit(team, post, "V3", "gamma")
    created, second, last = PostRevision.objects.order_by("created_at", "pk")
    compare = f"/blogs/notes/posts/{post.pk}/history/compare/"
    html = browser(team.viewer).get(f"{compare}?from={last.pk}&to={second.pk}").content.decode()
    assert "<h1>Comparing version 2 with version 3</h1>" in html
    assert (
        '<p class="meta">From version 2, update by owner (<time' in html and ") to version 3, update by owner (" in html
    )
    html = browser(team.viewer).get(f"{compare}?change={second.pk}").content.decode()
    assert '<p class="meta">Version 2 · <time' in html
    restored = browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/revert/{second.pk}/", follow=True)
    assert "Restored version 1, now version 4." in restored.content.decode()
    assert (Post.objects.get().title, created.after["title"]) == ("V1", "V1")


def test_a_diff_shows_hostile_text_as_text(team):
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "Plain", "body": "fine"})
    post = Post.objects.get()
    edit(team, post, "<script>alert(1)</script>", HOSTILE)
    update = PostRevision.objects.get(action="update")
    html = browser(team.owner).get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={update.pk}").content
    html = html.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(3)&gt;" in html


def heading_levels(html: str) -> list[int]:
    """The levels of a page's headings, in document order."""
    return [int(tag[1]) for tag, _ in tags_of(html) if tag in ("h1", "h2", "h3", "h4", "h5", "h6")]


def never_skips_a_level(levels: list[int]) -> bool:
    """Each heading at most one level below the one before it (h1 → h3 leaves a reader's outline a hole)."""
    return all(b <= a + 1 for a, b in zip(levels, levels[1:], strict=False))


def test_a_comparison_s_headings_go_down_one_level_at_a_time(team):
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "V1", "body": "alpha"})
    post = Post.objects.get()
    edit(team, post, "V2", "beta")
    first, last = PostRevision.objects.order_by("created_at", "pk")
    compare = f"/blogs/notes/posts/{post.pk}/history/compare/"
    for query in (f"change={last.pk}", f"from={first.pk}&to={last.pk}"):
        html = browser(team.owner).get(f"{compare}?{query}").content.decode()
        levels = heading_levels(html[html.index("<main>") :])
        assert levels == [1, 2, 2] and never_skips_a_level(levels), (query, levels)


@pytest.mark.parametrize(
    "query",
    ["change=abc", "change=²", "from=1", "", "change=999999", "change=" + "9" * 5000],
)
def test_compare_refuses_what_is_not_a_revision_of_this_post(team, query):
    post = make_post(team.blog, "A")
    other = make_post(team.blog, "B")
    edit(team, other, "B2", "x")
    assert browser(team.owner).get(f"/blogs/notes/posts/{post.pk}/history/compare/?{query}").status_code == 404
    rev = PostRevision.objects.get(post=other)
    url = f"/blogs/notes/posts/{post.pk}/history/compare/?change={rev.pk}"
    assert browser(team.owner).get(url).status_code == 404  # another post's revision


def test_compare_is_404_for_non_members(team, other_team):
    browser(team.owner).post("/blogs/notes/posts/new/", {"title": "Mine", "body": "b"})
    post, rev = Post.objects.get(), PostRevision.objects.get()
    url = f"/blogs/notes/posts/{post.pk}/history/compare/?change={rev.pk}"
    assert browser(other_team.owner).get(url).status_code == 404
    assert browser().get(url).status_code == 302  # sign in first


def test_posts_made_before_history_get_a_first_revision(team):
    post = make_post(team.blog, "Old post", "From before.", published=True)
    make_post(team.blog, "Has history")
    kept = PostRevision.objects.create(post=Post.objects.get(title="Has history"), blog=team.blog, action="create")
    migration = importlib.import_module("blog.migrations.0002_first_revisions")
    migration.first_revisions(apps, None)
    (first,) = PostRevision.objects.filter(post=post)
    assert (first.action, first.before, first.after, first.user) == ("create", None, post.snapshot(), team.owner)
    assert first.created_at == post.created_at
    assert list(PostRevision.objects.exclude(post=post)) == [kept]  # posts with history are left alone


def test_comparing_the_assistants_changes_reads_no_more_than_comparing_a_persons(team, consent):
    """Each version is named by who made it, the assistant "for owner" by its grant: read with the
    revisions, as the history page reads it, not one query more per version."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from blog import services
    from blog.grants import Actor
    from tests.blog.conftest import ALL

    grant = consent(team.owner, team.blog, ALL)
    owner = Actor(team.owner, frozenset(ALL))
    assistant = Actor(team.owner, frozenset(ALL), consent=grant, via_assistant=True)
    client = browser(team.owner)

    def compare_queries(actor: Actor) -> int:
        post = services.post_create(blog=team.blog, actor=actor, title="Counted", body="one")
        services.post_update(post=post, actor=actor, body="two")
        older, newer = PostRevision.objects.filter(post=post).order_by("pk")
        with CaptureQueriesContext(connection) as ctx:
            page = client.get(f"/blogs/notes/posts/{post.pk}/history/compare/?from={older.pk}&to={newer.pk}")
        assert page.status_code == 200
        return len(ctx.captured_queries)

    assert compare_queries(assistant) == compare_queries(owner)


@pytest.mark.parametrize(
    ("body", "headings"),
    [
        ("# Welcome\n\nWords.\n\n## Part one\n\n###### Deep", ["h2", "h3", "h6"]),  # (moved down one)
        ("## Already\n\n### Under it", ["h2", "h3"]),  # (already under the title: as written)
        ("### Only\n\nWords.", ["h3"]),
    ],
)
def test_a_posts_own_headings_stay_under_its_title(team, body, headings):
    """The post's title is the page's one h1: a body's `# Heading` is shown one level under it (and
    its other headings with it, keeping their outline), on the public page and in the editor's
    preview alike; a body whose headings are already under the title keeps them as written."""
    post = make_post(team.blog, "Titled", body, published=True)
    for html in (
        browser().get(f"/read/notes/{post.slug}/").content.decode(),
        browser(team.owner).post("/blogs/notes/posts/preview/", {"body": body}).content.decode(),
    ):
        shown = [tag for tag, _ in tags_of(html) if tag in ("h1", "h2", "h3", "h4", "h5", "h6")]
        body_headings = shown[1:] if shown[:1] == ["h1"] else shown
        assert body_headings == headings
        assert shown.count("h1") <= 1
