"""The capped grant: role × operation × Consent through perform_json, the tool catalogue and tool runs."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import AnonymousUser

from agent.models import Session
from agent.policy import Access
from agent.tools import catalog_for, run_tool
from blog import grants
from blog.models import Post, PostRevision, Seat
from blog.operations import perform_json
from blog.services import OperationError
from tests.blog.conftest import ALL, DELETE, PUBLISH, READ, WRITE, blog_chat, make_post, set_consent

pytestmark = pytest.mark.django_db

ROLES = ["owner", "editor", "author", "viewer"]
OPERATIONS = ["list_posts", "get_post", "create_post", "update_post", "publish_post", "unpublish_post", "delete_post"]
NEEDS = {
    "list_posts": READ,
    "get_post": READ,
    "create_post": WRITE,
    "update_post": WRITE,
    "publish_post": PUBLISH,
    "unpublish_post": PUBLISH,
    "delete_post": DELETE,
}
# What the assistant may ever do for each seat (hard-coded: the test must not reuse the code under test).
# Viewers never summon the assistant, so even a full Consent gives them nothing.
ASSISTANT_CEILING = {"owner": set(ALL), "editor": set(ALL), "author": {READ, WRITE}, "viewer": set()}
PERSON_SCOPES = {"owner": set(ALL), "editor": set(ALL), "author": {READ, WRITE}, "viewer": {READ}}
SUBSETS = {
    "empty": [],
    "read": [READ],
    "write+publish": [WRITE, PUBLISH],
    "delete": [DELETE],
    "full": list(ALL),
}
TOOLS_BY_SCOPE = {
    READ: ["get_post", "list_posts"],
    WRITE: ["create_post", "update_post"],
    PUBLISH: ["publish_post", "unpublish_post"],
    DELETE: ["delete_post"],
}


def tools_for(scopes) -> list[str]:
    return sorted(name for scope in scopes for name in TOOLS_BY_SCOPE[scope])


def state(blog) -> tuple:
    """Everything an operation could change on the blog."""
    posts = sorted(Post.objects.filter(blog=blog).values_list("pk", "title", "slug", "body", "status", "published_at"))
    return posts, PostRevision.objects.filter(blog=blog).count()


def inputs_for(op: str, draft: Post, live: Post) -> dict:
    return {
        "list_posts": {},
        "get_post": {"post_id": draft.pk},
        "create_post": {"title": "Fresh idea", "body": "Some *markdown*."},
        "update_post": {"post_id": draft.pk, "title": "Renamed draft"},
        "publish_post": {"post_id": draft.pk},
        "unpublish_post": {"post_id": live.pk},
        "delete_post": {"post_id": draft.pk},
    }[op]


def check_success(op: str, out, effects, blog, draft: Post, live: Post, actor) -> None:
    """The operation did exactly its job and left a revision naming the assistant, the Consent and the chat."""
    if op == "list_posts":
        assert [p["id"] for p in out["items"]] == [live.pk, draft.pk] and out["total"] == 2
        assert out["items"][1] == {
            "id": draft.pk,
            "title": "A draft",
            "status": "draft",
            "published_at": None,
            "updated_at": draft.updated_at.isoformat(),
        }
        assert effects == []
        return
    if op == "get_post":
        assert out == {
            "id": draft.pk,
            "title": "A draft",
            "status": "draft",
            "published_at": None,
            "updated_at": draft.updated_at.isoformat(),
            "slug": "a-draft",
            "body": "Body text.",
        }
        assert effects == []
        return
    revision = PostRevision.objects.filter(blog=blog).first()
    assert revision.user == actor.user
    assert revision.via_assistant is True
    assert revision.consent == actor.consent
    assert revision.chat_session == actor.chat_session
    if op == "create_post":
        post = Post.objects.get(blog=blog, title="Fresh idea")
        assert (post.status, post.body, post.slug, post.author) == (
            "draft",
            "Some *markdown*.",
            "fresh-idea",
            actor.user,
        )
        assert effects == [{"type": "post.created", "id": post.pk}]
        assert out["id"] == post.pk and out["title"] == "Fresh idea" and out["status"] == "draft"
        assert (revision.action, revision.post, revision.before) == ("create", post, None)
        assert revision.after["title"] == "Fresh idea"
    elif op == "update_post":
        draft.refresh_from_db()
        assert (draft.title, draft.slug, draft.body) == ("Renamed draft", "renamed-draft", "Body text.")
        assert effects == [{"type": "post.updated", "id": draft.pk}]
        assert (revision.action, revision.before["title"], revision.after["title"]) == (
            "update",
            "A draft",
            "Renamed draft",
        )
    elif op == "publish_post":
        draft.refresh_from_db()
        assert draft.status == "published" and draft.published_at is not None
        assert out["status"] == "published"
        assert effects == [{"type": "post.published", "id": draft.pk}]
        assert (revision.action, revision.before["status"], revision.after["status"]) == (
            "publish",
            "draft",
            "published",
        )
    elif op == "unpublish_post":
        live.refresh_from_db()
        assert (live.status, live.published_at) == ("draft", None)
        assert effects == [{"type": "post.unpublished", "id": live.pk}]
        assert (revision.action, revision.before["status"], revision.after["status"]) == (
            "unpublish",
            "published",
            "draft",
        )
    elif op == "delete_post":
        assert not Post.objects.filter(pk=draft.pk).exists()
        assert out == {"deleted": draft.pk, "title": "A draft"}
        assert effects == [{"type": "post.deleted", "id": draft.pk}]
        assert (revision.action, revision.post, revision.after) == ("delete", None, None)
        assert revision.before["id"] == draft.pk and revision.before["title"] == "A draft"


@pytest.mark.parametrize("subset", list(SUBSETS))
@pytest.mark.parametrize("op", OPERATIONS)
@pytest.mark.parametrize("role", ROLES)
def test_assistant_matrix(team, role, op, subset):
    user, blog = team.user(role), team.blog
    if role == "viewer":  # even if the flag were set, viewers never summon
        Seat.objects.filter(blog=blog, user=user).update(may_use_assistant=True)
    consent = set_consent(user, blog, SUBSETS[subset])
    draft = make_post(blog, "A draft")
    live = make_post(blog, "Live post", published=True)
    session = blog_chat(user, blog)

    actor = grants.assistant(user, blog, session)
    expected = set(SUBSETS[subset]) & ASSISTANT_CEILING[role]
    assert actor.scopes == frozenset(expected)
    assert actor.via_assistant is True and actor.consent == consent and actor.chat_session == session

    before = state(blog)
    raw = inputs_for(op, draft, live)
    if NEEDS[op] in expected:
        out, effects = perform_json(op, actor, blog, raw)
        check_success(op, out, effects, blog, draft, live, actor)
    else:
        with pytest.raises(OperationError) as exc:
            perform_json(op, actor, blog, raw)
        assert exc.value.code == "denied"
        assert exc.value.public_message == (f"Not allowed: {op} needs the {NEEDS[op]} permission, which isn't granted.")
        assert state(blog) == before


@pytest.mark.parametrize("role", ROLES)
def test_no_consent_or_revoked_consent_gives_nothing(team, role):
    user, blog = team.user(role), team.blog
    assert grants.assistant(user, blog).scopes == frozenset()
    set_consent(user, blog, ALL, revoked=True)
    actor = grants.assistant(user, blog)
    assert actor.scopes == frozenset()
    assert actor.consent is None
    with pytest.raises(OperationError) as exc:
        perform_json("list_posts", actor, blog, {})
    assert exc.value.code == "denied"


@pytest.mark.parametrize("role", ["editor", "author"])
def test_member_not_allowed_to_summon_gets_nothing(team, role):
    user, blog = team.user(role), team.blog
    set_consent(user, blog, ALL)
    Seat.objects.filter(blog=blog, user=user).update(may_use_assistant=False)
    assert grants.assistant(user, blog).scopes == frozenset()
    session = blog_chat(user, blog)
    assert catalog_for("chat", session) == []


def test_owner_summons_without_the_flag(team):
    Seat.objects.filter(blog=team.blog, user=team.owner).update(may_use_assistant=False)
    set_consent(team.owner, team.blog, [READ])
    assert grants.assistant(team.owner, team.blog).scopes == frozenset({READ})


def test_consent_of_a_removed_member_gives_nothing(team):
    set_consent(team.editor, team.blog, ALL)
    team.seat("editor").delete()
    assert grants.assistant(team.editor, team.blog).scopes == frozenset()


def test_consent_on_another_blog_does_not_count(team, other_team):
    Seat.objects.create(blog=other_team.blog, user=team.editor, role=Seat.EDITOR, may_use_assistant=True)
    set_consent(team.editor, other_team.blog, ALL)
    assert grants.assistant(team.editor, team.blog).scopes == frozenset()
    assert grants.assistant(team.editor, other_team.blog).scopes == frozenset(ALL)


def test_consent_for_another_client_is_not_the_assistants(team):
    from blog.models import Consent

    Consent.objects.create(user=team.owner, blog=team.blog, client="some-oauth-app", scopes=list(ALL))
    assert grants.assistant(team.owner, team.blog).scopes == frozenset()


# People -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_person_actor_scopes(team, role):
    actor = grants.person(team.user(role), team.blog)
    assert actor.scopes == frozenset(PERSON_SCOPES[role])
    assert actor.via_assistant is False and actor.consent is None and actor.chat_session is None


def test_person_actor_outsider_and_anonymous_have_nothing(team):
    assert grants.person(team.outsider, team.blog).scopes == frozenset()
    assert grants.person(AnonymousUser(), team.blog).scopes == frozenset()


@pytest.mark.parametrize("op", OPERATIONS)
@pytest.mark.parametrize("role", ROLES)
def test_person_matrix(team, role, op):
    user, blog = team.user(role), team.blog
    draft = make_post(blog, "A draft")
    live = make_post(blog, "Live post", published=True)
    actor = grants.person(user, blog)
    before = state(blog)
    if NEEDS[op] in PERSON_SCOPES[role]:
        out, effects = perform_json(op, actor, blog, inputs_for(op, draft, live))
        if op not in ("list_posts", "get_post"):
            revision = PostRevision.objects.filter(blog=blog).first()
            assert (revision.user, revision.via_assistant, revision.consent, revision.chat_session) == (
                user,
                False,
                None,
                None,
            )
            assert len(effects) == 1
    else:
        with pytest.raises(OperationError) as exc:
            perform_json(op, actor, blog, inputs_for(op, draft, live))
        assert exc.value.code == "denied"
        assert state(blog) == before


# The catalogue ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("subset", list(SUBSETS))
@pytest.mark.parametrize("role", ["owner", "editor", "author"])
def test_catalog_offers_exactly_the_effective_tools(team, role, subset):
    user = team.user(role)
    set_consent(user, team.blog, SUBSETS[subset])
    session = blog_chat(user, team.blog)
    names = [t["name"] for t in catalog_for("chat", session)]
    assert names == tools_for(set(SUBSETS[subset]) & ASSISTANT_CEILING[role])


def test_catalog_full_grant_specs(team):
    set_consent(team.owner, team.blog, ALL)
    specs = catalog_for("chat", blog_chat(team.owner, team.blog))
    assert [t["name"] for t in specs] == [
        "create_post",
        "delete_post",
        "get_post",
        "list_posts",
        "publish_post",
        "unpublish_post",
        "update_post",
    ]
    create = next(t for t in specs if t["name"] == "create_post")
    assert create["input_schema"]["required"] == ["title"]
    assert create["input_schema"]["additionalProperties"] is False


def test_catalog_for_viewer_with_full_consent_is_empty(team):
    Seat.objects.filter(blog=team.blog, user=team.viewer).update(may_use_assistant=True)
    set_consent(team.viewer, team.blog, ALL)
    assert catalog_for("chat", blog_chat(team.viewer, team.blog)) == []


def test_catalog_follows_narrowing_immediately(team):
    set_consent(team.editor, team.blog, ALL)
    session = blog_chat(team.editor, team.blog)
    assert len(catalog_for("chat", session)) == 7
    set_consent(team.editor, team.blog, [READ])
    assert [t["name"] for t in catalog_for("chat", session)] == ["get_post", "list_posts"]
    Seat.objects.filter(blog=team.blog, user=team.editor).update(role=Seat.AUTHOR)
    set_consent(team.editor, team.blog, ALL)
    assert [t["name"] for t in catalog_for("chat", session)] == ["create_post", "get_post", "list_posts", "update_post"]


def test_unlinked_session_gets_no_blog_tools(user):
    from agent.models import Session

    session = Session.objects.create(user=user, purpose="chat")
    assert [t for t in catalog_for("chat", session) if t["name"] in NEEDS] == []


# Tool runs: the blog boundary, unknown ids, schema violations ------------------------------------------------


def call(session, name, input, id="c1"):
    return run_tool(session, {"id": id, "name": name, "input": input})


@pytest.mark.parametrize("op", ["get_post", "update_post", "publish_post", "unpublish_post", "delete_post"])
def test_tool_cannot_reach_another_blogs_post(team, other_team, op):
    set_consent(team.owner, team.blog, ALL)
    session = blog_chat(team.owner, team.blog)
    foreign = make_post(other_team.blog, "Their secret", body="classified", published=(op == "unpublish_post"))
    before = state(other_team.blog), state(team.blog)
    raw = {"post_id": foreign.pk, **({"body": "pwned"} if op == "update_post" else {})}
    outcome = call(session, op, raw)
    assert outcome.status == "error"
    assert outcome.result == {"error": f"There is no post with id {foreign.pk} on this blog."}
    assert outcome.effects == []
    assert (state(other_team.blog), state(team.blog)) == before


def test_list_posts_only_lists_this_blog(team, other_team):
    set_consent(team.owner, team.blog, ALL)
    mine = make_post(team.blog, "Mine")
    make_post(other_team.blog, "Theirs")
    outcome = call(blog_chat(team.owner, team.blog), "list_posts", {})
    assert outcome.status == "ok"
    assert [p["id"] for p in outcome.result["items"]] == [mine.pk]


def test_unknown_post_id(team):
    set_consent(team.owner, team.blog, ALL)
    session = blog_chat(team.owner, team.blog)
    make_post(team.blog)
    before = state(team.blog)
    for op in ("get_post", "publish_post", "delete_post"):
        outcome = call(session, op, {"post_id": 987654})
        assert (outcome.status, outcome.result) == ("error", {"error": "There is no post with id 987654 on this blog."})
    assert state(team.blog) == before


@pytest.mark.parametrize(
    ("op", "raw", "message"),
    [
        ("get_post", {"post_id": "7"}, "Invalid input at post_id: '7' is not of type 'integer'"),
        ("get_post", {"post_id": True}, "Invalid input at post_id: True is not of type 'integer'"),
        ("get_post", {"post_id": 0}, "Invalid input at post_id: 0 is less than the minimum of 1"),
        ("get_post", {}, "Invalid input at input: 'post_id' is a required property"),
        (
            "delete_post",
            {"post_id": 1, "blog": "elsewhere"},
            "Invalid input at input: Additional properties are not allowed ('blog' was unexpected)",
        ),
        ("create_post", {"title": ""}, "Invalid input at title: '' should be non-empty"),
        ("create_post", {"title": "x", "body": 5}, "Invalid input at body: 5 is not of type 'string'"),
        (
            "list_posts",
            {"status": "deleted"},
            "Invalid input at status: 'deleted' is not one of ['draft', 'published']",
        ),
    ],
)
def test_schema_violations(team, op, raw, message):
    set_consent(team.owner, team.blog, ALL)
    actor = grants.assistant(team.owner, team.blog)
    before = state(team.blog)
    with pytest.raises(OperationError) as exc:
        perform_json(op, actor, team.blog, raw)
    assert (exc.value.code, exc.value.public_message) == ("invalid", message)
    outcome = call(blog_chat(team.owner, team.blog), op, raw)
    assert (outcome.status, outcome.result) == ("error", {"error": message})
    assert state(team.blog) == before


def test_title_too_long_is_refused(team):
    set_consent(team.owner, team.blog, ALL)
    actor = grants.assistant(team.owner, team.blog)
    with pytest.raises(OperationError) as exc:
        perform_json("create_post", actor, team.blog, {"title": "t" * 201})
    assert exc.value.code == "invalid" and exc.value.public_message.startswith("Invalid input at title: ")
    assert Post.objects.count() == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not json", "Input must be valid JSON."),
        ("[1, 2]", "Input must be a JSON object."),
        ([1, 2], "Input must be a JSON object."),
        (None, "Input must be a JSON object."),
    ],
)
def test_raw_input_must_be_an_object(team, raw, message):
    set_consent(team.owner, team.blog, ALL)
    with pytest.raises(OperationError) as exc:
        perform_json("list_posts", grants.assistant(team.owner, team.blog), team.blog, raw)
    assert (exc.value.code, exc.value.public_message) == ("invalid", message)


def test_json_string_input_is_accepted(team):
    set_consent(team.owner, team.blog, ALL)
    out, effects = perform_json(
        "create_post", grants.assistant(team.owner, team.blog), team.blog, '{"title": "From JSON"}'
    )
    assert out["title"] == "From JSON" and effects == [{"type": "post.created", "id": out["id"]}]


def test_unknown_operation(team):
    with pytest.raises(OperationError) as exc:
        perform_json("drop_blog", grants.person(team.owner, team.blog), team.blog, {})
    assert (exc.value.code, exc.value.public_message) == ("unknown", "Unknown operation 'drop_blog'.")


def test_blank_title_and_empty_update_are_refused(team):
    set_consent(team.owner, team.blog, ALL)
    actor = grants.assistant(team.owner, team.blog)
    draft = make_post(team.blog)
    before = state(team.blog)
    with pytest.raises(OperationError) as exc:
        perform_json("create_post", actor, team.blog, {"title": "   "})
    assert exc.value.public_message == "A post needs a title."
    with pytest.raises(OperationError) as exc:
        perform_json("update_post", actor, team.blog, {"post_id": draft.pk})
    assert exc.value.public_message == "Give a new title, body or cover to change."
    assert state(team.blog) == before


@pytest.mark.parametrize(
    "who,scopes",
    [("author", ALL), ("editor", [READ, WRITE]), ("owner", [READ, WRITE, DELETE])],
)
def test_changing_a_published_post_needs_the_publish_scope(team, who, scopes):
    """Live content is a publish-level act for people and the assistant alike (services.post_update)."""
    set_consent(team.user(who), team.blog, scopes)
    live = make_post(team.blog, "Live post", published=True)
    draft = make_post(team.blog, "A draft")
    before = state(team.blog)
    for actor in (grants.assistant(team.user(who), team.blog), grants.person(team.author, team.blog)):
        with pytest.raises(OperationError) as exc:
            perform_json("update_post", actor, team.blog, {"post_id": live.pk, "body": "Defaced"})
        assert (exc.value.code, exc.value.public_message) == (
            "denied",
            "“Live post” is published: changing it needs the right to publish, which isn't granted.",
        )
    assert state(team.blog) == before
    out, _ = perform_json(
        "update_post", grants.assistant(team.user(who), team.blog), team.blog, {"post_id": draft.pk, "body": "ok"}
    )
    assert out["id"] == draft.pk  # drafts stay a posts:write matter


def test_publishing_twice_is_a_conflict(team):
    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", published=True)
    with pytest.raises(OperationError) as exc:
        perform_json("publish_post", grants.assistant(team.owner, team.blog), team.blog, {"post_id": live.pk})
    assert (exc.value.code, exc.value.public_message) == ("conflict", "“Live post” is already published.")
    assert PostRevision.objects.count() == 0


def test_one_function_decides_for_the_catalogue_the_tool_runs_and_perform_json(team, monkeypatch):
    """`grants.allows` is the only yes-or-no: what it answers is what is offered, run and performed."""
    set_consent(team.owner, team.blog, ALL)
    draft = make_post(team.blog)
    asked = []

    def only_reading(actor, operation):
        asked.append((actor.via_assistant, operation.name))
        return operation.name in ("list_posts", "get_post")

    monkeypatch.setattr(grants, "allows", only_reading)
    chat = blog_chat(team.owner, team.blog)
    assert [t["name"] for t in catalog_for("chat", chat)] == ["get_post", "list_posts"]
    assert call(chat, "list_posts", {}).status == "ok"
    assert call(chat, "publish_post", {"post_id": draft.pk}).result == {
        "error": "The tool 'publish_post' is not available to you here. Ask the user to grant it."
    }
    with pytest.raises(OperationError) as exc:
        perform_json("publish_post", grants.person(team.owner, team.blog), team.blog, {"post_id": draft.pk})
    assert exc.value.code == "denied"
    assert ("list_posts" in {name for _, name in asked}) and (False, "publish_post") in asked
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_denied_tool_is_refused_before_the_handler(team):
    """A tool outside the grant is refused by the registry gate, not just by perform_json."""
    set_consent(team.author, team.blog, ALL)
    draft = make_post(team.blog)
    outcome = call(blog_chat(team.author, team.blog), "publish_post", {"post_id": draft.pk})
    assert outcome.status == "error"
    assert outcome.result == {
        "error": "The tool 'publish_post' is not available to you here. Ask the user to grant it."
    }
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_slugs_stay_unique_within_a_blog(team, other_team):
    set_consent(team.owner, team.blog, ALL)
    actor = grants.assistant(team.owner, team.blog)
    make_post(other_team.blog, "Same title")
    slugs = [perform_json("create_post", actor, team.blog, {"title": "Same title"})[0]["id"] for _ in range(3)]
    assert [Post.objects.get(pk=pk).slug for pk in slugs] == ["same-title", "same-title-2", "same-title-3"]


@pytest.mark.django_db
def test_a_member_removed_between_message_and_stream_reads_nothing(team, script):
    """The stream's own request checks the membership afresh: the turn was accepted, the seat is
    gone by the time the browser follows it."""
    from tests.conftest import ApiClient

    script([[{"kind": "text", "text": "hi"}, {"kind": "done", "stop_reason": "end_turn"}]])
    chat = blog_chat(team.editor, team.blog)
    api = ApiClient(team.editor)
    accepted = api.send(chat, "hello")
    assert accepted.status_code == 202
    team.seat("editor").delete()
    response = api.get(accepted.json()["stream_url"])
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


def test_the_seat_and_the_grant_read_are_this_users_on_this_blog(team, other_team, django_assert_num_queries):
    """`grants.assistant` reads the user's seat and their live assistant Consent on this blog: never
    another client's Consent, another blog's, or a revoked one; one query each."""
    from blog.models import Consent

    owner, outsider, blog = team.owner, team.outsider, team.blog
    Consent.objects.create(user=owner, blog=blog, client="other-app", scopes=[READ])  # another client's: never
    set_consent(owner, other_team.blog, [READ])  # another blog's: never
    cases = []
    for user in (owner, outsider):
        for state in ("none", "live", "revoked"):
            if state == "none":
                Consent.objects.filter(user=user, blog=blog, client="").delete()
                want = None
            else:
                want = set_consent(user, blog, [READ, WRITE], revoked=state == "revoked")
            with django_assert_num_queries(2):
                actor = grants.assistant(user, blog)
            seat = grants.seat_of(user, blog)
            if actor.consent is not None:
                assert actor.consent == want and actor.consent.scopes == [READ, WRITE]
            cases.append((user.username, state, seat is not None, actor.consent is not None, sorted(actor.scopes)))
    assert cases == [
        ("owner", "none", True, False, []),
        ("owner", "live", True, True, [READ, WRITE]),
        ("owner", "revoked", True, False, []),
        ("outsider", "none", False, False, []),
        ("outsider", "live", False, True, []),
        ("outsider", "revoked", False, False, []),
    ]
    with django_assert_num_queries(0):
        assert grants.assistant(AnonymousUser(), blog) == grants.Actor(AnonymousUser(), frozenset(), via_assistant=True)


# The policy on chat sessions ----------------------------------------------------------------------------------


def test_a_sessions_blog_comes_from_its_link_loaded_with_it_or_read_once(team, django_assert_num_queries):
    from agent.models import Session
    from blog.chat import BlogChatPolicy, blog_of

    chat = blog_chat(team.editor, team.blog)
    plain = Session.objects.create(user=team.editor, purpose="chat")  # not a blog chat
    loaded = Session.objects.select_related(*BlogChatPolicy.related)
    with_link, without_link = loaded.get(pk=chat.pk), loaded.get(pk=plain.pk)
    with django_assert_num_queries(0):
        assert blog_of(with_link) == team.blog and blog_of(without_link) is None
    unloaded = Session.objects.get(pk=chat.pk)
    with django_assert_num_queries(2):  # the link, then its blog; Django keeps both on the session
        assert blog_of(unloaded) == team.blog
    with django_assert_num_queries(0):
        assert blog_of(unloaded) == team.blog
    unlinked = Session.objects.get(pk=plain.pk)
    with django_assert_num_queries(1):  # no link: Django keeps that too
        assert blog_of(unlinked) is None and blog_of(unlinked) is None


def test_the_policy_checks_membership_afresh_on_every_call(team):
    from blog.chat import BlogChatPolicy

    policy, chat = BlogChatPolicy(), blog_chat(team.editor, team.blog)
    assert policy.may_read(chat) and policy.may_use(chat)
    assert policy.access(chat) == Access(read=True, use=True)
    Seat.objects.filter(blog=team.blog, user=team.editor).update(may_use_assistant=False)
    assert policy.may_read(chat) and not policy.may_use(chat)
    assert policy.access(chat) == Access(read=True, use=False)
    team.seat("editor").delete()
    assert not policy.may_read(chat) and not policy.may_use(chat)
    assert policy.access(chat) == Access(read=False, use=False)


def test_the_policy_answers_both_checks_with_one_read_of_the_seat(team, django_assert_num_queries):
    from blog.chat import BlogChatPolicy

    chat = Session.objects.select_related("user", "blog_link__blog").get(pk=blog_chat(team.editor, team.blog).pk)
    with django_assert_num_queries(1):
        assert BlogChatPolicy().access(chat) == Access(read=True, use=True)


def test_a_member_who_may_read_but_not_use_the_chat_is_refused_a_message_and_an_approval(client, team):
    chat = blog_chat(team.editor, team.blog)
    Seat.objects.filter(blog=team.blog, user=team.editor).update(may_use_assistant=False)
    client.force_login(team.editor)
    base = f"/api/agent/sessions/{chat.pk}"
    sent = client.post(f"{base}/messages", {"text": "hi"}, content_type="application/json")
    assert sent.status_code == 403 and sent.json()["error"]["code"] == "forbidden"
    decided = client.post(f"{base}/approvals/{uuid.uuid4()}", {"approve": True}, content_type="application/json")
    assert decided.status_code == 403 and decided.json()["error"]["code"] == "forbidden"
    assert client.get(base).status_code == 200  # still a member: the chat stays readable
    assert not chat.messages.exists()
