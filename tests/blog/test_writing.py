"""The editor's live preview: the same markdown and sanitiser as the public page, for members who write."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from blog.models import Post
from blog.services import MAX_BODY_CHARS
from tests.blog.conftest import browser, make_post
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
    assert "x" * 100 in browser(team.owner).post(URL, {"body": "x" * MAX_BODY_CHARS}).content.decode()
    html = browser(team.owner).post(URL, {"body": "x" * (MAX_BODY_CHARS + 1)}).content.decode()
    assert "This post is too long: a post's body can be at most 100,000 characters." in html


class Around(HTMLParser):
    """The start tags enclosing the element with `target` as its id, outermost first, and its own."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target, self.open, self.found = target, [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.found is None and attrs.get("id") == self.target:
            self.found = [*self.open, attrs]
        if tag not in self.VOID:
            self.open.append(attrs)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.open:
            self.open.pop()


def test_the_preview_is_not_a_live_region_and_has_a_status_for_a_body_too_long(team):
    """A live preview read the whole post again at every refresh; only "too long" is for the status."""
    post = make_post(team.blog, "Draft")
    for url in ("/blogs/notes/posts/new/", f"/blogs/notes/posts/{post.pk}/edit/"):
        html = browser(team.owner).get(url).content.decode()
        parser = Around("preview")
        parser.feed(html)
        assert parser.found, url
        assert not [a for a in parser.found if "aria-live" in a or a.get("role") in ("log", "status", "alert")]
        assert ("p", {"class": "visually-hidden", "id": "preview-status", "role": "status"}) in tags_of(html)
    html = browser(team.owner).post(URL, {"body": "x" * (MAX_BODY_CHARS + 1)}).content.decode()
    assert ("p", {"class": "hint", "data-preview-status": None}) in tags_of(html)
    assert "data-preview-status" not in browser(team.owner).post(URL, {"body": "Fine."}).content.decode()


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


# The assistant beside the editor --------------------------------------------------------------------------------


def test_the_editor_has_the_assistant_in_chats_about_that_post(team, consent):
    from blog.chat import start_session

    post = make_post(team.blog, "Open post")
    on_blog_page = start_session(team.editor, team.blog)
    about_post = start_session(team.editor, team.blog, post)
    html = browser(team.editor).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert 'id="assistant"' in html and f'hx-post="/chat/{about_post.pk}/send"' in html
    assert f"?chat={on_blog_page.pk}" not in html  # the blog page's chats stay on the blog page
    assert f'action="/blogs/notes/posts/{post.pk}/chats/new/"' in html
    blog_page = browser(team.editor).get("/blogs/notes/").content.decode()
    assert f'hx-post="/chat/{on_blog_page.pk}/send"' in blog_page and str(about_post.pk) not in blog_page


def test_without_a_chat_yet_the_editors_form_starts_one_about_the_post(team, script):
    from agent.models import Session

    script([[{"kind": "text", "text": "Hello."}, {"kind": "done", "stop_reason": "end_turn"}]])
    post = make_post(team.blog, "Open post")
    client = browser(team.editor)
    html = client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert f'hx-post="/blogs/notes/posts/{post.pk}/chats/send"' in html and not Session.objects.exists()
    assert client.post(f"/blogs/notes/posts/{post.pk}/chats/send", {"text": "tighten it"}).status_code == 200
    (chat,) = Session.objects.all()
    assert (chat.blog_link.blog, chat.blog_link.post) == (team.blog, post)
    assert f"(post_id {post.pk}) open in the editor" in chat.system_prompt


def test_a_new_chat_beside_the_editor_returns_to_the_editor(team):
    from agent.models import Session

    post = make_post(team.blog, "Open post")
    response = browser(team.editor).post(f"/blogs/notes/posts/{post.pk}/chats/new/")
    (chat,) = Session.objects.all()
    assert response["Location"] == f"/blogs/notes/posts/{post.pk}/edit/?chat={chat.pk}"
    assert chat.blog_link.post == post


