"""People's pages: blogs, posts and their history, members, the Clients screen, public reading, CSRF."""

from __future__ import annotations

import re
import threading
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.dateformat import format as date_format

from agent import intake
from agent.models import Message, RateEvent, Session
from agent.state import Run
from agent.transcript import add_message
from agent.turns import claim
from blog import chat_panel, grants
from blog.chat import start_session, tool_available
from blog.models import Consent, Post, PostRevision, Seat
from tests import files
from tests.blog.conftest import ALL, DELETE, PUBLISH, READ, WRITE, blog_chat, browser, make_post, said_chat, set_consent
from tests.blog.test_assistant_turns import say

pytestmark = pytest.mark.django_db


def everything():
    """A fingerprint of all state a form could change."""
    return (
        sorted(Post.objects.values_list("pk", "title", "slug", "body", "status", "published_at")),
        PostRevision.objects.count(),
        sorted(Seat.objects.values_list("pk", "user_id", "role", "may_use_assistant")),
        sorted(Consent.objects.values_list("pk", "scopes", "revoked_at")),
        Session.objects.count(),
    )


class Tags(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def post_links(html: str) -> dict[str, str]:
    """Title → href of every post title link in the post list."""
    return {
        m.group(2): m.group(1)
        for m in re.finditer(r'<a class="post-title" dir="auto" href="([^"]*)">([^<]*)</a>', html)
    }


# Home and blog pages ----------------------------------------------------------------------------------------


def test_home_lists_my_blogs(team, other_team):
    html = browser(team.editor).get("/").content.decode()
    assert '<a href="/blogs/notes/"><strong>Notes</strong></a>' in html
    assert "Elsewhere" not in html
    html = browser(team.outsider).get("/").content.decode()
    assert "You're not a member of any blog yet." in html
    assert "/blogs/notes/" not in html


def test_pages_need_login(team):
    response = browser().get("/blogs/notes/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/blogs/notes/"
    front = browser().get("/")  # a visitor gets the front page of public reading, not a redirect
    assert front.status_code == 200 and 'href="/accounts/login/"' in front.content.decode()


def test_blog_page_is_404_for_non_members(team, other_team):
    assert browser(team.outsider).get("/blogs/notes/").status_code == 404
    assert browser(team.owner).get("/blogs/elsewhere/").status_code == 404
    assert browser(team.owner).get("/blogs/nope/").status_code == 404
    for url in ("/blogs/notes/posts/", "/blogs/notes/posts/new/", "/blogs/notes/clients/", "/blogs/notes/members/"):
        assert browser(team.outsider).get(url).status_code == 404, url


def test_blog_page_shows_posts_and_panel(team):
    draft = make_post(team.blog, "A draft")
    make_post(team.blog, "Live post", published=True)
    html = browser(team.owner).get("/blogs/notes/").content.decode()
    assert html.count('id="post-list"') == 1
    assert post_links(html) == {
        "A draft": f"/blogs/notes/posts/{draft.pk}/edit/",
        "Live post": "/read/notes/live-post/",
    }
    assert '<textarea id="chat-text" name="text"' in html
    assert 'id="chat-form"' in html
    # Each navigation landmark has a name a screen reader can tell apart.
    navs = re.findall(r"<nav\b[^>]*>", html)
    assert len(navs) == 2 and all('aria-label="' in nav for nav in navs), navs


def test_the_page_of_all_posts_links_each_title_where_the_blog_page_does(team):
    draft = make_post(team.blog, "A draft")
    make_post(team.blog, "Live post", published=True)
    for member in (team.owner, team.viewer):
        client = browser(member)
        listed = post_links(client.get("/blogs/notes/").content.decode())
        html = client.get("/blogs/notes/posts/all/").content.decode()
        everything = {m[2]: m[1] for m in re.finditer(r'<li><a dir="auto" href="([^"]*)">([^<]*)</a>', html)}
        assert everything == listed and len(listed) == 2, member
    assert listed["A draft"] == f"/blogs/notes/posts/{draft.pk}/history/"  # (the viewer's)


def test_viewer_page_has_no_assistant_and_no_actions(team):
    draft = make_post(team.blog, "A draft")
    html = browser(team.viewer).get("/blogs/notes/").content.decode()
    assert post_links(html) == {"A draft": f"/blogs/notes/posts/{draft.pk}/history/"}
    assert 'id="chat-form"' not in html
    assert "/posts/new/" not in html and "/publish/" not in html and "/delete/" not in html
    assert Session.objects.count() == 0


def test_a_member_without_the_assistant_is_told_why_where_the_panel_would_be(team):
    """A viewer's page, and the page of an editor the owner has not allowed the assistant, say in the
    panel's place why it is not there and who can change that, instead of leaving its column blank."""
    viewer = browser(team.viewer).get("/blogs/notes/").content.decode()
    note = re.search(r'<aside class="assistant-off"[^>]*>(.*?)</aside>', viewer, re.S)
    assert note, "no note in the panel's place"
    text = " ".join(re.sub(r"<[^>]+>", " ", note.group(1)).split())
    assert text == (
        "You're a viewer of Notes: you can read its posts and their history, but not change them, "
        "and viewers don't use the assistant. The blog's owner can change your role."
    )
    Seat.objects.filter(pk=team.seat("editor").pk).update(may_use_assistant=False)
    editor = browser(team.editor).get("/blogs/notes/").content.decode()
    note = re.search(r'<aside class="assistant-off"[^>]*>(.*?)</aside>', editor, re.S)
    assert note and 'id="chat-form"' not in editor
    text = " ".join(re.sub(r"<[^>]+>", " ", note.group(1)).split())
    assert (
        text == "The assistant is off for you on Notes. The blog's owner can turn it on for you on the Members screen."
    )
    owner = browser(team.owner).get("/blogs/notes/").content.decode()
    assert 'class="assistant-off"' not in owner and 'id="chat-form"' in owner


def test_post_list_fragment(team):
    draft = make_post(team.blog, "A draft")
    live = make_post(team.blog, "Live post", published=True)
    response = browser(team.author).get("/blogs/notes/posts/")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="post-list"')
    assert "<html" not in html
    assert post_links(html) == {
        "A draft": f"/blogs/notes/posts/{draft.pk}/edit/",
        "Live post": "/read/notes/live-post/",
    }
    assert "/publish/" not in html and "/unpublish/" not in html and "/delete/" not in html  # author
    html = browser(team.editor).get("/blogs/notes/posts/").content.decode()
    assert f"/blogs/notes/posts/{draft.pk}/publish/" in html
    assert f"/blogs/notes/posts/{live.pk}/unpublish/" in html
    assert f"/blogs/notes/posts/{draft.pk}/delete/" in html


def _many_posts(blog, n):
    """`n` drafts, "Post 0" the oldest change, "Post n-1" the latest."""
    start = timezone.now()
    posts = Post.objects.bulk_create(
        Post(blog=blog, author=blog.owner, title=f"Post {i}", slug=f"post-{i}", body="x", status=Post.DRAFT)
        for i in range(n)
    )
    for i, post in enumerate(posts):  # (bulk_create leaves auto_now as one instant)
        Post.objects.filter(pk=post.pk).update(updated_at=start + timezone.timedelta(seconds=i))
    return posts


def listed(html: str) -> list[str]:
    return re.findall(r'<a class="post-title"[^>]*>([^<]*)</a>', html)


def test_a_long_blog_lists_its_latest_changes_first_and_shows_more_on_request(team):
    _many_posts(team.blog, 120)
    client = browser(team.owner)
    page = client.get(f"/blogs/{team.blog.slug}/").content.decode()
    assert listed(page) == [f"Post {i}" for i in range(119, 69, -1)]  # the 50 latest changes
    more = re.search(r'<a class="button show-more" id="post-list-more" href="([^"]*)" hx-get="([^"]*)"', page)
    assert more is not None
    post_70 = Post.objects.get(title="Post 70")
    assert more.group(1) == f"/blogs/{team.blog.slug}/?shown=100#post-{post_70.pk}"  # (without JS: the page)
    assert more.group(2) == f"/blogs/{team.blog.slug}/posts/?shown=100&amp;more=1"

    added = client.get(f"/blogs/{team.blog.slug}/posts/?shown=100&more=1", HTTP_HX_REQUEST="true").content.decode()
    assert listed(added) == [f"Post {i}" for i in range(119, 19, -1)]
    # Focus goes to the first post it added, and the list's redraws keep the hundred.
    assert re.search(r'<a class="post-title" dir="auto" autofocus href="[^"]*">Post 69</a>', added)
    assert added.count("autofocus") == 1
    assert f'hx-get="/blogs/{team.blog.slug}/posts/?shown=100"' in added
    assert "?shown=150" in added

    redrawn = client.get(f"/blogs/{team.blog.slug}/posts/?shown=100", HTTP_HX_REQUEST="true").content.decode()
    assert len(listed(redrawn)) == 100 and "autofocus" not in redrawn
    last = client.get(f"/blogs/{team.blog.slug}/posts/?shown=150&more=1").content.decode()
    assert len(listed(last)) == 120 and "Show more posts" not in last


def test_publishing_from_a_longer_list_keeps_it_as_long(team):
    posts = _many_posts(team.blog, 80)
    client = browser(team.owner)
    response = client.post(
        f"/blogs/{team.blog.slug}/posts/{posts[0].pk}/publish/?shown=100", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert len(listed(response)) == 80 and "Show more posts" not in response
    assert Post.objects.get(pk=posts[0].pk).status == Post.PUBLISHED


@pytest.mark.parametrize("asked", ["abc", "-5", "0", "7"])
def test_an_odd_shown_lists_the_first_fifty(team, asked):
    _many_posts(team.blog, 60)
    html = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/?shown={asked}").content.decode()
    assert len(listed(html)) == 50 and "?shown=100" in html


def test_the_list_stops_growing_at_its_most_and_says_so(team, monkeypatch):
    from blog import views

    monkeypatch.setattr(views, "POSTS_SHOWN_MAX", 100)
    _many_posts(team.blog, 120)
    html = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/?shown=999999").content.decode()
    assert len(listed(html)) == 100
    assert "Show more posts" not in html
    assert "Showing the 100 most recently changed posts." in html


def test_past_the_lists_most_every_post_is_on_the_all_posts_pages(team, monkeypatch):
    """A blog of more posts than its page lists: the list says so and links to every post, a page at a
    time, the least recently changed on the last page; members only."""
    from blog import views

    monkeypatch.setattr(views, "POSTS_SHOWN_MAX", 100)
    posts = _many_posts(team.blog, 230)
    oldest = min(posts, key=lambda p: (p.updated_at, p.pk))
    html = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/?shown=100").content.decode()
    assert f'href="/blogs/{team.blog.slug}/posts/all/"' in html
    for role in ("owner", "viewer"):
        client = browser(team.user(role))
        first = client.get(f"/blogs/{team.blog.slug}/posts/all/").content.decode()
        assert first.count("<li>") == 100 and 'href="?page=2"' in first and "230 in all" in first
        last = client.get(f"/blogs/{team.blog.slug}/posts/all/?page=3").content.decode()
        assert last.count("<li>") == 30 and f"/posts/{oldest.pk}/" in last
    assert browser(team.outsider).get(f"/blogs/{team.blog.slug}/posts/all/").status_code == 404


def test_titles_are_escaped_in_the_list(team):
    make_post(team.blog, '<img src=x onerror="alert(1)">')
    html = browser(team.owner).get("/blogs/notes/posts/").content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


# Post forms and their revisions -------------------------------------------------------------------------------


def test_create_post(team):
    client = browser(team.author)
    assert client.get("/blogs/notes/posts/new/").status_code == 200
    response = client.post("/blogs/notes/posts/new/", {"title": "Hello world", "body": "First *post*."})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/"
    post = Post.objects.get()
    assert (post.title, post.slug, post.body, post.status, post.author) == (
        "Hello world",
        "hello-world",
        "First *post*.",
        "draft",
        team.author,
    )
    rev = PostRevision.objects.get()
    assert (rev.post, rev.action, rev.user, rev.via_assistant, rev.consent, rev.chat_session, rev.before) == (
        post,
        "create",
        team.author,
        False,
        None,
        None,
        None,
    )
    assert rev.after == {
        "title": "Hello world",
        "slug": "hello-world",
        "body": "First *post*.",
        "status": "draft",
        "published_at": None,
    }
    assert rev.actor_label == "author"


def test_create_post_needs_a_title(team):
    response = browser(team.owner).post("/blogs/notes/posts/new/", {"title": "  ", "body": "x"})
    assert response.status_code == 200
    assert "A post needs a title." in response.content.decode()
    assert Post.objects.count() == 0 and PostRevision.objects.count() == 0


def test_a_nul_in_a_posts_title_or_body_is_kept_as_a_replacement_character(team):
    """PostgreSQL's text columns cannot hold a NUL: a form that sent one (pasted in) was a 500, new or
    edited. The one write path reads it as U+FFFD, as the chat's messages and the tools' input are."""
    client = browser(team.owner)
    response = client.post("/blogs/notes/posts/new/", {"title": "Odd\x00one", "body": "a\x00b"})
    assert response.status_code == 302
    post = Post.objects.get()
    assert (post.title, post.body) == ("Odd\ufffdone", "a\ufffdb")
    edit = client.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "\x00Again", "body": "c\x00"})
    assert edit.status_code == 302
    post.refresh_from_db()
    assert (post.title, post.body) == ("\ufffdAgain", "c\ufffd")


def test_viewer_cannot_create(team):
    client = browser(team.viewer)
    assert client.get("/blogs/notes/posts/new/").status_code == 404
    assert client.post("/blogs/notes/posts/new/", {"title": "Nope"}).status_code == 404
    assert Post.objects.count() == 0


def test_edit_post(team):
    post = make_post(team.blog, "A draft", "Old body")
    client = browser(team.editor)
    html = client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert 'value="A draft"' in html and "Old body</textarea>" in html
    response = client.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "New title", "body": "New body"})
    assert response.status_code == 302
    post.refresh_from_db()
    assert (post.title, post.slug, post.body) == ("New title", "new-title", "New body")
    rev = PostRevision.objects.get()
    assert (rev.action, rev.user, rev.via_assistant) == ("update", team.editor, False)
    assert (rev.before["title"], rev.before["body"], rev.after["title"], rev.after["body"]) == (
        "A draft",
        "Old body",
        "New title",
        "New body",
    )


