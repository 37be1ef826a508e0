"""The assistant removes a post's cover: `update_post` with `remove_cover`, through the one write path
(history, live announcements, the file deleted after commit), for the in-app assistant, the offline demo
model and the chips and approval card people read."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from agent.backends import get_backend
from agent.models import Session
from blog.chat import describe_call
from blog.demo_grammar import intent, requests
from blog.grants import assistant
from blog.models import Post, PostRevision
from blog.operations import OPERATIONS, perform_json
from blog.services import OperationError
from tests import files
from tests.blog.conftest import ALL, blog_chat, covers_stored, make_post, set_consent
from tests.blog.test_chips import add_calls, chat_with_calls, chip_inputs
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

DONE_TOOLS = {"kind": "done", "stop_reason": "tool_use"}
DONE = {"kind": "done", "stop_reason": "end_turn"}
BOTH = "Give either cover_attachment_id (a new cover) or remove_cover (no cover), not both: nothing was changed."


def with_cover(post: Post) -> Post:
    """`post` with a cover stored as the post's own copy (as `blog.covers` stores one)."""
    key = default_storage.save(f"covers/{post.blog_id}/cover.png", ContentFile(files.png()))
    Post.objects.filter(pk=post.pk).update(cover_ref=key, cover_type="image/png")
    post.refresh_from_db()
    return post


def test_update_post_offers_remove_cover_beside_its_other_fields():
    schema = OPERATIONS["update_post"].input_schema
    assert list(schema["properties"]) == ["post_id", "title", "body", "cover_attachment_id", "remove_cover"]
    assert schema["properties"]["remove_cover"]["type"] == "boolean"
    assert (schema["required"], schema["additionalProperties"], OPERATIONS["update_post"].scope) == (
        ["post_id"],
        False,
        "posts:write",
    )
    assert "remove_cover" not in OPERATIONS["create_post"].input_schema["properties"]


def test_the_assistant_removes_a_cover_through_the_write_path(
    team, media, monkeypatch, django_capture_on_commit_callbacks
):
    from blog import live

    set_consent(team.owner, team.blog, ALL)
    chat = blog_chat(team.owner, team.blog)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    old = post.cover_ref
    heard: list[dict] = []
    monkeypatch.setattr(live, "announce", lambda blog, effect: heard.append(effect))
    actor = assistant(team.owner, team.blog, chat)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        result, effects = perform_json("update_post", actor, team.blog, {"post_id": post.pk, "remove_cover": True})
        assert covers_stored(media) == [old]  # (not before the change is committed)
    post.refresh_from_db()
    assert callbacks and (post.cover_ref, post.cover_type, covers_stored(media)) == ("", "", [])
    assert (post.title, post.body) == ("Walk", "Words.")
    assert result["cover_removed"] is True and "cover" not in result and result["id"] == post.pk
    assert effects == heard == [{"type": "post.updated", "id": post.pk}]
    revision = PostRevision.objects.get(post=post)
    assert (revision.action, revision.before["cover"], "cover" in revision.after) == ("update", old, False)
    assert (revision.via_assistant, revision.chat_session) == (True, chat)


def test_a_new_cover_and_remove_cover_together_are_refused_and_nothing_changes(team, media):
    set_consent(team.owner, team.blog, ALL)
    chat = blog_chat(team.owner, team.blog)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    saved = post.updated_at
    actor = assistant(team.owner, team.blog, chat)
    with pytest.raises(OperationError) as caught:
        perform_json(
            "update_post",
            actor,
            team.blog,
            {"post_id": post.pk, "title": "Run", "remove_cover": True, "cover_attachment_id": 1},
        )
    assert (caught.value.public_message, caught.value.code) == (BOTH, "invalid")
    post.refresh_from_db()
    assert (post.title, post.updated_at, covers_stored(media)) == ("Walk", saved, [post.cover_ref])
    assert not PostRevision.objects.exists()


