"""Two posts of one blog with the same title: allowed (each has its own address), but never silent.

The person saving is told, the assistant's tool result says so (with the other post's id), and the
demo model, which finds posts by title, picks one by a rule it says."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from blog import grants
from blog.access import ROLE_SCOPES
from blog.demo import DemoBackend
from blog.models import Post
from blog.operations import perform_json
from tests.blog.conftest import browser, make_post
from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db


def flash(response) -> list[tuple[str, str]]:
    return [(m.level_tag, m.message) for m in response.context["messages"]] if response.context else []


def test_saving_a_new_post_with_a_title_already_used_warns_and_still_saves(team):
    make_post(team.blog, "Morning light", published=True)
    client = browser(team.author)
    response = client.post("/blogs/notes/posts/new/", {"title": "morning light", "body": "x"}, follow=True)
    assert Post.objects.filter(blog=team.blog).count() == 2  # saved: a warning, not a refusal
    assert ("morning-light-2") in Post.objects.values_list("slug", flat=True)
    warnings = [text for level, text in flash(response) if level == "warning"]
    assert warnings == [
        "Another post in this blog is already titled “Morning light” (published). "
        "Both are kept, each at its own address; a different title tells them apart for readers and the assistant."
    ]
    # A title used nowhere else says nothing of the kind.
    response = client.post("/blogs/notes/posts/new/", {"title": "Evening", "body": "x"}, follow=True)
    assert not [text for level, text in flash(response) if level == "warning"]


def test_the_editor_of_a_post_whose_title_is_shared_says_so_and_a_rename_to_a_used_title_warns(team):
    first = make_post(team.blog, "Morning light")
    second = make_post(team.blog, "Evening")
    client = browser(team.owner)
    assert "already titled" not in client.get(f"/blogs/notes/posts/{second.pk}/edit/").content.decode()
    version = second.updated_at.isoformat()
    response = client.post(
        f"/blogs/notes/posts/{second.pk}/edit/",
        {"title": "Morning light", "body": "x", "version": version},
        follow=True,
    )
    assert [level for level, _ in flash(response)] == ["success", "warning"]
    html = client.get(f"/blogs/notes/posts/{second.pk}/edit/").content.decode()
    assert 'id="title-shared"' in html and "Another post in this blog is also titled “Morning light”" in html
    assert f'href="/blogs/notes/posts/{first.pk}/edit/"' in html  # the other one, a click away
    Post.objects.create(blog=team.blog, author=team.owner, title="Morning light", slug="morning-light-3")  # a third
    html = client.get(f"/blogs/notes/posts/{second.pk}/edit/").content.decode()
    assert "2 other posts in this blog are also titled “Morning light”" in html and "All are kept" in html


# As the title is typed (blog.views.post_namesakes) -------------------------------------------------------------

NEW = "/blogs/notes/posts/namesakes/"


def typed(url: str, user, title: str):
    return browser(user).post(url, {"title": title}, HTTP_HX_REQUEST="true")


def titled(team, title: str, slug: str, *, published: bool = False) -> Post:
    status = Post.PUBLISHED if published else Post.DRAFT
    return Post.objects.create(blog=team.blog, author=team.owner, title=title, slug=slug, status=status)


def test_a_title_typed_in_a_new_post_that_others_have_gets_the_editors_note_with_their_links(team):
    live = titled(team, "Morning light", "morning-light", published=True)
    draft = titled(team, "MORNING LIGHT", "morning-light-2")
    response = typed(NEW, team.author, "  morning light ")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="title-shared"' in html
    assert "2 other posts in this blog are also titled “morning light”: " in html and "All are kept" in html
    # An author may not edit a published post: its history is the link; the draft opens in the editor.
    assert f'href="/blogs/notes/posts/{live.pk}/history/"' in html
    assert f'href="/blogs/notes/posts/{draft.pk}/edit/"' in html
    draft.delete()
    html = typed(NEW, team.author, "Morning light").content.decode()
    assert "Another post in this blog is also titled “Morning light”" in html and "Both are kept" in html
    # A title no other post has, or none yet: nothing, so the note goes.
    for title in ("Morning light at sea", "", "   ", "\u200b"):
        response = typed(NEW, team.author, title)
        assert (response.status_code, response.content) == (200, b""), title


def test_the_post_being_edited_is_not_its_own_namesake_and_other_blogs_do_not_count(team, other_team):
    mine = titled(team, "Morning light", "morning-light")
    url = f"/blogs/notes/posts/{mine.pk}/namesakes/"
    assert typed(url, team.owner, "Morning light").content == b""
    Post.objects.create(blog=other_team.blog, author=other_team.owner, title="Morning light", slug="morning-light")
    assert typed(url, team.owner, "Morning light").content == b""
    other = titled(team, "Morning light", "morning-light-2")
    html = typed(url, team.owner, "morning LIGHT").content.decode()
    assert "Another post in this blog is also titled" in html
    assert f"/posts/{other.pk}/" in html and f"/posts/{mine.pk}/" not in html
    assert "2 other posts" in typed(NEW, team.owner, "Morning light").content.decode()  # a new post: both


def test_titles_in_other_scripts_match_letter_case_aside(team):
    titled(team, "Straße am Fluss", "strasse")
    titled(team, "ÉTÉ", "ete")
    assert "Another post" in typed(NEW, team.owner, "straße am fluss").content.decode()
    assert "“été”" in typed(NEW, team.owner, "e\u0301te\u0301").content.decode()  # typed decomposed, as saved: NFC


def test_the_typed_title_and_the_others_are_escaped(team):
    hostile = '<img src=x onerror="alert(1)"> & Co'
    titled(team, hostile, "hostile")
    html = typed(NEW, team.owner, hostile).content.decode()
    assert "Another post in this blog is also titled “&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; Co”" in html
    assert "<img" not in html


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_the_typed_title_check_is_for_members_who_write(team, role):
    post = titled(team, "Morning light", "morning-light")
    assert typed(NEW, team.user(role), "Morning light").status_code == 404
    assert typed(f"/blogs/notes/posts/{post.pk}/namesakes/", team.user(role), "Morning light").status_code == 404


def test_the_typed_title_check_of_a_post_is_for_those_who_may_edit_that_post(team, other_team):
    live = titled(team, "Morning light", "morning-light", published=True)
    elsewhere = Post.objects.create(blog=other_team.blog, author=other_team.owner, title="X", slug="x")
    # A published post is edited with the publish right only (its editor refuses an author).
    assert typed(f"/blogs/notes/posts/{live.pk}/namesakes/", team.author, "Morning light").status_code == 404
    assert typed(f"/blogs/notes/posts/{live.pk}/namesakes/", team.editor, "Morning light").status_code == 200
    # Another blog's post, or none, under this blog's address: not found.
    assert typed(f"/blogs/notes/posts/{elsewhere.pk}/namesakes/", team.owner, "X").status_code == 404
    assert typed("/blogs/notes/posts/999999/namesakes/", team.owner, "X").status_code == 404


def test_the_typed_title_check_needs_sign_in_csrf_and_post(team):
    assert browser().post(NEW, {"title": "x"}).status_code == 302
    assert browser(team.owner, csrf=True).post(NEW, {"title": "x"}).status_code == 403
    assert browser(team.owner).get(NEW).status_code == 405


def test_the_editors_title_asks_at_each_pause_in_typing_for_the_note_it_already_shows(team):
    post = titled(team, "Morning light", "morning-light")
    titled(team, "Morning light", "morning-light-2")
    client = browser(team.owner)
    for url, check in (("/blogs/notes/posts/new/", NEW), (f"/blogs/notes/posts/{post.pk}/edit/", None)):
        check = check or f"/blogs/notes/posts/{post.pk}/namesakes/"
        tags = tags_of(client.get(url).content.decode())
        title = next(attrs for tag, attrs in tags if tag == "input" and attrs.get("name") == "title")
        assert title["hx-post"] == check and title["hx-target"] == "#title-note", url
        assert title["hx-trigger"].startswith("input changed delay:"), url
        assert title["hx-params"] == "title", url  # (not the body, up to 100,000 characters)
        assert ("div", {"id": "title-note", "aria-live": "polite"}) in tags, url
    # The editor of a post whose title is shared shows the note in that box from the start.
    html = client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert '<div id="title-note" aria-live="polite"><p class="notice" id="title-shared">Another post' in html
    assert '<div id="title-note" aria-live="polite"></div>' in client.get("/blogs/notes/posts/new/").content.decode()


def note_of(html: str) -> str:
    """What the editor's title note holds (its box, `#title-note`)."""
    return html.split('<div id="title-note" aria-live="polite">', 1)[1].split("</div>", 1)[0]