def test_a_body_is_kept_with_the_line_breaks_a_person_sees_and_counted_so(team):
    """A browser's form sends each line break as CR LF; a body is stored with LF, as the assistant
    writes it, and its length is counted as the person sees it: a body at the limit is not refused
    for its line breaks, in the editor nor in its preview."""
    from blog.services import MAX_BODY_CHARS

    post = make_post(team.blog, "A draft", "Old body")
    client = browser(team.editor)
    lines = "line\n" * (MAX_BODY_CHARS // 5)  # (exactly the limit, as typed)
    assert len(lines) == MAX_BODY_CHARS
    sent = lines.replace("\n", "\r\n")
    response = client.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "A draft", "body": sent})
    assert response.status_code == 302
    post.refresh_from_db()
    assert post.body == lines
    assert "\r" not in PostRevision.objects.get().after["body"]
    preview = client.post("/blogs/notes/posts/preview/", {"body": sent}).content.decode()
    assert "too long" not in preview and "<p>line" in preview
    client.post("/blogs/notes/posts/new/", {"title": "Old Mac", "body": "one\rtwo"})
    assert Post.objects.get(title="Old Mac").body == "one\ntwo"


def test_the_editor_links_to_its_posts_history(team):
    """From the editor the post's earlier versions are one link away (they were reached only from the
    blog page's list); a new post has none yet."""
    post = make_post(team.blog, "A draft", "Old body")
    html = browser(team.editor).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    # (its id kept when the line is redrawn, so focus on it stays: blog/_editor_head.html)
    assert ("a", {"id": "editor-nav-history", "href": f"/blogs/notes/posts/{post.pk}/history/"}) in tags_of(html)
    assert "/history/" not in browser(team.editor).get("/blogs/notes/posts/new/").content.decode()


def test_an_author_cannot_change_a_published_post(team):
    """Live content is a publish-level act: without posts:publish the edit of a published post is refused."""
    live = make_post(team.blog, "Live post", "Live body", published=True)
    client = browser(team.author)
    before = everything()
    assert client.get(f"/blogs/notes/posts/{live.pk}/edit/").status_code == 404
    assert client.post(f"/blogs/notes/posts/{live.pk}/edit/", {"title": "Defaced", "body": "x"}).status_code == 404
    assert everything() == before
    public = browser().get("/read/notes/live-post/").content.decode()
    assert "<p>Live body</p>" in public and "Defaced" not in public
    html = client.get("/blogs/notes/").content.decode()
    assert f"/posts/{live.pk}/edit/" not in html  # no Edit link for a post they may not change
    draft = make_post(team.blog, "A draft")
    assert f"/posts/{draft.pk}/edit/" in client.get("/blogs/notes/").content.decode()


def test_an_editor_changes_a_published_post(team):
    live = make_post(team.blog, "Live post", "Live body", published=True)
    client = browser(team.editor)
    assert f"/posts/{live.pk}/edit/" in client.get("/blogs/notes/").content.decode()
    response = client.post(f"/blogs/notes/posts/{live.pk}/edit/", {"title": "Live post", "body": "Corrected"})
    assert response.status_code == 302
    live.refresh_from_db()
    assert (live.status, live.body) == ("published", "Corrected")


def test_edit_other_blogs_post_is_404(team, other_team):
    foreign = make_post(other_team.blog, "Theirs")
    response = browser(team.owner).post(f"/blogs/notes/posts/{foreign.pk}/edit/", {"title": "Mine now"})
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert foreign.title == "Theirs"


def test_body_only_edit_keeps_the_posts_address(team):
    first = make_post(team.blog, "Same title")
    client = browser(team.owner)
    client.post("/blogs/notes/posts/new/", {"title": "Same title", "body": "second"})
    second = Post.objects.get(body="second")
    assert second.slug == "same-title-2"
    client.post(f"/blogs/notes/posts/{second.pk}/publish/")
    client.post(f"/blogs/notes/posts/{first.pk}/delete/")
    client.post(f"/blogs/notes/posts/{second.pk}/edit/", {"title": "Same title", "body": "typo fixed"})
    second.refresh_from_db()
    assert (second.slug, second.body) == ("same-title-2", "typo fixed")
    assert browser().get("/read/notes/same-title-2/").status_code == 200
    rev = PostRevision.objects.filter(post=second).first()
    assert (rev.before["slug"], rev.after["slug"]) == ("same-title-2", "same-title-2")