def test_a_new_chat_refused_beside_the_editor_says_why_there(team, settings):
    """Without JS, a refused New chat goes back to the editor, which shows why (the notice used to
    wait, unseen, for the next page that shows notices)."""
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    post = make_post(team.blog, "Open post")
    client = browser(team.editor)
    client.post(f"/blogs/notes/posts/{post.pk}/chats/new/")
    refused = client.post(f"/blogs/notes/posts/{post.pk}/chats/new/", follow=True)
    assert refused.redirect_chain == [(f"/blogs/notes/posts/{post.pk}/edit/", 302)]
    assert "You&#x27;re sending messages too quickly. Try again in " in refused.content.decode()
    assert "sending messages too quickly" not in client.get("/blogs/notes/").content.decode()  # (said, so gone)


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_no_post_chats_for_those_who_may_not_summon(team, other_team, role):
    from agent.models import Session

    post = make_post(team.blog, "Open post")
    for url in (f"/blogs/notes/posts/{post.pk}/chats/new/", f"/blogs/notes/posts/{post.pk}/chats/send"):
        assert browser(team.user(role)).post(url, {"text": "hi"}).status_code == 404
    theirs = make_post(other_team.blog, "Not yours")
    assert browser(team.editor).post(f"/blogs/notes/posts/{theirs.pk}/chats/new/").status_code == 404
    assert not Session.objects.exists()


def test_the_api_opens_a_chat_about_a_post_of_that_blog_only(team, other_team):
    import json

    post, theirs = make_post(team.blog, "Mine"), make_post(other_team.blog, "Theirs")
    client = browser(team.editor)

    def create(body):
        return client.post("/api/agent/sessions", json.dumps(body), content_type="application/json")

    assert create({"blog": "notes", "post": post.pk}).status_code == 201
    assert create({"blog": "notes", "post": theirs.pk}).status_code == 404
    assert create({"blog": "notes", "post": "1"}).status_code == 400


def test_incoming_shows_the_saved_version_against_the_form(team):
    post = make_post(team.blog, "Saved title", "line one\nline two")
    url = f"/blogs/notes/posts/{post.pk}/incoming/"
    html = browser(team.owner).post(url, {"title": "My title", "body": "line one\r\nmy line"}).content.decode()
    assert '<script id="incoming-saved" type="application/json">' in html
    assert '"title": "Saved title"' in html and '"body": "line one\\nline two"' in html
    assert "This post changed while you were editing" in html
    assert "Removed: </span>My title</p>" in html and "Added: </span>Saved title</p>" in html
    assert '<span class="diff-line removed"><span class="sign">−</span>my line</span>' in html
    assert '<span class="diff-line added"><span class="sign">+</span>line two</span>' in html
    assert 'id="post-state"' in html  # the state line again, for the page to swap in
    same = browser(team.owner).post(url, {"title": "Saved title", "body": "line one\r\nline two"}).content.decode()
    assert "This post changed" not in same  # the same text with CRLF line ends is no change


def test_incoming_compares_a_form_of_blank_lines_and_refuses_one_too_long_to_save(team):
    """Blank and much-repeated lines anchor no match: 90,000 of them compare at once, line for line."""
    post = make_post(team.blog, "Saved", "Para one\n\nPara two\n\n```\ncode\n```")
    url = f"/blogs/notes/posts/{post.pk}/incoming/"
    html = browser(team.viewer).post(url, {"title": "Saved", "body": "Para one" + "\n" * 90_000}).content.decode()
    assert "This post changed while you were editing" in html
    assert '<span class="diff-line added"><span class="sign">+</span>Para two</span>' in html
    assert '<span class="diff-line added"><span class="sign">+</span>code</span>' in html
    assert html.count('class="diff-line removed"') == 89_998  # the blank lines after the first
    too_long = browser(team.viewer).post(url, {"title": "Saved", "body": "x" * (MAX_BODY_CHARS + 1)})
    assert too_long.status_code == 413