def test_removing_a_cover_a_post_does_not_have_is_a_calm_no_op(team, media):
    set_consent(team.owner, team.blog, ALL)
    post = make_post(team.blog, "Walk", "Words.")
    saved = post.updated_at
    actor = assistant(team.owner, team.blog, blog_chat(team.owner, team.blog))
    result, effects = perform_json("update_post", actor, team.blog, {"post_id": post.pk, "remove_cover": True})
    assert (result["id"], result["cover_removed"], result["note"], effects) == (
        post.pk,
        False,
        "“Walk” has no cover: nothing was changed.",
        [],
    )
    post.refresh_from_db()
    assert post.updated_at == saved and not PostRevision.objects.exists()
    # With a new title as well, the title is saved and the note says there was no cover.
    result, effects = perform_json(
        "update_post", actor, team.blog, {"post_id": post.pk, "title": "Run", "remove_cover": True}
    )
    assert (result["title"], result["cover_removed"], effects) == (
        "Run",
        False,
        [{"type": "post.updated", "id": post.pk}],
    )
    assert result["note"] == "The post had no cover to remove; the rest was saved."
    # remove_cover false alone changes nothing, as an empty update does.
    with pytest.raises(OperationError) as caught:
        perform_json("update_post", actor, team.blog, {"post_id": post.pk, "remove_cover": False})
    assert caught.value.public_message == "Give a new title, body or cover to change."


def test_removing_a_published_posts_cover_needs_the_publish_right_as_any_change_to_it(team, media):
    set_consent(team.author, team.blog, ALL)  # capped by the author's seat: read and write
    post = with_cover(make_post(team.blog, "Live", published=True))
    actor = assistant(team.author, team.blog, blog_chat(team.author, team.blog))
    with pytest.raises(OperationError) as caught:
        perform_json("update_post", actor, team.blog, {"post_id": post.pk, "remove_cover": True})
    assert caught.value.public_message == (
        "“Live” is published: changing it needs the right to publish, which isn't granted."
    )
    post.refresh_from_db()
    assert post.cover_ref and covers_stored(media) == [post.cover_ref]


def test_a_chat_turn_removes_a_cover_and_its_chip_says_so(team, media, script, django_capture_on_commit_callbacks):
    """A whole turn through the HTTP API with the fake backend: the tool offered with `remove_cover`, the
    call run at once (a draft: no approval by default), the file gone after commit, the chip in words."""
    set_consent(team.owner, team.blog, ALL)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    api = ApiClient(team.owner)
    session = Session.objects.get(pk=api.post("/api/agent/sessions", {"blog": "notes"}).json()["id"])
    call = {"kind": "tool_use", "id": "r1", "name": "update_post", "input": {"post_id": post.pk, "remove_cover": True}}
    script([[call, DONE_TOOLS], [{"kind": "text", "text": "Removed."}, DONE]])
    with django_capture_on_commit_callbacks(execute=True):
        events = api.turn(session, "remove the cover of Walk")
    assert [n for n, _ in events] == ["tool_use", "tool_result", "effects", "token", "done"]
    assert events[1][1]["status"] == "ok" and events[1][1]["result"]["cover_removed"] is True
    assert events[2][1] == [{"type": "post.updated", "id": post.pk}]
    post.refresh_from_db()
    assert (post.cover_ref, covers_stored(media)) == ("", [])
    offered = {t["name"]: t for t in get_backend().requests[0]["tools"]}
    assert offered["update_post"]["input_schema"]["properties"]["remove_cover"]["type"] == "boolean"
    assert chip_inputs(team.owner, session) == ["post: “Walk”, cover: removed"]


def test_a_both_given_call_in_a_turn_is_a_tool_error_the_model_reads(team, media, script):
    set_consent(team.owner, team.blog, ALL)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    api = ApiClient(team.owner)
    session = Session.objects.get(pk=api.post("/api/agent/sessions", {"blog": "notes"}).json()["id"])
    both = {"post_id": post.pk, "remove_cover": True, "cover_attachment_id": 3}
    script([[{"kind": "tool_use", "id": "r1", "name": "update_post", "input": both}, DONE_TOOLS], [DONE]])
    events = api.turn(session, "swap and remove the cover")
    assert [n for n, _ in events] == ["tool_use", "tool_result", "done"]
    assert (events[1][1]["status"], events[1][1]["result"]) == ("error", {"error": BOTH})
    post.refresh_from_db()
    assert covers_stored(media) == [post.cover_ref]