def test_a_save_refused_for_another_reason_shows_the_note_for_the_title_in_the_box(team):
    first = titled(team, "Morning light", "morning-light")
    post = titled(team, "Evening", "evening")
    titled(team, "Evening", "evening-2")  # the saved title is shared too: its note is not the one to show
    client = browser(team.owner)
    url, version = f"/blogs/notes/posts/{post.pk}/edit/", post.updated_at.isoformat()
    too_long = "x" * 100_001
    response = client.post(url, {"title": " morning LIGHT", "body": too_long, "version": version})
    html = response.content.decode()
    assert "A post&#x27;s body can be at most 100,000 characters." in html  # refused, not saved
    assert 'value=" morning LIGHT"' in html  # the box holds what was typed
    note = note_of(html)
    assert "Another post in this blog is also titled “morning LIGHT”" in note
    assert f'href="/blogs/notes/posts/{first.pk}/edit/"' in note and "Evening" not in note
    # A typed title no other post has: no note, though the saved one is shared.
    html = client.post(url, {"title": "Night", "body": too_long, "version": version}).content.decode()
    assert note_of(html) == ""
    # A Save that found the post changed meanwhile keeps the person's words in the form: the note is theirs.
    Post.objects.filter(pk=post.pk).update(body="changed elsewhere", updated_at=timezone.now() + timedelta(seconds=1))
    html = client.post(url, {"title": "Morning light", "body": "mine", "version": version}).content.decode()
    assert "nothing was saved" in html
    assert "Another post in this blog is also titled “Morning light”" in note_of(html)