@pytest.mark.parametrize("role", ["owner", "editor"])
def test_a_body_too_long_is_refused_on_every_write_path(team, role):
    post = make_post(team.blog, "Short", "fits")
    writer = browser(team.user(role))
    page = writer.post("/blogs/notes/posts/new/", {"title": "Huge", "body": "x" * (MAX_BODY_CHARS + 1)})
    assert "A post&#x27;s body can be at most 100,000 characters." in page.content.decode()
    writer.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Renamed", "body": "y" * (MAX_BODY_CHARS + 1)})
    post.refresh_from_db()
    assert (post.title, post.body) == ("Short", "fits") and not Post.objects.filter(title="Huge").exists()
    writer.post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Short", "body": "z" * MAX_BODY_CHARS})
    post.refresh_from_db()
    assert len(post.body) == MAX_BODY_CHARS


def test_incoming_escapes_and_is_for_members(team, other_team):
    post = make_post(team.blog, "<script>alert(1)</script>", "<img src=x onerror=alert(2)>")
    url = f"/blogs/notes/posts/{post.pk}/incoming/"
    html = browser(team.viewer).post(url, {"title": "t", "body": "b"}).content.decode()
    assert "<script>alert" not in html.replace('<script id="incoming-saved" type="application/json">', "")
    assert "<img src=x" not in html
    assert browser(other_team.owner).post(url, {"title": "t", "body": "b"}).status_code == 404
    assert browser(team.owner).get(url).status_code == 405
    assert browser(team.owner, csrf=True).post(url, {"title": "t"}).status_code == 403


def test_the_demo_model_renames_the_open_post(team):
    from blog.chat import start_session
    from blog.demo import DemoBackend

    post = make_post(team.blog, "Open post")
    chat = start_session(team.owner, team.blog, post)
    messages = [{"role": "user", "parts": [{"type": "text", "text": "rename this post to Evening light"}]}]
    events = list(DemoBackend().stream(system=chat.system_prompt, messages=messages, tools=TOOLS, model="demo"))
    (call,) = [e for e in events if e["kind"] == "tool_use"]
    assert (call["name"], call["input"]) == ("update_post", {"post_id": post.pk, "title": "Evening light"})
    events = list(DemoBackend().stream(system="A blog chat.", messages=messages, tools=TOOLS, model="demo"))
    assert not [e for e in events if e["kind"] == "tool_use"]
    assert "Open it in the editor" in "".join(e.get("text", "") for e in events)


TOOLS = [{"name": "update_post", "description": "", "input_schema": {"type": "object"}}]


# The preview's cost, bounded (blog/previews.py) -------------------------------------------------------------------


def count_renders(monkeypatch) -> list[str]:
    from agent import markdown

    rendered: list[str] = []
    real = markdown.render_markdown
    monkeypatch.setattr(markdown, "render_markdown", lambda text, **how: rendered.append(text) or real(text, **how))
    return rendered


def test_a_normal_post_previews_exactly_as_its_public_page_renders_it(team):
    from agent.markdown import render_markdown

    body = "# Title\n\nSome *words*, a [link](https://example.com/).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n"
    html = browser(team.author).post(URL, {"body": body}).content.decode()
    assert html == f'<div class="md">{render_markdown(body, top_heading=2)}</div>\n'


def test_a_long_text_previewed_again_is_not_rendered_again_and_a_published_bodys_render_is_shared(team, monkeypatch):
    long = "Some **bold**. " * 1_000  # (15,000 characters: a render worth keeping)
    rendered = count_renders(monkeypatch)
    client = browser(team.author)
    first = client.post(URL, {"body": long}).content
    assert client.post(URL, {"body": long}).content == first  # (the editor's load, a take, an undo)
    assert rendered == [long]
    post = make_post(team.blog, "Live", "A *published* body.", published=True)
    assert browser().get(f"/read/notes/{post.slug}/").status_code == 200
    assert client.post(URL, {"body": "A *published* body."}).status_code == 200
    assert rendered == [long, "A *published* body."]  # the page's render served the preview
    # A short text costs a few milliseconds: rendered each time, not kept (the cache is the pages' too).
    client.post(URL, {"body": "Short."})
    client.post(URL, {"body": "Short."})
    assert rendered == [long, "A *published* body.", "Short.", "Short."]