def test_removing_a_published_posts_cover_waits_for_approval_as_any_live_change(
    team, media, script, django_capture_on_commit_callbacks
):
    """The approval flow is the one of every update: a draft's cover goes at once (above); a published
    post's, a change to what readers see, waits for the person's Approve, its card saying so."""
    from tests.blog.test_assistant_turns import approve, update_awaiting_approval

    set_consent(team.owner, team.blog, ALL)
    live = with_cover(make_post(team.blog, "Live one", published=True))
    api, session, pending = update_awaiting_approval(team, script, team.owner, live, {"remove_cover": True})
    assert (pending["description"], pending["detail"]) == ("Change the published post “Live one”", "Cover: removed")
    live.refresh_from_db()
    assert live.cover_ref and covers_stored(media) == [live.cover_ref]  # nothing removed before the Approve
    with django_capture_on_commit_callbacks(execute=True):
        events = api.events(approve(api, session, pending["id"]).json()["stream_url"])
    assert [n for n, _ in events] == ["tool_result", "effects", "token", "done"]
    live.refresh_from_db()
    assert (live.cover_ref, live.status, covers_stored(media)) == ("", Post.PUBLISHED, [])


def test_a_chip_reads_remove_cover_in_words(team):
    post = make_post(team.blog, "Morning light")
    session = chat_with_calls(team.owner, team.blog, [])
    calls = [
        ("update_post", {"remove_cover": True, "post_id": post.pk}),  # (jsonb's order)
        ("update_post", {"post_id": post.pk, "remove_cover": False, "body": "x"}),
    ]
    add_calls(session, session.turns.get(), calls)
    assert chip_inputs(team.owner, session) == [
        "post: “Morning light”, cover: removed",
        "post: “Morning light”, body: x",
    ]


def test_an_approval_to_remove_a_cover_says_so(team, media):
    set_consent(team.owner, team.blog, ALL)
    post = with_cover(make_post(team.blog, "Live one", published=True))
    session = chat_with_calls(team.owner, team.blog, [])
    said = describe_call(session, "update_post", {"post_id": post.pk, "remove_cover": True})
    assert (said.text, said.detail) == ("Change the published post “Live one”", "Cover: removed")


# The offline demo model -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("remove the cover of Morning light", ("uncover", "Morning light")),
        ("Please remove the cover from “Morning light”.", ("uncover", "Morning light")),
        ("remove the cover image of the post Morning light", ("uncover", "Morning light")),
        ("delete the cover of Old notes", ("uncover", "Old notes")),  # (not a delete of a post so titled)
        ("remove the cover of it", ("uncover", "it")),
        ("remove the cover of this post", ("uncover", "this post")),
        ("delete Old notes", ("delete", "Old notes")),
        # No post named: "it", the open post beside an editor, else the chat's last one (as "this post")
        ("remove the cover", ("uncover", "it")),
        ("Remove its cover, please.", ("uncover", "it")),
        ("remove the cover image", ("uncover", "it")),
        ("take off this post’s cover", ("uncover", "it")),
        ("delete the cover", ("uncover", "it")),  # (not a delete of a post titled “the cover”)
    ],
)
def test_the_demo_reads_remove_the_cover_of_a_title(text, expected):
    assert intent(text) == expected


def test_the_demo_splits_a_cover_removal_from_the_next_request():
    assert requests("remove the cover of Walk and publish it") == ["remove the cover of Walk", "publish it"]
    assert requests("remove its cover and publish it") == ["remove its cover", "publish it"]