def test_publish_and_unpublish(team):
    post = make_post(team.blog, "A draft")
    client = browser(team.editor)
    assert client.get(f"/blogs/notes/posts/{post.pk}/publish/").status_code == 405
    response = client.post(f"/blogs/notes/posts/{post.pk}/publish/")
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/#post-{post.pk}"
    post.refresh_from_db()
    assert post.status == "published" and post.published_at is not None
    rev = PostRevision.objects.first()
    assert (rev.action, rev.user, rev.via_assistant, rev.before["status"], rev.after["status"]) == (
        "publish",
        team.editor,
        False,
        "draft",
        "published",
    )
    assert rev.after["published_at"] == post.published_at.isoformat()

    response = client.post(f"/blogs/notes/posts/{post.pk}/unpublish/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<section id="post-list"')
    post.refresh_from_db()
    assert (post.status, post.published_at) == ("draft", None)
    rev = PostRevision.objects.first()
    assert (rev.action, rev.before["status"], rev.after["status"], rev.after["published_at"]) == (
        "unpublish",
        "published",
        "draft",
        None,
    )
    assert PostRevision.objects.count() == 2


def test_publishing_a_published_post_changes_nothing(team):
    post = make_post(team.blog, "Live", published=True)
    browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/publish/")
    assert PostRevision.objects.count() == 0


def test_author_cannot_publish_or_delete(team):
    post = make_post(team.blog, "A draft")
    client = browser(team.author)
    before = everything()
    assert client.post(f"/blogs/notes/posts/{post.pk}/publish/").status_code == 404
    assert client.get(f"/blogs/notes/posts/{post.pk}/delete/").status_code == 404
    assert client.post(f"/blogs/notes/posts/{post.pk}/delete/").status_code == 404
    assert everything() == before


def test_delete_confirm_then_delete(team):
    post = make_post(team.blog, "A draft", "Body")
    client = browser(team.owner)
    response = client.get(f"/blogs/notes/posts/{post.pk}/delete/")
    assert response.status_code == 200
    assert "Delete “A draft”?" in response.content.decode()
    assert Post.objects.filter(pk=post.pk).exists()
    response = client.post(f"/blogs/notes/posts/{post.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/"
    assert not Post.objects.filter(pk=post.pk).exists()
    rev = PostRevision.objects.get()
    assert (rev.post, rev.blog, rev.action, rev.user, rev.via_assistant, rev.after) == (
        None,
        team.blog,
        "delete",
        team.owner,
        False,
        None,
    )
    assert rev.before == {
        "id": post.pk,
        "title": "A draft",
        "slug": "a-draft",
        "body": "Body",
        "status": "draft",
        "published_at": None,
    }


def test_history_lists_revisions_with_actors(team):
    post = make_post(team.blog, "A draft")
    client = browser(team.owner)
    client.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Second", "body": "b"})
    PostRevision.objects.create(
        post=post,
        blog=team.blog,
        action="publish",
        before=post.snapshot(),
        after=post.snapshot(),
        user=team.owner,
        via_assistant=True,
    )
    html = browser(team.viewer).get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    assert "<strong>update</strong> by owner" in html
    assert "<strong>publish</strong> by the assistant for owner" in html
    assert "Restore version" not in html  # viewers can't revert
    html = client.get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    # Each row restores the version before its change (the newest undoes the last change), so says which;
    # a publish changed no words: nothing of it to restore (the row after it offers the same words).
    assert ">Restore the version before it</button>" in html
    assert ">Restore version 1</button>" not in html and ">Restore version 2</button>" not in html
    assert (
        "Restoring brings back a version's title and text; whether the post is published, and its cover, stay as they are."
        in html
    )
    assert (
        "Restoring brings back"
        not in browser(team.viewer).get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    )


def test_history_names_who_acted_once(team):
    """ "by the assistant for owner" said it already: no "assistant" badge after it. A connected client's
    change keeps its "connected client" badge, which its name alone does not say."""
    post = make_post(team.blog, "A draft")
    mine = set_consent(team.owner, team.blog, ALL)
    theirs = Consent.objects.create(user=team.owner, blog=team.blog, client="c1", client_name="Claude", scopes=ALL)
    for consent in (mine, theirs):
        PostRevision.objects.create(
            post=post, blog=team.blog, action="update", user=team.owner, via_assistant=True, consent=consent
        )
    html = browser(team.owner).get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    rows = [
        " ".join(re.sub(r"<[^>]+>", " ", row).split())
        for row in re.findall(r'<li class="revision">(.*?)</li>', html, re.S)
    ]
    assert [row.split(" · ")[1] for row in rows] == [
        "update by Claude for owner connected client",
        "update by the assistant for owner",
    ]


def test_a_long_history_is_listed_a_page_at_a_time_and_every_version_stays_reachable(team):
    """Hundreds of revisions: the history page lists 50, the latest first, numbered as before, with
    links to the older pages; the compare form still names every version."""
    post = make_post(team.blog, "Often edited", "x" * 2000)
    PostRevision.objects.bulk_create(
        PostRevision(post=post, blog=team.blog, action="update", before=post.snapshot(), after=post.snapshot())
        for _ in range(120)
    )
    client = browser(team.owner)
    html = client.get(f"/blogs/notes/posts/{post.pk}/history/").content.decode()
    assert html.count('<li class="revision">') == 50
    assert "Version 120</span>" in html and "Version 71</span>" in html and "Version 70</span>" not in html
    assert ">Restore version 119</button>" in html and 'href="?page=2"' in html
    assert html.count("<option ") == 240  # every version, on both sides of the compare form
    oldest = client.get(f"/blogs/notes/posts/{post.pk}/history/?page=3").content.decode()
    assert oldest.count('<li class="revision">') == 20
    assert "Version 1</span>" in oldest and ">Restore the version before it</button>" in oldest
    assert len(html) < 60_000  # no revision's text is on the page


@pytest.mark.parametrize("role", ["owner", "editor"])
def test_revert(team, role):
    post = make_post(team.blog, "Original", "Original body")
    browser(team.author).post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Vandalised", "body": "spam"})
    update = PostRevision.objects.get(action="update")
    response = browser(team.user(role)).post(f"/blogs/notes/posts/{post.pk}/revert/{update.pk}/")
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/posts/{post.pk}/history/"
    post.refresh_from_db()
    assert (post.title, post.slug, post.body) == ("Original", "original", "Original body")
    rev = PostRevision.objects.first()
    assert (rev.action, rev.user, rev.via_assistant, rev.before["title"], rev.after["title"]) == (
        "revert",
        team.user(role),
        False,
        "Vandalised",
        "Original",
    )


def test_restoring_only_a_body_keeps_the_posts_address(team):
    """As a body-only edit does (`services.post_update`): the post's public address changes only with
    its title, even when the address its title first asked for has come free since."""
    first = make_post(team.blog, "Walk", "First walk.")
    second = make_post(team.blog, "Walk, again", "Second walk.")
    Post.objects.filter(pk=second.pk).update(title="Walk", slug="walk-2")  # named as the first was
    client = browser(team.owner)
    client.post(f"/blogs/notes/posts/{second.pk}/edit/", {"title": "Walk", "body": "Rewritten."})
    client.post(f"/blogs/notes/posts/{first.pk}/delete/")  # "walk" is free again
    update = PostRevision.objects.get(post=second, action="update")
    client.post(f"/blogs/notes/posts/{second.pk}/revert/{update.pk}/")
    second.refresh_from_db()
    assert (second.title, second.slug, second.body) == ("Walk", "walk-2", "Second walk.")


@pytest.mark.parametrize("role", ["author", "viewer", "outsider"])
def test_revert_by_others_is_404(team, role):
    post = make_post(team.blog, "Original", "Original body")
    browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Changed", "body": "x"})
    update = PostRevision.objects.get(action="update")
    before = everything()
    assert browser(team.user(role)).post(f"/blogs/notes/posts/{post.pk}/revert/{update.pk}/").status_code == 404
    assert everything() == before


def test_a_creation_cannot_be_reverted(team):
    client = browser(team.owner)
    client.post("/blogs/notes/posts/new/", {"title": "Fresh", "body": "b"})
    post = Post.objects.get()
    created = PostRevision.objects.get()
    before = everything()
    response = client.post(f"/blogs/notes/posts/{post.pk}/revert/{created.pk}/", follow=True)
    assert "That revision can&#x27;t be restored." in response.content.decode()
    assert everything() == before


def test_revert_with_another_posts_revision_is_404(team):
    a = make_post(team.blog, "A")
    b = make_post(team.blog, "B")
    client = browser(team.owner)
    client.post(f"/blogs/notes/posts/{a.pk}/edit/", {"title": "A2", "body": ""})
    rev = PostRevision.objects.get(post=a)
    before = everything()
    assert client.post(f"/blogs/notes/posts/{b.pk}/revert/{rev.pk}/").status_code == 404
    assert everything() == before


# The assistant panel ----------------------------------------------------------------------------------------------


def test_opening_the_blog_page_writes_nothing(team):
    """A GET never creates a chat: the form is ready, and the first message creates the chat."""
    set_consent(team.editor, team.blog, [READ])
    client = browser(team.editor)
    before = everything()
    html = client.get("/blogs/notes/").content.decode()
    assert everything() == before and not Session.objects.exists()
    assert 'hx-post="/blogs/notes/chats/send"' in html and '<textarea id="chat-text" name="text"' in html
    assert '<p class="grant">Can read ·' in html


def test_the_first_message_creates_the_chat_and_points_the_form_at_it(team, script):
    script([[{"kind": "text", "text": "Hello."}, {"kind": "done", "stop_reason": "end_turn"}]])
    client = browser(team.editor)
    response = client.post("/blogs/notes/chats/send", {"text": "hi there"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    [chat] = Session.objects.filter(user=team.editor)
    assert chat.blog_link.blog == team.blog
    assert list(chat.messages.filter(role="user").values_list("position", flat=True)) == [0]
    html = response.content.decode()
    assert "sse-connect" in html and "hi there" in html
    assert '<span class="typing" role="status" aria-label="The assistant is answering">' in html  # announced
    tags = dict((a.get("id"), a) for _, a in tags_of(html) if a.get("id"))
    assert tags["chat-form"]["hx-swap-oob"] == "true"
    assert tags["chat-form"]["hx-post"] == f"/chat/{chat.pk}/send"
    assert tags["chat-stop"]["hx-post"] == f"/chat/{chat.pk}/stop"
    assert f'hx-post="/chat/{chat.pk}/send"' in client.get("/blogs/notes/").content.decode()  # resumed


@pytest.mark.parametrize("text", ["", "   ", "x" * 20_001])
def test_a_bad_first_message_creates_no_chat(team, text):
    response = browser(team.editor).post("/blogs/notes/chats/send", {"text": text})
    assert response.status_code == 200 and "up to 20,000 characters" in response.content.decode()
    assert not Session.objects.exists()


def test_a_rate_limited_first_message_creates_no_chat(team, settings, script):
    script([[{"kind": "text", "text": "ok"}, {"kind": "done", "stop_reason": "end_turn"}]])
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    client = browser(team.editor)
    assert "sse-connect" in client.post("/blogs/notes/chats/send", {"text": "one"}).content.decode()
    refused = client.post("/blogs/notes/chats/send", {"text": "two"}).content.decode()
    assert "too quickly" in refused and "sse-connect" not in refused
    assert Session.objects.count() == 1


def test_two_first_messages_from_pages_drawn_with_no_chat_make_one_chat(team, script):
    """Two tabs showing no chat, both sending their first message (the second before it heard of the
    first's chat): the second goes to the chat the first made, answered with that chat drawn again
    (both messages, both answers), its form and the page's stream naming it. Before, two chats."""
    script([say("One."), say("Two.")])
    client = browser(team.editor)
    first = client.post("/blogs/notes/chats/send", {"text": "from tab A", "drawn": ""}, HTTP_HX_REQUEST="true")
    second = client.post("/blogs/notes/chats/send", {"text": "from tab B", "drawn": ""}, HTTP_HX_REQUEST="true")
    [chat] = Session.objects.filter(user=team.editor)
    assert "from tab A" in first.content.decode()
    said = chat.messages.filter(role="user", parts__type="text").order_by("position").values_list("parts__text")
    assert [text for (text,) in said] == ["from tab A", "from tab B"]
    html = second.content.decode()
    assert second["HX-Reswap"] == "innerHTML"
    assert html.index("from tab A") < html.index("One.") < html.index("from tab B") < html.index("Two.")
    tags = dict((a.get("id"), a) for _, a in tags_of(html) if a.get("id"))
    assert tags["chat-form"]["hx-post"] == f"/chat/{chat.pk}/send" and "data-keep-typed" not in tags["chat-form"]
    assert tags["page-stream"]["sse-connect"] == f"/blogs/notes/events/?chat={chat.pk}"


@pytest.mark.django_db(transaction=True)
def test_two_first_messages_sent_at_the_same_moment_make_one_chat(team, script, monkeypatch):
    """The same two first messages at once, each request in a thread of its own: the one deciding holds
    the person's seat (PostgreSQL: its row locked; SQLite: the write lock), so the other finds its chat.
    Each would-be new chat waits for the other at a barrier (given up after a moment): without the lock
    both get there, and two chats are made."""
    script([say("One."), say("Two.")])
    both_deciding = threading.Barrier(2, timeout=2)

    def start_when_both_decide(*args, **kwargs):
        try:
            both_deciding.wait()
        except threading.BrokenBarrierError:
            pass  # (the other request waits on the lock, or has decided already)
        return start_session(*args, **kwargs)

    monkeypatch.setattr(chat_panel, "start_session", start_when_both_decide)
    answers: list[str] = []

    def send(text: str) -> None:
        try:
            data = {"text": text, "drawn": ""}
            answer = browser(team.editor).post("/blogs/notes/chats/send", data, HTTP_HX_REQUEST="true")
            assert answer.status_code == 200
            answers.append(answer.content.decode())
        finally:
            connections.close_all()

    tabs = [threading.Thread(target=send, args=(text,)) for text in ("from tab A", "from tab B")]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join(30)
    assert len(answers) == 2
    assert Session.objects.filter(user=team.editor).count() == 1, connection.vendor
    # (each message went into it, or met the other's answer still running and waits in its box)
    kept = sum("data-kept" in answer for answer in answers)
    assert Message.objects.filter(role="user").count() + kept == 2 and kept < 2


def test_a_first_message_meeting_the_other_tabs_answer_still_running_waits_in_the_box(team, script):
    """The other tab's first message went first and its answer runs: the chat is drawn with it followed,
    the words wait in the box (`data-kept`, the form `data-keep-typed`), and no second chat is made."""
    client = browser(team.editor)
    chat = blog_chat(team.editor, team.blog)
    claim(chat)  # (its first answer running)
    answer = client.post("/blogs/notes/chats/send", {"text": "from tab B", "drawn": ""}, HTTP_HX_REQUEST="true")
    html = answer.content.decode()
    assert Session.objects.filter(user=team.editor).count() == 1 and not chat.messages.exists()
    assert answer["HX-Reswap"] == "innerHTML" and "data-kept" in html and "still answering" in html
    assert 'sse-close="end"' in html  # (the running answer followed)
    tags = dict((a.get("id"), a) for _, a in tags_of(html) if a.get("id"))
    assert tags["chat-form"]["hx-post"] == f"/chat/{chat.pk}/send" and "data-keep-typed" in tags["chat-form"]


def test_a_first_message_drawn_with_the_latest_chat_or_not_saying_makes_a_new_one(team, script):
    """Only a chat newer than the page knew joins: a page drawn with the latest (`drawn` its id), or a
    client not saying what it was drawn with, starts a chat of its own, as before."""
    script([say("One."), say("Two.")])
    client = browser(team.editor)
    known = blog_chat(team.editor, team.blog)
    client.post("/blogs/notes/chats/send", {"text": "knew it", "drawn": str(known.pk)})
    client.post("/blogs/notes/chats/send", {"text": "does not say"})
    assert Session.objects.filter(user=team.editor).count() == 3 and not known.messages.exists()


def test_a_first_message_past_the_rate_limit_never_creates_a_chat(team, settings, script):
    """The limit is asked before the chat is made: a refused first message writes no chat to delete again."""
    script([[{"kind": "text", "text": "ok"}, {"kind": "done", "stop_reason": "end_turn"}]])
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    client = browser(team.editor)
    client.post("/blogs/notes/chats/send", {"text": "one"})
    with CaptureQueriesContext(connection) as queries:
        refused = client.post("/blogs/notes/chats/send", {"text": "two"}).content.decode()
    assert "too quickly" in refused
    table = Session._meta.db_table
    assert [q["sql"] for q in queries if q["sql"].startswith(f'INSERT INTO "{table}"')] == []


@pytest.mark.parametrize("model_images", [True, False])
def test_a_first_message_whose_files_are_refused_never_creates_a_chat(team, settings, model_images):
    """The files are checked before the chat is made: refused (a program named .png; an image for a model
    that takes none), the message writes no chat, so none is deleted again, and takes no rate slot."""
    settings.AGENT_MODEL_IMAGES = model_images
    attached = ("setup.png", files.exe_as_png()) if model_images else ("beach.png", files.png())
    data = {"text": "look", "drawn": "", "files": [SimpleUploadedFile(*attached)]}
    with CaptureQueriesContext(connection) as queries:
        refused = browser(team.editor).post("/blogs/notes/chats/send", data, HTTP_HX_REQUEST="true")
    said = refused.content.decode()
    assert (
        refused.status_code == 200 and ("can&#x27;t be attached" if model_images else "can&#x27;t read images") in said
    )
    table = Session._meta.db_table
    written = [q["sql"] for q in queries if q["sql"].startswith((f'INSERT INTO "{table}"', f'DELETE FROM "{table}"'))]
    assert written == [] and not Session.objects.exists() and not RateEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_first_message_joining_while_another_tabs_files_are_refused_is_answered(team, script, monkeypatch):
    """Two tabs showing no chat: tab A's first message has files that are refused, tab B's is sent while
    A's are being checked. B's goes into a chat that stays. Before, A made a chat first, B joined it (the
    panel's latest), A's refusal then deleted it, and B's message failed (a 500)."""
    script([say("Hello.")])
    a_checking, b_decided, a_answered = threading.Event(), threading.Event(), threading.Event()
    real_check, real_decide = intake.check_uploads, chat_panel._chat_for_first_message

    def check_while_b_decides(*args, **kwargs):
        a_checking.set()
        b_decided.wait(5)
        return real_check(*args, **kwargs)

    def decide_then_wait_for_a(*args, **kwargs):
        found = real_decide(*args, **kwargs)
        if threading.current_thread().name == "tab B":
            b_decided.set()
            a_answered.wait(5)
        return found

    monkeypatch.setattr(intake, "check_uploads", check_while_b_decides)
    monkeypatch.setattr(chat_panel, "_chat_for_first_message", decide_then_wait_for_a)
    answers: dict[str, int] = {}

    def tab_a() -> None:
        try:
            data = {"text": "look", "drawn": "", "files": [SimpleUploadedFile("setup.png", files.exe_as_png())]}
            answers["A"] = (
                browser(team.editor).post("/blogs/notes/chats/send", data, HTTP_HX_REQUEST="true").status_code
            )
        finally:
            a_answered.set()
            connections.close_all()

    def tab_b() -> None:
        try:
            a_checking.wait(5)
            data = {"text": "from tab B", "drawn": ""}
            answers["B"] = (
                browser(team.editor).post("/blogs/notes/chats/send", data, HTTP_HX_REQUEST="true").status_code
            )
        finally:
            b_decided.set()
            connections.close_all()

    tabs = [threading.Thread(target=tab_a, name="tab A"), threading.Thread(target=tab_b, name="tab B")]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join(30)
    assert answers == {"A": 200, "B": 200}, connection.vendor
    [chat] = Session.objects.filter(user=team.editor)
    assert list(chat.messages.filter(role="user", parts__type="text").values_list("parts__text", flat=True)) == [
        "from tab B"
    ]


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_the_first_message_is_refused_to_those_who_may_not_summon(team, role):
    assert browser(team.user(role)).post("/blogs/notes/chats/send", {"text": "hi"}).status_code == 404
    Seat.objects.filter(user=team.author).update(may_use_assistant=False)
    assert browser(team.author).post("/blogs/notes/chats/send", {"text": "hi"}).status_code == 404
    assert not Session.objects.exists()


def test_latest_chat_is_shown_again_and_earlier_ones_reachable(team):
    set_consent(team.editor, team.blog, [READ])
    client = browser(team.editor)
    first = blog_chat(team.editor, team.blog)
    html = client.get("/blogs/notes/").content.decode()
    assert f'hx-post="/chat/{first.pk}/send"' in html
    assert '<p class="grant">Can read ·' in html  # the grant in plain words, not scope names
    client.get("/blogs/notes/")
    assert Session.objects.filter(user=team.editor).count() == 1  # a reload resumes, it does not start anew
    response = client.post("/blogs/notes/chats/new/")
    second = Session.objects.filter(user=team.editor).exclude(pk=first.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/?chat={second.pk}"
    assert f'hx-post="/chat/{second.pk}/send"' in client.get("/blogs/notes/").content.decode()
    assert f'hx-post="/chat/{first.pk}/send"' in client.get(f"/blogs/notes/?chat={first.pk}").content.decode()


def earlier_chats(html: str) -> list[tuple[str, str, str]]:
    """(chat id, label, date) of each link in the panel's list of earlier chats."""
    start = html.index('<details class="history">')
    found = re.findall(
        r'<a href="\?chat=([0-9a-f-]+)"[^>]*><span class="chat-label"(?: data-untitled)?>([^<]*)</span> '
        r'<time class="meta" datetime="[^"]+">([^<]+)</time></a>',
        html[start : html.index("</details>", start)],
    )
    return [(sid, label, when) for sid, label, when in found]


def test_earlier_chats_are_labelled_by_their_first_words_and_date(team):
    def chat(*texts: str, attach: bool = False) -> Session:
        session = blog_chat(team.editor, team.blog)
        for i, text in enumerate(texts):
            parts = [{"type": "text", "text": text}] if text else []
            if attach:
                parts.append({"type": "image", "media_type": "image/png", "media_ref": "x/a.png", "name": "a.png"})
            add_message(Run(session), "user" if i % 2 == 0 else "assistant", parts)
        return session

    long = chat(
        "Draft a post about the\n\nmorning light over the river, with three   photos and a short caption", "Ok."
    )
    hostile = chat("<script>alert(1)</script> & more", "Sure.", "a second message")
    only_files = chat("", attach=True)
    blog_chat(team.editor, team.blog)  # (nothing said, and not the latest: not listed)
    titled = chat("whatever was said")
    Session.objects.filter(pk=titled.pk).update(title="Named chat")
    waving = chat("Say hello to everyone who came to the picnics 👋🏽 and then some more")  # 👋🏽: the 47th and 48th
    html = browser(team.editor).get(f"/blogs/notes/?chat={hostile.pk}").content.decode()
    labels = {sid: label for sid, label, _when in earlier_chats(html)}
    assert labels == {
        str(long.pk): "Draft a post about the morning light over the r…",
        str(hostile.pk): "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more",
        str(only_files.pk): "Untitled chat",  # (something said, but no words: nothing names it)
        str(titled.pk): "Named chat",
        str(waving.pk): "Say hello to everyone who came to the picnics…",  # not 👋 without its skin tone
    }
    when = {sid: w for sid, _label, w in earlier_chats(html)}
    created = timezone.localtime(Session.objects.get(pk=long.pk).created_at)
    assert when[str(long.pk)] == date_format(created, "M j, H:i") + " UTC"  # (no zone from the browser yet)
    assert f'<a href="?chat={hostile.pk}" aria-current="true">' in html
    assert "<script>alert(1)" not in html


def test_a_chat_with_nothing_said_is_listed_only_where_it_is_the_one_shown(team):
    """A chat opened by "New chat" and left with nothing said stayed in every list, one more "Untitled
    chat" a person could not tell from the others. It is listed where it is the one shown: named by a
    page's link, or the latest when none is named (the one the panel resumes, and the chats page's
    way back to it); nowhere else, not even while it is the latest. It is not deleted: its link opens it."""

    def chat(said: bool) -> Session:
        session = blog_chat(team.editor, team.blog)
        if said:
            add_message(Run(session), "user", [{"type": "text", "text": f"said in {session.pk}"}])
        return session

    said, left, said_too, fresh = chat(True), chat(False), chat(True), chat(False)  # (fresh: the latest)
    client = browser(team.editor)

    def listed(url: str) -> set[str]:
        return set(re.findall(r'href="[^"]*\?chat=([0-9a-f-]+)"', client.get(url).content.decode()))

    kept = {str(said.pk), str(said_too.pk)}
    assert listed(f"/blogs/notes/?chat={said.pk}") == kept
    assert listed(f"/blogs/notes/chats/list?chat={said_too.pk}") == kept
    assert listed("/blogs/notes/") == kept | {str(fresh.pk)}  # (fresh shown: the panel resumes the latest)
    assert f'hx-post="/chat/{fresh.pk}/send"' in client.get("/blogs/notes/").content.decode()
    assert listed(f"/blogs/notes/chats/list?chat={fresh.pk}") == kept | {str(fresh.pk)}
    assert listed("/blogs/notes/chats/") == kept | {str(fresh.pk)}
    assert listed(f"/blogs/notes/?chat={left.pk}") == kept | {str(left.pk)}  # (taken up again by its link)
    assert f'hx-post="/chat/{left.pk}/send"' in client.get(f"/blogs/notes/?chat={left.pk}").content.decode()
    later = chat(True)
    assert listed(f"/blogs/notes/?chat={said.pk}") == kept | {str(later.pk)}
    assert Session.objects.filter(pk__in=[left.pk, fresh.pk]).count() == 2  # (never deleted)


@pytest.mark.parametrize("shown", ["named", "latest"])
def test_the_list_of_earlier_chats_is_one_query_however_many_chats(team, shown, django_assert_num_queries):
    """What was said in each chat, and which is the latest, are asked in the query that reads the list
    (an EXISTS and a subquery), never chat by chat: one query for 2 chats as for 8."""
    chats = []
    for n in range(8):
        session = blog_chat(team.editor, team.blog)
        if n % 2:
            add_message(Run(session), "user", [{"type": "text", "text": f"said {n}"}])
        chats.append(session)
    for count in (2, 8):
        own = chat_panel.blog_sessions(team.editor, team.blog).filter(pk__in=[c.pk for c in chats[:count]])
        named = str(chats[0].pk) if shown == "named" else ""
        with django_assert_num_queries(1):
            found = chat_panel.labelled(chat_panel.listed(own, named)[: chat_panel.PANEL_CHATS + 1])
        expected = {str(c.pk) for c in chats[1:count:2]} | {
            str(chats[0].pk) if shown == "named" else str(chats[count - 1].pk)
        }
        assert {str(s.pk) for s in found} == expected


def test_new_chat_counts_under_the_message_rate_limit(team, settings):
    settings.AGENT_MESSAGES_PER_MINUTE = 2
    client = browser(team.editor)
    for _ in range(2):
        assert client.post("/blogs/notes/chats/new/").status_code == 302
    response = client.post("/blogs/notes/chats/new/", follow=True)
    assert Session.objects.count() == 2
    assert "You&#x27;re sending messages too quickly. Try again in " in response.content.decode()  # (said once)


def test_a_refused_new_chat_from_the_page_answers_the_notice_for_its_chat_log(team, settings):
    """From the page (htmx) a new chat is a client redirect; refused, the page stays and shows why."""
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    client = browser(team.editor)
    opened = client.post("/blogs/notes/chats/new/", HTTP_HX_REQUEST="true")
    assert opened.status_code == 200 and opened["HX-Redirect"] == f"/blogs/notes/?chat={Session.objects.get().pk}"
    refused = client.post("/blogs/notes/chats/new/", HTTP_HX_REQUEST="true")
    assert refused.status_code == 200 and "HX-Redirect" not in refused
    html = refused.content.decode()
    assert html.startswith('<p class="chat-error notice">You&#x27;re sending messages too quickly. <span class="retry"')
    assert Session.objects.count() == 1


def test_someone_elses_chat_id_is_ignored(team):
    theirs = blog_chat(team.owner, team.blog)
    html = browser(team.editor).get(f"/blogs/notes/?chat={theirs.pk}").content.decode()
    assert str(theirs.pk) not in html


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_new_chat_refused_to_those_who_may_not_summon(team, role):
    assert browser(team.user(role)).post("/blogs/notes/chats/new/").status_code == 404
    Seat.objects.filter(user=team.author).update(may_use_assistant=False)
    assert browser(team.author).post("/blogs/notes/chats/new/").status_code == 404
    assert Session.objects.count() == 0


# Members ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_members_screen_is_owner_only(team, role):
    client = browser(team.user(role))
    before = everything()
    assert client.get("/blogs/notes/members/").status_code == 404
    assert (
        client.post("/blogs/notes/members/", {"action": "add", "username": role, "role": "editor"}).status_code == 404
    )
    assert (
        client.post(
            "/blogs/notes/members/", {"action": "update", "seat": team.seat("viewer").pk, "role": "editor"}
        ).status_code
        == 404
    )
    assert everything() == before


def test_owner_adds_a_member_by_username(team, django_user_model):
    client = browser(team.owner)
    html = client.get("/blogs/notes/members/").content.decode()
    assert "editor" in html and "viewer" in html
    response = client.post("/blogs/notes/members/", {"action": "add", "username": " outsider ", "role": "author"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/members/"
    seat = Seat.objects.get(blog=team.blog, user=team.outsider)
    assert (seat.role, seat.may_use_assistant) == ("author", False)
    assert browser(team.outsider).get("/blogs/notes/").status_code == 200


@pytest.mark.parametrize(
    "data",
    [
        {"action": "add", "username": "nobody", "role": "author"},
        {"action": "add", "username": "editor", "role": "viewer"},  # already a member
        {"action": "add", "username": "outsider", "role": "owner"},
        {"action": "add", "username": "outsider", "role": "superuser"},
        {"action": "add", "username": "outsider\x00", "role": "author"},  # (was a 500 on PostgreSQL)
    ],
)
def test_bad_member_additions_change_nothing(team, data):
    before = everything()
    response = browser(team.owner).post("/blogs/notes/members/", data)
    assert response.status_code == 200  # the form again, with what was typed and why it failed
    assert everything() == before


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"username": " nobody ", "role": "author"}, "There is no user named “nobody”."),
        ({"username": "editor", "role": "viewer"}, "editor is already a member."),
        ({"username": "outsider", "role": "owner"}, "Choose editor, author or viewer."),
        ({"username": "  ", "role": "author"}, "Enter the username of the person to add."),
        ({"username": "<b>x</b>", "role": "author"}, "There is no user named “&lt;b&gt;x&lt;/b&gt;”."),
    ],
)
def test_a_failed_addition_keeps_the_name_and_says_why_beside_the_field(team, data, error):
    html = browser(team.owner).post("/blogs/notes/members/", {"action": "add", **data}).content.decode()
    form = html[html.index('<form method="post" class="add-member"') :]
    form = form[: form.index("</form>")]
    field = next(a for t, a in tags_of(form) if t == "input" and a.get("name") == "username")
    assert field["value"] == data["username"].strip()
    assert (field.get("aria-invalid"), field.get("aria-describedby"), "autofocus" in field) == (
        "true",
        "add-member-error",
        True,
    )
    assert f'<p class="error field-error" id="add-member-error" role="alert">{error}</p>' in form
    assert '<ul class="flash">' not in html  # said once, beside the field
    if data["role"] != "owner":
        chosen = re.search(r'<option value="(\w+)" selected>', form)
        assert chosen is not None and chosen.group(1) == data["role"]


def test_a_fresh_add_form_is_empty_and_unmarked(team):
    html = browser(team.owner).get("/blogs/notes/members/").content.decode()
    field = next(a for t, a in tags_of(html) if t == "input" and a.get("name") == "username")
    assert field["value"] == "" and "aria-invalid" not in field and "autofocus" not in field
    assert "add-member-error" not in html


def member_rows(html: str) -> dict[str, str]:
    """username → the HTML of the member's table row."""
    body = html[html.index("<tbody>") : html.index("</tbody>")]
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr id="member-\d+">\s*<th scope="row"[^>]*>([^<]*)</th>.*?</tr>', body, re.S)
    }


def test_the_members_screen_says_its_assistant_box_does_not_stop_a_members_connected_clients(team):
    """Unticking "may use the assistant" stops the built-in assistant only; a client the member connected
    goes on acting within their role. The screen let an owner believe the box stopped both."""
    connected = Consent.objects.create(
        user=team.editor, blog=team.blog, client="c1", client_name="Claude desktop", scopes=[READ, WRITE]
    )
    set_consent(team.editor, team.blog, [READ, WRITE])
    seat = team.seat("editor")
    browser(team.owner).post(
        "/blogs/notes/members/", {"action": "update", "seat": seat.pk, "role": Seat.EDITOR}
    )  # the box left unticked
    seat.refresh_from_db()
    assert grants.assistant(team.editor, team.blog).scopes == frozenset()
    assert grants.client_scopes(seat, connected) == {READ, WRITE}
    html = browser(team.owner).get("/blogs/notes/members/").content.decode()
    assert (
        "This covers the built-in assistant only: a client a member connects themselves (Claude or another MCP"
        " client) can still act for them within their role until they revoke it or you remove them."
    ) in html


def test_members_table_has_one_cell_per_column(team):
    html = browser(team.owner).get("/blogs/notes/members/").content.decode()
    head = html[html.index("<thead>") : html.index("</thead>")]
    assert len(re.findall(r"<th\b", head)) == 4
    rows = member_rows(html)
    assert sorted(rows) == ["author", "editor", "owner", "viewer"]
    for name, row in rows.items():
        assert len(re.findall(r"<t[hd]\b", row)) == 4, name
        assert "colspan" not in row, name
        if name == "owner":
            continue
        seat = team.seat(name)
        form_id = f"seat-{seat.pk}"
        controls = [a for t, a in tags_of(row) if t in ("select", "input", "button") and a.get("type") != "hidden"]
        assert all(a.get("form") == form_id for a in controls if a.get("name") in ("role", "may_use_assistant"))
        assert f'<form method="post" id="{form_id}">' in row


def test_each_members_controls_name_the_member(team):
    rows = member_rows(browser(team.owner).get("/blogs/notes/members/").content.decode())
    for name in ("author", "editor", "viewer"):
        seat = team.seat(name)
        row = rows[name]
        assert f'aria-label="Role of {name}"' in row
        assert f'<span class="visually-hidden">{name} may use the assistant</span>' in row
        assert f'Save<span class="visually-hidden"> {name}</span></button>' in row
        assert (
            f'<a class="danger" href="/blogs/notes/members/{seat.pk}/remove/">'
            f'Remove<span class="visually-hidden"> {name}</span></a>'
        ) in row
    assert "(viewers can't)" in rows["viewer"] and "viewers can" not in rows["editor"]


def test_owner_changes_role_and_allows_the_assistant(team):
    client = browser(team.owner)
    seat = team.seat("viewer")
    client.post(
        "/blogs/notes/members/", {"action": "update", "seat": seat.pk, "role": "editor", "may_use_assistant": "on"}
    )
    seat.refresh_from_db()
    assert (seat.role, seat.may_use_assistant) == ("editor", True)
    client.post("/blogs/notes/members/", {"action": "update", "seat": seat.pk, "role": "author"})
    seat.refresh_from_db()
    assert (seat.role, seat.may_use_assistant) == ("author", False)


def test_removing_a_member_drops_their_grants_so_re_adding_restores_nothing(team, django_user_model):
    set_consent(team.editor, team.blog, ALL)
    Consent.objects.create(user=team.editor, blog=team.blog, client="some-app", scopes=[READ])
    kept = set_consent(team.author, team.blog, [READ])  # another member's grant stays
    client = browser(team.owner)
    client.post(f"/blogs/notes/members/{team.seat('editor').pk}/remove/")
    assert not Consent.objects.filter(user=team.editor, blog=team.blog).exists()
    client.post("/blogs/notes/members/", {"action": "add", "username": "editor", "role": "editor"})
    Seat.objects.filter(blog=team.blog, user=team.editor).update(may_use_assistant=True)
    assert grants.assistant(team.editor, team.blog).scopes == frozenset()
    assert Consent.objects.filter(pk=kept.pk).exists()


def test_a_seat_deleted_in_the_admin_drops_its_grants_too(team, django_user_model):
    set_consent(team.editor, team.blog, ALL)
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    seat = team.seat("editor")
    response = browser(admin).post(f"/admin/blog/seat/{seat.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Consent.objects.filter(user=team.editor, blog=team.blog).exists()


def test_viewer_cannot_be_allowed_the_assistant(team):
    seat = team.seat("editor")
    browser(team.owner).post(
        "/blogs/notes/members/", {"action": "update", "seat": seat.pk, "role": "viewer", "may_use_assistant": "on"}
    )
    seat.refresh_from_db()
    assert (seat.role, seat.may_use_assistant) == ("viewer", False)


def test_owner_seat_and_other_blogs_seats_cannot_be_changed(team, other_team):
    client = browser(team.owner)
    before = everything()
    client.post("/blogs/notes/members/", {"action": "update", "seat": team.seat("owner").pk, "role": "viewer"})
    client.post("/blogs/notes/members/", {"action": "remove", "seat": team.seat("owner").pk})
    client.post(
        "/blogs/notes/members/",
        {"action": "update", "seat": other_team.seat("viewer").pk, "role": "editor", "may_use_assistant": "on"},
    )
    client.post("/blogs/notes/members/", {"action": "update", "seat": team.seat("author").pk, "role": "owner"})
    client.post("/blogs/notes/members/", {"action": "update", "seat": "1e3", "role": "editor"})
    assert client.post(f"/blogs/notes/members/{team.seat('owner').pk}/remove/").status_code == 404
    assert client.post(f"/blogs/notes/members/{other_team.seat('viewer').pk}/remove/").status_code == 404
    assert client.get(f"/blogs/notes/members/{other_team.seat('viewer').pk}/remove/").status_code == 404
    assert everything() == before


def test_owner_removes_a_member(team):
    seat = team.seat("author")
    response = browser(team.owner).post(f"/blogs/notes/members/{seat.pk}/remove/")
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/members/"
    assert not Seat.objects.filter(pk=seat.pk).exists()
    assert browser(team.author).get("/blogs/notes/").status_code == 404


def test_removing_a_member_asks_first(team):
    seat = team.seat("author")
    client = browser(team.owner)
    before = everything()
    response = client.get(f"/blogs/notes/members/{seat.pk}/remove/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Remove author from Notes?</h1>" in html
    assert '<button type="submit" class="danger">Remove author</button>' in html
    assert '<a href="/blogs/notes/members/">Cancel</a>' in html
    assert 'name="csrfmiddlewaretoken"' in html
    # The row's old one-click form asks first too: it leads to the question and removes nobody.
    response = client.post("/blogs/notes/members/", {"action": "remove", "seat": seat.pk})
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/members/{seat.pk}/remove/"
    assert client.post("/blogs/notes/members/", {"action": "remove", "seat": "x"}).status_code == 302
    assert everything() == before


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_only_the_owner_may_remove_members(team, role):
    seat = team.seat("viewer" if role != "viewer" else "author")
    before = everything()
    client = browser(team.user(role))
    assert client.get(f"/blogs/notes/members/{seat.pk}/remove/").status_code == 404
    assert client.post(f"/blogs/notes/members/{seat.pk}/remove/").status_code == 404
    assert everything() == before


# The Clients screen ----------------------------------------------------------------------------------------------


def checkboxes(html: str) -> dict[str, tuple[bool, bool]]:
    """scope → (checked, disabled) of the Clients form's checkboxes."""
    return {
        a["value"]: ("checked" in a, "disabled" in a)
        for t, a in tags_of(html)
        if t == "input" and a.get("name") == "scopes"
    }


def test_clients_screen_shows_only_my_own_grant(team):
    set_consent(team.owner, team.blog, ALL)
    set_consent(team.author, team.blog, [READ])
    html = browser(team.author).get("/blogs/notes/clients/").content.decode()
    assert checkboxes(html) == {
        READ: (True, False),
        WRITE: (False, False),
        PUBLISH: (False, True),
        DELETE: (False, True),
    }
    assert '<span id="effective-scopes">can read</span>' in html
    assert "posts:" not in re.sub(r"<input[^>]*>", "", html)  # scope names only in the form's values
    html = browser(team.editor).get("/blogs/notes/clients/").content.decode()
    assert checkboxes(html) == {s: (False, False) for s in ALL}
    assert '<span id="effective-scopes">nothing</span>' in html
    assert "Not granted yet." in html
    html = browser(team.owner).get("/blogs/notes/clients/").content.decode()
    assert checkboxes(html) == {s: (True, False) for s in ALL}
    assert '<span id="effective-scopes">can read, draft, publish, delete</span>' in html


def assistant_card(html: str) -> str:
    start = html.index('id="assistant-grant"')
    return html[start : html.index("</form>", start)]


def test_clients_screen_for_viewer(team):
    html = browser(team.viewer).get("/blogs/notes/clients/").content.decode()
    card = assistant_card(html)
    assert (
        "Viewers can't use the assistant, so there is nothing to allow it here. "
        "A client you connect yourself (below) can still read for you."
    ) in card
    assert checkboxes(html) == {}  # nothing offered that could never take effect
    assert "<button" not in card and "Not granted yet." not in card
    assert '<span id="effective-scopes">nothing</span>' in card


def test_a_scope_beyond_the_role_says_who_may_grant_it(team):
    html = browser(team.author).get("/blogs/notes/clients/").content.decode()
    labels = dict(re.findall(r'<input type="checkbox" name="scopes" value="([^"]+)"[^>]*>(.*?)</label>', html))
    assert labels == {
        READ: " Read your posts and drafts",
        WRITE: " Create and edit drafts",
        PUBLISH: ' Publish and unpublish posts <span class="why-not">(only owners and editors can)</span>',
        DELETE: ' Delete posts <span class="why-not">(only owners and editors can)</span>',
    }


def test_a_viewers_earlier_grant_is_shown_unused_and_can_be_revoked(team):
    consent = set_consent(team.viewer, team.blog, [READ, WRITE])  # given while they were an editor
    client = browser(team.viewer)
    card = assistant_card(client.get("/blogs/notes/clients/").content.decode())
    assert "What you allowed it before (to read, draft) stays unused while you are a viewer" in card
    assert '<button type="submit" name="action" value="revoke" class="danger">Revoke all</button>' in card
    assert 'value="save"' not in card
    client.post("/blogs/notes/clients/", {"action": "revoke"})
    consent.refresh_from_db()
    assert consent.revoked_at is not None and consent.scopes == []


def test_chats_where_the_assistant_acted_are_named_by_their_first_words_and_when(team):
    consent = set_consent(team.editor, team.blog, [READ, WRITE])
    session = blog_chat(team.editor, team.blog)
    add_message(Run(session), "user", [{"type": "text", "text": "Draft a post about <the> spring issue"}])
    post = make_post(team.blog, "Spring")
    revision = assistant_changed(post, consent, session)
    html = browser(team.editor).get("/blogs/notes/clients/").content.decode()
    when = date_format(timezone.localtime(revision.created_at), "M j, H:i") + " UTC"  # (no zone from the browser yet)
    assert (
        f'<li><a href="/blogs/notes/?chat={session.pk}"><span class="chat-label">Draft a post about &lt;the&gt; spring'
        f' issue</span> <time class="meta" datetime="{revision.created_at.isoformat()}">{when}</time></a></li>'
    ) in html
    assert f"Chat {str(session.pk)[:8]}" not in html


def test_saving_my_grant_touches_nobody_elses(team):
    owners = set_consent(team.owner, team.blog, ALL)
    response = browser(team.editor).post("/blogs/notes/clients/", {"action": "save", "scopes": [READ, WRITE]})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/clients/"
    mine = Consent.objects.get(user=team.editor, blog=team.blog, client="")
    assert (mine.scopes, mine.revoked_at) == ([READ, WRITE], None)
    owners.refresh_from_db()
    assert (owners.scopes, owners.revoked_at) == (list(ALL), None)


@pytest.mark.parametrize("scopes", [[READ, PUBLISH], [DELETE], [READ, "admin:all"], ["posts:READ"]])
def test_scopes_beyond_the_seat_are_refused(team, scopes):
    set_consent(team.author, team.blog, [READ])
    before = everything()
    response = browser(team.author).post("/blogs/notes/clients/", {"action": "save", "scopes": scopes}, follow=True)
    assert "You can only grant what you can do yourself." in response.content.decode()
    assert everything() == before


def test_viewer_cannot_grant_write(team):
    browser(team.viewer).post("/blogs/notes/clients/", {"action": "save", "scopes": [READ, WRITE]})
    assert not Consent.objects.filter(user=team.viewer).exists()


def test_a_viewer_cannot_grant_the_assistant_even_read(team):
    before = everything()
    response = browser(team.viewer).post("/blogs/notes/clients/", {"action": "save", "scopes": [READ]}, follow=True)
    assert "Viewers can&#x27;t use the assistant, so there is nothing to allow it." in response.content.decode()
    assert everything() == before
    assert not Consent.objects.filter(user=team.viewer).exists()


def test_narrowing_bites_on_the_next_tool_call(team):
    set_consent(team.editor, team.blog, ALL)
    session = blog_chat(team.editor, team.blog)
    assert all(tool_available(session, n) for n in ("create_post", "publish_post", "delete_post", "list_posts"))
    browser(team.editor).post("/blogs/notes/clients/", {"action": "save", "scopes": [READ]})
    assert Consent.objects.get(user=team.editor).scopes == [READ]
    assert [
        n
        for n in (
            "create_post",
            "update_post",
            "publish_post",
            "unpublish_post",
            "delete_post",
            "list_posts",
            "get_post",
        )
        if tool_available(session, n)
    ] == ["list_posts", "get_post"]


@pytest.mark.parametrize("data", [{"action": "revoke"}, {"action": "save"}, {"action": "revoke", "scopes": [READ]}])
def test_revoking_bites_on_the_next_tool_call(team, data):
    set_consent(team.editor, team.blog, ALL)
    session = blog_chat(team.editor, team.blog)
    assert tool_available(session, "list_posts")
    browser(team.editor).post("/blogs/notes/clients/", data)
    consent = Consent.objects.get(user=team.editor)
    assert consent.revoked_at is not None and consent.scopes == []
    assert not any(tool_available(session, n) for n in ("list_posts", "get_post", "create_post", "delete_post"))
    html = browser(team.editor).get("/blogs/notes/clients/").content.decode()
    assert checkboxes(html) == {s: (False, False) for s in ALL}
    assert "Revoked " in html


def test_regrant_after_revoke(team):
    set_consent(team.editor, team.blog, ALL, revoked=True)
    session = blog_chat(team.editor, team.blog)
    browser(team.editor).post("/blogs/notes/clients/", {"action": "save", "scopes": [WRITE]})
    consent = Consent.objects.get(user=team.editor)
    assert (consent.scopes, consent.revoked_at) == ([WRITE], None)
    assert tool_available(session, "create_post") and not tool_available(session, "list_posts")


def assistant_changed(post: Post, consent: Consent, chat: Session) -> PostRevision:
    """A change the assistant made to `post` for the consent's person, in `chat`."""
    return PostRevision.objects.create(
        post=post,
        blog=post.blog,
        action="update",
        user=consent.user,
        via_assistant=True,
        consent=consent,
        chat_session=chat,
    )


def test_clients_screen_lists_each_chat_where_the_assistant_acted_once(team):
    consent = set_consent(team.owner, team.blog, ALL)
    first, second, idle = (blog_chat(team.owner, team.blog) for _ in range(3))
    post = make_post(team.blog)
    for session in (first, first, first, second, first):
        assistant_changed(post, consent, session)
    html = browser(team.owner).get("/blogs/notes/clients/").content.decode()
    links = re.findall(r'href="/blogs/notes/\?chat=([0-9a-f-]+)"', html)
    assert links == [str(first.pk), str(second.pk)]  # once each, most recently used first
    assert str(idle.pk) not in html


# Public pages -------------------------------------------------------------------------------------------------------


def test_anonymous_reader_sees_published_posts_only(team):
    make_post(team.blog, "Secret draft", "not yet")
    make_post(team.blog, "Out now", "# Hello\n\nPublic *words*.", published=True)
    client = browser()
    index = client.get("/read/notes/").content.decode()
    assert '<a href="/read/notes/out-now/">Out now</a>' in index
    assert "Secret draft" not in index
    response = client.get("/read/notes/out-now/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h2>Hello</h2>" in html and "<em>words</em>" in html
    assert client.get("/read/notes/secret-draft/").status_code == 404
    assert client.get("/read/nope/").status_code == 404


def test_post_of_another_blog_is_not_served_under_this_blog(team, other_team):
    make_post(other_team.blog, "Theirs", published=True)
    assert browser().get("/read/notes/theirs/").status_code == 404
    assert browser().get("/read/elsewhere/theirs/").status_code == 200


HOSTILE = """# Title

<script>alert('xss')</script>

<img src="x" onerror="alert(1)">

[click me](javascript:alert(2))

[sneaky](JaVaScRiPt:alert(3))

![pic](javascript:alert(4))

<a href="javascript:alert(5)" onclick="alert(6)">raw link</a>

<iframe src="https://evil.example"></iframe>

[ok](https://example.com/)
"""


def test_hostile_markdown_renders_harmless(team):
    make_post(team.blog, "Hostile", HOSTILE, published=True)
    html = browser().get("/read/notes/hostile/").content.decode()
    body = html.split('<div class="md">', 1)[1].split("</article>", 1)[0]
    tags = tags_of(body)
    assert not [t for t, _ in tags if t in ("script", "iframe", "object", "embed", "style")]
    for tag, attrs in tags:
        assert not [a for a in attrs if a.lower().startswith("on")], (tag, attrs)
        for key in ("href", "src"):
            assert not (attrs.get(key) or "").strip().lower().startswith("javascript:"), (tag, attrs)
    assert "<script" not in body.lower() and "<iframe" not in body.lower()
    assert ("a", {"href": "https://example.com/", "rel": "noopener noreferrer nofollow"}) in tags
    # No script tag anywhere on the page except the site's own static scripts.
    assert [a.get("src") for t, a in tags_of(html) if t == "script"] == [
        a.get("src") for t, a in tags_of(browser().get("/read/notes/").content.decode()) if t == "script"
    ]


def test_hostile_title_is_escaped_on_public_pages(team):
    make_post(team.blog, "<script>alert(1)</script>", published=True)
    post = Post.objects.get()
    for url in ("/read/notes/", f"/read/notes/{post.slug}/"):
        html = browser().get(url).content.decode()
        assert "<script>alert(1)</script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# CSRF -----------------------------------------------------------------------------------------------------------------


def state_changing_posts(team):
    draft = make_post(team.blog, "A draft")
    live = make_post(team.blog, "Live post", published=True)
    browser(team.owner).post(f"/blogs/notes/posts/{draft.pk}/edit/", {"title": "A draft v2", "body": "b"})
    rev = PostRevision.objects.get(action="update")
    session = blog_chat(team.owner, team.blog)
    set_consent(team.owner, team.blog, [READ])
    return [
        ("/blogs/notes/posts/new/", {"title": "Forged"}),
        (f"/blogs/notes/posts/{draft.pk}/edit/", {"title": "Forged", "body": "x"}),
        (f"/blogs/notes/posts/{draft.pk}/publish/", {}),
        (f"/blogs/notes/posts/{live.pk}/unpublish/", {}),
        (f"/blogs/notes/posts/{draft.pk}/delete/", {}),
        (f"/blogs/notes/posts/{draft.pk}/revert/{rev.pk}/", {}),
        ("/blogs/notes/members/", {"action": "add", "username": "outsider", "role": "editor"}),
        ("/blogs/notes/members/", {"action": "update", "seat": team.seat("viewer").pk, "role": "editor"}),
        (f"/blogs/notes/members/{team.seat('author').pk}/remove/", {}),
        ("/blogs/notes/clients/", {"action": "save", "scopes": list(ALL)}),
        ("/blogs/notes/clients/", {"action": "revoke"}),
        ("/blogs/notes/chats/new/", {}),
        ("/blogs/notes/chats/send", {"text": "forged first message"}),
        (f"/chat/{session.pk}/send", {"text": "forged message"}),
        (f"/chat/{session.pk}/stop", {}),
    ]


def test_csrf_is_enforced_on_every_form(team, script):
    script([[{"kind": "text", "text": "hi"}, {"kind": "done", "stop_reason": "end_turn"}]])
    posts = state_changing_posts(team)
    client = browser(team.owner, csrf=True)
    client.get("/blogs/notes/")  # sets the CSRF cookie; the token is simply not sent
    before = everything()
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert everything() == before, url
    # HTMX-style posts without the header are refused too.
    assert client.post(posts[2][0], HTTP_HX_REQUEST="true").status_code == 403
    assert everything() == before


def test_forms_work_with_the_token(team):
    client = browser(team.owner, csrf=True)
    client.get("/blogs/notes/posts/new/")
    token = client.cookies["csrftoken"].value
    response = client.post("/blogs/notes/posts/new/", {"title": "Legit", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert Post.objects.get().title == "Legit"
    post = Post.objects.get()
    response = client.post(f"/blogs/notes/posts/{post.pk}/publish/", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 302
    post.refresh_from_db()
    assert post.status == "published"


def test_the_assistant_panels_grant_line_is_read_again_as_it_stands(team):
    """Revoked on the Clients screen in another tab, the panel's "Can …" line said what the grant had
    been when the page loaded; the page reads it again (when an answer ends, when the tab is shown)."""
    set_consent(team.owner, team.blog, ALL)
    client = browser(team.owner)
    page = client.get("/blogs/notes/").content.decode()
    assert 'hx-get="/blogs/notes/chats/grant/"' in page
    assert "Can read, draft, publish, delete" in page
    client.post("/blogs/notes/clients/", {"action": "revoke"})
    line = client.get("/blogs/notes/chats/grant/", headers={"HX-Request": "true"})
    assert line.status_code == 200
    assert '<div id="grant-line"' in line.content.decode()
    assert "Can do nothing until you allow it · " in line.content.decode()
    # Asked by the page unprompted: signed out, or not one who may summon it, the page stays as it is.
    assert Client().get("/blogs/notes/chats/grant/", headers={"HX-Request": "true"}).status_code == 204
    assert browser(team.viewer).get("/blogs/notes/chats/grant/").status_code == 204
    assert browser(team.outsider).get("/blogs/notes/chats/grant/").status_code == 204


def test_the_pages_with_the_chat_and_the_post_list_are_never_kept_by_the_browser(team):
    """Back to them, the browser showed them as first loaded (an empty chat, a list of then)."""
    post = make_post(team.blog)
    client = browser(team.owner)
    for url in ("/blogs/notes/", f"/blogs/notes/posts/{post.pk}/edit/"):
        assert "no-store" in client.get(url)["Cache-Control"]


def test_every_older_chat_is_reachable_and_opens_by_its_link(team, other_team):
    """A year of chats: the panel lists the latest 20, links to a page of all of them, and `?chat=` of
    any of the person's own chats opens that chat (never another person's, nor another blog's)."""
    chats = [said_chat(team.editor, team.blog) for _ in range(23)]
    for i, chat in enumerate(chats):  # the first made is the oldest
        Session.objects.filter(pk=chat.pk).update(updated_at=timezone.now() - timezone.timedelta(hours=100 - i))
    oldest = chats[0]
    client = browser(team.editor)
    page = client.get("/blogs/notes/").content.decode()
    assert len(earlier_chats(page)) == 20 and str(oldest.pk) not in page
    assert 'href="/blogs/notes/chats/"' in page
    assert f'hx-post="/chat/{oldest.pk}/send"' in client.get(f"/blogs/notes/?chat={oldest.pk}").content.decode()
    listed = client.get("/blogs/notes/chats/").content.decode()
    assert f'href="/blogs/notes/?chat={oldest.pk}"' in listed and listed.count("/blogs/notes/?chat=") == 23
    theirs = blog_chat(team.author, team.blog)
    elsewhere = blog_chat(other_team.owner, other_team.blog)
    for foreign in (theirs, elsewhere):
        html = client.get(f"/blogs/notes/?chat={foreign.pk}").content.decode()
        assert str(foreign.pk) not in html and f'hx-post="/chat/{chats[-1].pk}/send"' in html
    assert client.get("/blogs/notes/?chat=not-a-uuid").status_code == 200
    assert browser(team.viewer).get("/blogs/notes/chats/").status_code == 404
    assert browser(team.outsider).get("/blogs/notes/chats/").status_code == 404


def test_older_chats_about_a_post_open_beside_its_editor(team):
    post = make_post(team.blog, "Long-lived")
    chats = [said_chat(team.editor, team.blog, post) for _ in range(22)]
    blog_chat(team.editor, team.blog)  # (a chat on the blog page is not one about the post)
    for i, chat in enumerate(chats):
        Session.objects.filter(pk=chat.pk).update(updated_at=timezone.now() - timezone.timedelta(hours=100 - i))
    client = browser(team.editor)
    editor = client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert f'href="/blogs/notes/posts/{post.pk}/chats/"' in editor
    listed = client.get(f"/blogs/notes/posts/{post.pk}/chats/").content.decode()
    assert listed.count(f"/blogs/notes/posts/{post.pk}/edit/?chat=") == 22
    older = client.get(f"/blogs/notes/posts/{post.pk}/edit/?chat={chats[0].pk}").content.decode()
    assert f'hx-post="/chat/{chats[0].pk}/send"' in older


def test_the_clients_screen_opens_each_chat_it_acted_in_where_that_chat_lives(team, consent):
    """A chat beside a post's editor opens only there: its link on the Clients screen went to the blog
    page, which opened the newest blog chat instead."""
    grant = consent(team.editor, team.blog, [READ, WRITE])
    post = make_post(team.blog, "Field day")
    on_blog, on_post = blog_chat(team.editor, team.blog), start_session(team.editor, team.blog, post)
    for chat in (on_blog, on_post):
        assistant_changed(post, grant, chat)
    client = browser(team.editor)
    page = client.get("/blogs/notes/clients/").content.decode()
    assert f'href="/blogs/notes/?chat={on_blog.pk}"' in page
    assert f'href="/blogs/notes/posts/{post.pk}/edit/?chat={on_post.pk}"' in page
    opened = client.get(f"/blogs/notes/posts/{post.pk}/edit/?chat={on_post.pk}").content.decode()
    assert f'hx-post="/chat/{on_post.pk}/send"' in opened


@pytest.mark.parametrize(
    ("role", "assistant", "said"),
    [
        ("author", "on", "viewer is now an author and may use the assistant."),
        ("editor", "", "viewer is now an editor and may not use the assistant."),
        ("viewer", "on", "viewer is now a viewer (viewers never use the assistant)."),
    ],
)
def test_a_member_updated_is_told_back_as_what_they_now_are(team, role, assistant, said):
    """ "Updated bob." said nothing of what the Save did: the message names the role and the assistant's say."""
    data = {"action": "update", "seat": team.seat("viewer").pk, "role": role}
    if assistant:
        data["may_use_assistant"] = assistant
    response = browser(team.owner).post("/blogs/notes/members/", data, follow=True)
    assert [str(m) for m in response.context["messages"]] == [said]


def test_a_member_not_allowed_the_assistant_is_told_so_whether_never_or_no_longer(team):
    """The Clients screen said the owner "hasn't allowed you … yet", also to a member the owner had allowed
    and then refused: the sentence holds either way."""
    seat = team.seat("editor")
    seat.may_use_assistant = False
    seat.save()
    html = browser(team.editor).get("/blogs/notes/clients/").content.decode()
    assert "The blog's owner doesn't allow you to use the assistant at the moment" in html
    assert "yet" not in html.split('class="notice"', 1)[1].split("</p>", 1)[0]


def test_a_delete_sent_by_htmx_sends_the_whole_page_to_the_blog(team):
    post = make_post(team.blog, "Short-lived")
    response = browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/delete/", HTTP_HX_REQUEST="true")
    assert (response.status_code, response["HX-Redirect"]) == (200, "/blogs/notes/")
    assert not Post.objects.filter(pk=post.pk).exists()