def test_a_persons_previews_pause_once_their_rendering_this_minute_is_spent(team, monkeypatch):
    """Each render here is made to cost 4 s of CPU (no timing: the clock is the test's): the fourth
    distinct text in the minute is refused with 429 and a sentence for the preview's status, and
    renders nothing; a text already rendered still comes from the cache; another person is unaffected."""
    from agent import runtime
    from blog import previews

    ticks = iter(range(0, 10_000, 4))
    monkeypatch.setattr(runtime.time, "thread_time", lambda: next(ticks))
    monkeypatch.setattr(previews, "PREVIEW_CPU_MS_PER_MINUTE", 10_000)
    monkeypatch.setattr(previews.time, "time", lambda: 600.0)  # (the start of one minute throughout)
    rendered = count_renders(monkeypatch)
    client = browser(team.author)
    text = [f"Text {n} " + "x" * 10_000 for n in range(4)]
    assert [client.post(URL, {"body": text[n]}).status_code for n in range(3)] == [200, 200, 200]
    refused = client.post(URL, {"body": text[3]})
    assert refused.status_code == 429 and len(rendered) == 3
    assert ("p", {"class": "hint", "data-preview-status": None}) in tags_of(refused.content.decode())
    assert "The preview is paused" in refused.content.decode() and "within 60 seconds" in refused.content.decode()
    assert client.post(URL, {"body": text[1]}).status_code == 200  # rendered before: from the cache
    assert browser(team.editor).post(URL, {"body": text[3]}).status_code == 200  # another person's own share
    assert len(rendered) == 4


def test_requests_sent_at_once_are_charged_before_they_render(team, monkeypatch):
    """A burst cannot all pass the check before any is counted: each is charged its estimate (by its
    length) first. A long body's estimate alone spends the share here: the next one is refused."""
    from blog import previews

    monkeypatch.setattr(previews, "PREVIEW_CPU_MS_PER_MINUTE", 1_000)
    monkeypatch.setattr(previews.time, "time", lambda: 600.0)
    key = previews.bucket(team.author.pk, 600.0)
    seen = []
    real = previews.reading.render_body
    monkeypatch.setattr(
        previews.reading, "render_body", lambda body: seen.append(previews.cache.get(key)) or real(body)
    )
    assert browser(team.author).post(URL, {"body": "x" * 60_000}).status_code == 200
    assert seen == [1_200]  # (60,000 characters × 0.02 ms, charged while it rendered)


# --- Preview without scripts: the editor's form sent to show its preview, nothing saved -------------


def test_the_preview_button_is_drawn_for_pages_without_scripts_only(team):
    post = make_post(team.blog, "Walk notes", "First line.")
    for url in ("/blogs/notes/posts/new/", f"/blogs/notes/posts/{post.pk}/edit/"):
        html = browser(team.owner).get(url).content.decode()
        assert (
            '<noscript><button type="submit" class="secondary" name="preview" value="1" formnovalidate>Preview</button></noscript>'
            in html
        )
        assert "appears here as you write.<noscript> Press Preview to see it.</noscript>" in html


def test_a_new_posts_preview_comes_back_with_the_words_and_saves_nothing(team):
    typed = {"title": "", "body": "Some **bold**.\n\n<script>alert(1)</script>", "preview": "1"}
    response = browser(team.author).post("/blogs/notes/posts/new/", typed)
    assert response.status_code == 200 and not Post.objects.exists()
    html = response.content.decode()
    preview = html[html.index('<div id="preview">') :]
    assert preview.startswith('<div id="preview"><div class="md"><p>Some <strong>bold</strong>.</p>')
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in preview and "<script>alert" not in html
    assert ">Some **bold**.\n\n&lt;script&gt;alert(1)&lt;/script&gt;</textarea>" in html  # (the words, to go on with)
    assert "This is a preview: nothing is saved yet. Save to keep your changes." in html