def test_a_create_refused_for_another_reason_shows_the_note_for_the_title_in_the_box(team):
    other = titled(team, "Morning light", "morning-light")
    client = browser(team.author)
    response = client.post("/blogs/notes/posts/new/", {"title": "morning light", "body": "x" * 100_001})
    html = response.content.decode()
    assert "A post&#x27;s body can be at most 100,000 characters." in html
    assert not Post.objects.exclude(pk=other.pk).exists()
    note = note_of(html)
    assert "Another post in this blog is also titled “morning light”" in note
    assert f'href="/blogs/notes/posts/{other.pk}/edit/"' in note
    # A title that could not be saved either (too long) has no note.
    html = client.post("/blogs/notes/posts/new/", {"title": "m" * 201, "body": "x"}).content.decode()
    assert "A title can be at most 200 characters." in html and note_of(html) == ""


def test_the_typed_title_check_is_a_few_queries_whatever_the_blogs_size(team, django_assert_max_num_queries):
    for n in range(30):
        titled(team, f"Post {n}", f"post-{n}")
    titled(team, "Morning light", "morning-light")
    client = browser(team.owner)
    with django_assert_max_num_queries(6):
        assert "Another post" in client.post(NEW, {"title": "Morning light"}).content.decode()


def actor(team):
    return grants.Actor(team.owner, ROLE_SCOPES["owner"])