@pytest.mark.parametrize("confirm", [[], ["delete_post", "publish_post"]])
def test_the_demo_removes_a_cover_in_a_real_turn(
    team, consent, media, settings, confirm, django_capture_on_commit_callbacks
):
    """Through real turns and tools with the demo model: it finds the post by its title, of two posts so
    titled the one with a cover, and removes it at once (update_post waits for no approval by default)."""
    from agent import turns
    from agent.backends import reset_backends
    from blog.chat import start_session

    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS, settings.AGENT_CONFIRM_TOOLS = "demo", 0, confirm
    reset_backends()
    consent(team.owner, team.blog, ALL)
    plain = make_post(team.blog, "Walk", "No picture.")
    post = with_cover(make_post(team.blog, "Walk 2", "Words."))
    Post.objects.filter(pk=post.pk).update(title="Walk")  # (titles may repeat; each keeps its own address)
    Post.objects.filter(pk=plain.pk).update(updated_at=post.updated_at.replace(year=post.updated_at.year + 1))
    session = start_session(team.owner, team.blog)
    run, _ = turns.begin(session, "remove the cover of Walk")
    with django_capture_on_commit_callbacks(execute=True):
        steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
    assert [(s[1]["name"], s[1]["input"]) for s in steps if s[0] == "tool_use"] == [
        ("list_posts", {"query": "Walk"}),
        ("update_post", {"post_id": post.pk, "remove_cover": True}),
    ]
    said = "".join(s[1]["text"] for s in steps if s[0] == "token")
    assert said == (
        "Looking for “Walk”."
        f"2 posts are titled “Walk”: I'm removing the cover of the one that has one (id {post.pk})."
        "Done: I removed the cover of “Walk”."
    )
    post.refresh_from_db()
    assert (post.cover_ref, covers_stored(media)) == ("", [])
    run, _ = turns.begin(session, "remove the cover of Walk")
    steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
    said = "".join(s[1]["text"] for s in steps if s[0] == "token")
    assert said.endswith("“Walk” has no cover, so there was nothing to remove.")


@pytest.mark.parametrize("asked", ["remove the cover of this post", "remove the cover", "remove its cover"])
def test_the_demo_removes_the_open_posts_cover_beside_its_editor(team, consent, media, settings, asked):
    """Beside the editor the post is the open one, named or not ("remove the cover" was help's answer)."""
    from agent import turns
    from agent.backends import reset_backends
    from blog.chat import start_session

    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS = "demo", 0
    reset_backends()
    consent(team.owner, team.blog, ALL)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    session = start_session(team.owner, team.blog, post)
    run, _ = turns.begin(session, asked)
    steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
    assert [(s[1]["name"], s[1]["input"]) for s in steps if s[0] == "tool_use"] == [
        ("update_post", {"post_id": post.pk, "remove_cover": True}),
    ]
    assert "".join(s[1]["text"] for s in steps if s[0] == "token") == (
        "Removing its cover.Done: I removed the cover of “Walk”."
    )
    post.refresh_from_db()
    assert post.cover_ref == ""


@pytest.mark.parametrize("asked", ["remove the cover", "remove its cover"])
def test_on_the_blog_page_the_demo_asks_which_posts_cover_to_remove(team, consent, media, settings, asked):
    """No editor and nothing done in the chat yet: no post is implied, so it asks which, and changes nothing."""
    from agent import turns
    from agent.backends import reset_backends
    from blog.chat import start_session

    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS = "demo", 0
    reset_backends()
    consent(team.owner, team.blog, ALL)
    post = with_cover(make_post(team.blog, "Walk", "Words."))
    session = start_session(team.owner, team.blog)
    run, _ = turns.begin(session, asked)
    steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
    assert [s for s in steps if s[0] == "tool_use"] == []
    assert "".join(s[1]["text"] for s in steps if s[0] == "token") == (
        "Which post? Say its title, like “remove the cover of Morning light”."
    )
    post.refresh_from_db()
    assert post.cover_ref


def test_the_demos_help_names_removing_a_cover():
    from blog.demo_grammar import HELP

    assert "“remove the cover of Morning light”" in HELP
