"""Tool-call chips in a blog chat name what a call acts on (a post's title, an attachment's file name),
only where the chat's person may see it, never the ids the model sent."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import sse
from agent.display import conversation
from agent.models import Session, Turn
from agent.state import Run
from agent.transcript import add_message
from blog.chat import describe_call
from blog.grants import person
from blog.models import Seat
from blog.services import post_delete
from tests.blog.conftest import ALL, blog_chat, browser, make_post, set_consent

pytestmark = pytest.mark.django_db


def chat_with_calls(user, blog, calls, *, attachments=()) -> Session:
    """A chat whose one turn called `calls` [(name, input)], after a message with `attachments` [name]."""
    session = blog_chat(user, blog)
    turn = Turn.objects.create(session=session, status=Turn.DONE)
    files = [{"type": "image", "media_type": "image/png", "media_ref": f"x/{n}", "name": n} for n in attachments]
    add_message(Run(session, turn), "user", [{"type": "text", "text": "do it"}, *files])
    if calls:
        add_calls(session, turn, calls)
    return session


def add_calls(session, turn, calls, prefix="c"):
    """The model's calls `calls` [(name, input)] in `turn`, each answered."""
    uses = [
        {"type": "tool_use", "id": f"{prefix}{i}", "name": name, "input": data} for i, (name, data) in enumerate(calls)
    ]
    add_message(Run(session, turn), "assistant", uses, stop_reason="tool_use")
    results = [
        {"type": "tool_result", "tool_use_id": f"{prefix}{i}", "result": {}, "status": "ok"} for i in range(len(calls))
    ]
    add_message(Run(session, turn), "tool", results)


def chip_inputs(user, session) -> list[str]:
    page = browser(user).get(f"/blogs/{session.blog_link.blog.slug}/?chat={session.pk}").content.decode()
    return [html.unescape(m) for m in re.findall(r'<span class="chip-input" title="[^"]*">([^<]*)</span>', page)]


def attachment_id(session, name: str) -> int:
    return session.messages.get(role="user").parts.get(text=name).pk


def test_chips_name_the_post_and_the_attachment_not_their_ids(team):
    post = make_post(team.blog, "Morning light")
    session = chat_with_calls(team.owner, team.blog, [], attachments=["beach.png"])
    cover = attachment_id(session, "beach.png")
    calls = [
        ("get_post", {"post_id": post.pk}),
        ("update_post", {"body": "New body", "post_id": post.pk, "title": "Evening light"}),  # jsonb's order
        ("create_post", {"cover_attachment_id": cover, "title": "Sea"}),
        ("list_posts", {}),
    ]
    add_calls(session, session.turns.get(), calls)
    assert chip_inputs(team.owner, session) == [
        "post: “Morning light”",
        "post: “Morning light”, title: Evening light",
        "title: Sea, cover: beach.png",
    ]


def test_a_chip_escapes_what_it_names(team):
    post = make_post(team.blog, "<img src=x onerror=alert(1)>")
    session = chat_with_calls(team.owner, team.blog, [("get_post", {"post_id": post.pk})], attachments=["<b>.png"])
    page = browser(team.owner).get(f"/blogs/notes/?chat={session.pk}").content.decode()
    shown = "post: “&lt;img src=x onerror=alert(1)&gt;”"
    assert f'<span class="chip-input" title="{shown}">{shown}</span>' in page
    assert "<img src=x" not in page


def test_a_post_deleted_since_reads_by_its_title(team):
    post = make_post(team.blog, "Old news")
    session = chat_with_calls(team.owner, team.blog, [("delete_post", {"post_id": post.pk})])
    post_delete(post=post, actor=person(team.owner, team.blog))
    assert chip_inputs(team.owner, session) == ["post: “Old news” (deleted)"]


def test_what_is_not_the_persons_reads_not_found(team, other_team):
    theirs = make_post(other_team.blog, "Their secret plans")
    elsewhere = chat_with_calls(other_team.owner, other_team.blog, [], attachments=["their.png"])
    session = chat_with_calls(
        team.owner,
        team.blog,
        [
            ("get_post", {"post_id": theirs.pk}),  # another blog's post
            ("get_post", {"post_id": 987654}),  # no such post
            ("update_post", {"post_id": True}),  # not an id at all
            ("create_post", {"title": "x", "cover_attachment_id": attachment_id(elsewhere, "their.png")}),
        ],
    )
    shown = chip_inputs(team.owner, session)
    assert shown == ["post: not found", "post: not found", "post_id: true", "title: x, cover: not found"]
    page = browser(team.owner).get(f"/blogs/notes/?chat={session.pk}").content.decode()
    assert "Their secret plans" not in page and "their.png" not in page


def test_a_member_who_may_no_longer_read_the_blog_is_shown_no_title(team):
    post = make_post(team.blog, "Members only")
    session = chat_with_calls(team.editor, team.blog, [("get_post", {"post_id": post.pk})])
    assert "Members only" in repr(conversation(session))
    Seat.objects.filter(user=team.editor, blog=team.blog).delete()
    session = Session.objects.get(pk=session.pk)
    assert "Members only" not in repr(conversation(session))  # (and the page itself is 404 for them)


def test_the_live_chip_names_the_post_too(team):
    post = make_post(team.blog, "Morning <light>")
    session = chat_with_calls(team.owner, team.blog, [])
    turn = Turn.objects.create(session=session)
    data = sse.encode_html(
        (None, "tool_use", {"id": "c9", "name": "publish_post", "input": {"post_id": post.pk}}), turn
    )
    shown = "post: “Morning &lt;light&gt;”"
    assert f'<span class="chip-input" title="{shown}">{shown}</span>' in data.decode()


def test_the_chat_page_reads_names_in_a_fixed_number_of_queries(team):
    posts = [make_post(team.blog, f"Post {i}") for i in range(6)]
    few = chat_with_calls(team.owner, team.blog, [("get_post", {"post_id": posts[0].pk})])
    many = chat_with_calls(team.owner, team.blog, [("get_post", {"post_id": p.pk}) for p in posts])
    client = browser(team.owner)
    counts = []
    for session in (few, many):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(f"/blogs/notes/?chat={session.pk}").status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]
    assert chip_inputs(team.owner, many) == [f"post: “Post {i}”" for i in range(6)]


def test_an_approval_names_the_new_cover_by_its_file_name(team):
    set_consent(team.owner, team.blog, ALL)
    post = make_post(team.blog, "Live one", published=True)
    session = chat_with_calls(team.owner, team.blog, [], attachments=["sunset.jpg"])
    said = describe_call(
        session, "update_post", {"post_id": post.pk, "cover_attachment_id": attachment_id(session, "sunset.jpg")}
    )
    assert said.detail.splitlines() == ["Cover:", "+ sunset.jpg"]
    said = describe_call(session, "update_post", {"post_id": post.pk, "cover_attachment_id": 987654})
    assert said.detail.splitlines() == ["Cover:", "+ an attachment not found in this chat"]