def test_the_assistants_create_and_update_results_say_the_title_is_shared(team):
    other = make_post(team.blog, "Morning light", published=True)
    result, _ = perform_json("create_post", actor(team), team.blog, {"title": "Morning Light"})
    assert result["shares_title_with"] == [
        {"id": other.pk, "title": "Morning light", "status": "published", "updated_at": other.updated_at.isoformat()}
    ]
    assert result["note"] == (
        f"Another post on this blog (id {other.pk}) already has this title. Titles may repeat; "
        "name posts by id, and tell the user which one you mean."
    )
    fresh, _ = perform_json("create_post", actor(team), team.blog, {"title": "Something new"})
    assert "shares_title_with" not in fresh and "note" not in fresh
    renamed, _ = perform_json("update_post", actor(team), team.blog, {"post_id": fresh["id"], "title": "Morning light"})
    assert [p["id"] for p in renamed["shares_title_with"]] == [result["id"], other.pk]  # most recently changed first


# The demo model ------------------------------------------------------------------------------------------------

TOOLS = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "publish_post", "unpublish_post")]


def act(settings, request: str, items: list[dict]) -> tuple[str, list]:
    settings.AGENT_DEMO_DELAY_MS = 0
    messages = [
        {"role": "user", "parts": [{"type": "text", "text": request}]},
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "c1", "name": "list_posts", "input": {}}]},
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "name": "list_posts",
                    "status": "ok",
                    "result": {"items": items},
                }
            ],
        },
    ]
    events = list(DemoBackend().stream(system="", messages=messages, tools=TOOLS, model="demo"))
    text = "".join(e.get("text", "") for e in events)
    return text, [(e["name"], e["input"]) for e in events if e["kind"] == "tool_use"]


def summary(pk: int, status: str, minutes_ago: int, title: str = "Morning light") -> dict:
    at = (timezone.now() - timedelta(minutes=minutes_ago)).isoformat()
    return {"id": pk, "title": title, "status": status, "updated_at": at}


def test_the_demo_publishes_the_most_recently_edited_of_two_drafts_of_one_title_and_says_so(settings):
    # Listed oldest first: the choice is by when each was edited, not by the list's order.
    items = [summary(3, "draft", 60), summary(9, "draft", 5), summary(4, "draft", 30, "Morning light at sea")]
    text, calls = act(settings, "publish Morning light", items)
    assert calls == [("publish_post", {"post_id": 9})]
    assert text == "2 posts are titled “Morning light”: I'm publishing the one edited most recently (id 9)."


def test_the_demo_acts_on_the_one_post_of_a_shared_title_the_request_fits(settings):
    items = [summary(9, "published", 5), summary(3, "draft", 60)]
    text, calls = act(settings, "publish Morning light", items)
    assert calls == [("publish_post", {"post_id": 3})]
    assert text == "2 posts are titled “Morning light”: I'm publishing the draft (id 3)."
    text, calls = act(settings, "unpublish Morning light", items)
    assert calls == [("unpublish_post", {"post_id": 9})]


def test_the_demo_with_one_post_of_the_title_says_nothing_more(settings):
    text, calls = act(settings, "publish Morning light", [summary(3, "draft", 60)])
    assert (text, calls) == ("", [("publish_post", {"post_id": 3})])


def test_the_demo_passes_on_that_a_title_it_drafted_is_shared(settings):
    settings.AGENT_DEMO_DELAY_MS = 0
    result = {"id": 12, "title": "Morning light", "status": "draft", "shares_title_with": [{"id": 3}]}
    messages = [
        {"role": "user", "parts": [{"type": "text", "text": "draft a post titled Morning light"}]},
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "c1", "name": "create_post", "input": {}}]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": "c1", "name": "create_post", "status": "ok", "result": result}
            ],
        },
    ]
    tools = [{"name": "create_post", "description": "", "input_schema": {}}]
    events = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert "".join(e.get("text", "") for e in events) == (
        "Done: I drafted “Morning light”. Note: another post has this title too (id 3); "
        "a different title would tell them apart."
    )