def test_a_paused_preview_without_scripts_says_to_press_preview_again(team, monkeypatch):
    """A pause said "It resumes within 60 seconds of your next change": without scripts nothing follows a
    change typed, so the person waited for a preview that came only when they pressed Preview again."""
    from blog import previews

    monkeypatch.setattr(previews, "PREVIEW_CPU_MS_PER_MINUTE", 1)
    monkeypatch.setattr(previews.time, "time", lambda: 600.0)
    post = make_post(team.blog, "Walk notes", "First line.")
    client = browser(team.author)
    assert client.post(URL, {"body": "w" * 60_000}).status_code == 200  # (this minute's share spent)
    for url in ("/blogs/notes/posts/new/", f"/blogs/notes/posts/{post.pk}/edit/"):
        typed = {"title": "Walk notes", "body": "x" * 60_000, "preview": "1"}
        html = client.post(url, typed).content.decode()
        assert "Press Preview again in 60 seconds; your words are safe and Save works as usual." in html, url
        assert "of your next change" not in html
    live = client.post(URL, {"body": "y" * 60_000})  # (as typed, with scripts: as it was)
    assert live.status_code == 429 and "It resumes within 60 seconds of your next change" in live.content.decode()


def test_a_posts_preview_saves_nothing_and_keeps_the_version_it_opened(team):
    """Previewed, then saved after someone else's change: the Save is refused as from the version it
    opened, not written over the change the preview's page never showed."""
    from tests.blog.test_edit_conflicts import edit_url, opened_version

    post = make_post(team.blog, "Walk notes", "First line.")
    mine = browser(team.owner)
    version = opened_version(mine, post)
    revisions = post.revisions.count()
    response = mine.post(
        edit_url(post), {"title": "Walk notes", "body": "My _words_.", "version": version, "preview": "1"}
    )
    assert response.status_code == 200
    post.refresh_from_db()
    assert post.body == "First line." and post.revisions.count() == revisions
    html = response.content.decode()
    assert '<div id="preview"><div class="md"><p>My <em>words</em>.</p>' in html
    assert f'<input type="hidden" name="version" value="{version}">' in html

    other = browser(team.editor)
    other.post(
        edit_url(post), {"title": "Walk notes", "body": "Editor's words.", "version": opened_version(other, post)}
    )
    assert (
        f'<input type="hidden" name="version" value="{version}">'
        in mine.post(
            edit_url(post), {"title": "Walk notes", "body": "My _words_.", "version": version, "preview": "1"}
        ).content.decode()
    )  # (previewed again after that change: still the version it opened)
    refused = mine.post(edit_url(post), {"title": "Walk notes", "body": "My _words_.", "version": version})
    assert "since you opened it, so nothing was saved." in refused.content.decode()
    post.refresh_from_db()
    assert post.body == "Editor's words."


def test_a_preview_keeps_no_cover_and_says_to_choose_it_again(team, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests import files

    settings.MEDIA_ROOT = tmp_path
    post = make_post(team.blog, "Walk notes", "First line.")
    image = SimpleUploadedFile("heron.png", files.png(), content_type="image/png")
    form = {"title": "Walk notes", "body": "Words.", "preview": "1", "cover": image}
    html = browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/edit/", form).content.decode()
    assert "The image you chose is not kept by a preview: choose the image again when you save." in html
    post.refresh_from_db()
    assert not post.cover_ref and not any(tmp_path.rglob("*.png"))


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_only_members_who_may_edit_the_post_preview_it_in_its_editor(team, role):
    post = make_post(team.blog, "Walk notes", "First line.")
    person = team.viewer if role == "viewer" else team.outsider
    response = browser(person).post(f"/blogs/notes/posts/{post.pk}/edit/", {"body": "Mine.", "preview": "1"})
    assert response.status_code == 404
    response = browser(person).post("/blogs/notes/posts/new/", {"body": "Mine.", "preview": "1"})
    assert response.status_code == 404
