"""The offline demo model: understands a few plain requests, whatever the line breaks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from agent.backends import get_backend
from blog.demo import DemoBackend, intent, requests


@pytest.mark.parametrize(
    "text,expected",
    [
        ("list my posts", ("list", "")),
        ("list my\nposts please", ("list", "")),
        ("Draft a post titled Morning light", ("draft", "Morning light")),
        ("draft a post titled “Morning light”", ("draft", "Morning light")),
        ("publish Morning light", ("publish", "Morning light")),
        ("unpublish Morning light", ("unpublish", "Morning light")),
        ("delete Old notes", ("delete", "Old notes")),
        ("yes", ("yes", "")),
        ("write something long", ("long", "")),
        ("Write a short draft about autumn birds", ("draft", "Autumn birds")),
        ("write a post on “Winter wrens”.", ("draft", "Winter wrens")),
        ("publish it", ("publish", "it")),
        ("Could you please publish “Notes from the river”?", ("publish", "Notes from the river")),
        ("delete the post Old notes, please.", ("delete", "Old notes")),
        ("what posts do I have?", ("list", "")),
        ("publish A long walk", ("publish", "A long walk")),  # (not "write something long")
        ("unpublish the post", ("unpublish", "the post")),
        ("what's the weather?", ("help", "")),
    ],
)
def test_intents(text, expected):
    assert intent(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("draft a post titled „Über den Café-Tisch“", ("draft", "Über den Café-Tisch")),
        ("draft a post titled »Kaffee am Morgen«", ("draft", "Kaffee am Morgen")),
        ("draft a post titled « Café du matin »", ("draft", "Café du matin")),
        ("draft a post titled «Café du matin».", ("draft", "Café du matin")),
        ("draft a post titled ‘Tea time’", ("draft", "Tea time")),
        ("draft a post titled 「秋の鳥」", ("draft", "秋の鳥")),
        ("write a post about 『秋の鳥』。", ("draft", "秋の鳥")),
        ("publish 「秋の鳥」", ("publish", "秋の鳥")),
        ("publish 秋の鳥。", ("publish", "秋の鳥")),
        ("publish the post «Привет, мир»!", ("publish", "Привет, мир")),
        ("delete ＂秋＂", ("delete", "秋")),
        ("rename this post to „Abendlicht“", ("rename", "Abendlicht")),
        ("publish שלום עולם", ("publish", "שלום עולם")),
    ],
)
def test_a_title_in_the_quotes_and_stops_of_other_languages_is_read_without_them(text, expected):
    assert intent(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("write a post about autumn birds and publish it", ["write a post about autumn birds", "publish it"]),
        ("Draft a post titled Fish, then list my posts", ["Draft a post titled Fish", "list my posts"]),
        ("draft a post titled Salt and pepper", ["draft a post titled Salt and pepper"]),
        ("publish Salt and pepper and then list my posts", ["publish Salt and pepper", "list my posts"]),
        ("list my posts; delete Old notes", ["list my posts", "delete Old notes"]),
        ("write something long and publish it", ["write something long and publish it"]),  # (not a tool's)
        ("list my posts", ["list my posts"]),
    ],
)
def test_a_message_of_several_requests_is_split_only_where_each_part_is_one(text, expected):
    assert requests(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("write a short post about tide pools and show me the draft", ("draft", "Tide pools")),
        ("Write a post about tide pools and show me it.", ("draft", "Tide pools")),
        ("write a post about tide pools and then show me it", ("draft", "Tide pools")),
        ("write a post about “Tide pools” and let me see it", ("draft", "Tide pools")),
        ("write a post about tide pools and let me see the draft!", ("draft", "Tide pools")),
        ("write a post about tide pools, then show me", ("draft", "Tide pools")),
        ("could you write a post about tide pools and show me, please?", ("draft", "Tide pools")),
        # A subject that only has such words in it keeps them: the clause is a request only at the end.
        ("write a post about what the tide pools show me", ("draft", "What the tide pools show me")),
        ("write a post about tide pools and show me the way", ("draft", "Tide pools and show me the way")),
        ("write a post about show and tell", ("draft", "Show and tell")),
        ("draft a post titled Show me the draft", ("draft", "Show me the draft")),  # (a title, as asked)
    ],
)
def test_a_request_to_see_the_draft_after_its_subject_is_not_part_of_its_title(text, expected):
    assert intent(text) == expected


def test_a_draft_asked_to_be_shown_is_drafted_under_its_subject_alone(settings):
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("create_post", "list_posts")]
    text = "write a short post about tide pools and show me the draft"
    assert requests(text) == [text]  # (one request: "show me the draft" is not one of its own)
    user = {"role": "user", "parts": [{"type": "text", "text": text}]}
    events = list(DemoBackend().stream(system="", messages=[user], tools=tools, model="demo"))
    assert [(e["name"], e["input"]["title"]) for e in events if e["kind"] == "tool_use"] == [
        ("create_post", "Tide pools")
    ]
    # "…and show me the post" was, and stays, a second request: the list of posts, the new one in it.
    assert requests("write a post about tide pools and show me the post") == [
        "write a post about tide pools",
        "show me the post",
    ]


def _delete_flow(settings, confirm_tools):
    settings.AGENT_CONFIRM_TOOLS = confirm_tools
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "delete_post")]
    messages = [{"role": "user", "parts": [{"type": "text", "text": "delete Old notes"}]}]
    return list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))


def test_delete_goes_to_the_approval_buttons_when_they_exist(settings):
    events = _delete_flow(settings, ["delete_post"])
    assert [e["name"] for e in events if e["kind"] == "tool_use"] == ["list_posts"]


def test_delete_asks_in_words_without_approvals(settings):
    events = _delete_flow(settings, [])
    assert not [e for e in events if e["kind"] == "tool_use"]
    assert "Reply “yes” to confirm" in "".join(e.get("text", "") for e in events)


def test_the_demo_is_the_blogs_backend_registered_by_setting(settings):
    """The engine ships no `demo`: `AGENT_BACKEND_CLASSES` adds it, read when a backend is asked for."""
    settings.AGENT_BACKEND = "demo"
    assert settings.AGENT_BACKEND_CLASSES == {"demo": "blog.demo.DemoBackend"}
    assert type(get_backend()) is DemoBackend and get_backend("demo") is get_backend()
    settings.AGENT_BACKEND_CLASSES = {}
    with pytest.raises(ImproperlyConfigured) as exc:
        get_backend()
    assert exc.value.args == (
        "AGENT_BACKEND must be one of anthropic, bedrock, fake, openai, openai-responses; got 'demo'.",
    )


def test_a_draft_about_a_subject_is_titled_after_it_and_it_is_what_publish_it_publishes(tmp_path, capsys, db):
    """Through real turns and tools: the words a newcomer types first, then a pronoun for what was drafted."""
    dataset = tmp_path / "it.yaml"
    dataset.write_text("""
name: it
posts:
  - {title: "Notes from the river", status: draft}
cases:
  - id: draft-about-then-publish-it
    requests: ["Write a short draft about autumn birds", "publish it"]
    approve: true
    expect_tools: [create_post, list_posts, publish_post]
    expect_state:
      - post: {title: "Autumn birds", status: published}
      - post: {title: "Notes from the river", status: draft}
""")
    call_command("agent_eval", "--backend", "demo", "--dataset", str(dataset))
    assert "passed — demo: 1/1" in capsys.readouterr().out  # (a failing case raises)


def test_several_requests_in_one_message_are_done_in_turn_in_one_turn(tmp_path, capsys, db):
    """Through real turns and tools: "draft X and publish it" drafts X, then publishes it (approved),
    and a list asked for after a draft shows the draft."""
    dataset = tmp_path / "several.yaml"
    dataset.write_text("""
name: several
posts:
  - {title: "Notes from the river", status: draft}
cases:
  - id: draft-and-publish-it
    requests: ["Write a post about autumn birds and publish it"]
    approve: true
    expect_tools: [create_post, list_posts, publish_post]
    expect_state:
      - post: {title: "Autumn birds", status: published}
      - post: {title: "Notes from the river", status: draft}
  - id: draft-then-list
    requests: ["Could you draft a post titled Salt and pepper, then list my posts?"]
    expect_tools: [create_post, list_posts]
    expect_state:
      - post: {title: "Salt and pepper", status: draft}
""")
    call_command("agent_eval", "--backend", "demo", "--dataset", str(dataset))
    assert "passed — demo: 2/2" in capsys.readouterr().out  # (a failing case raises)


def test_each_request_of_several_is_answered_in_the_turns_text(settings):
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("create_post", "list_posts")]
    user = {"role": "user", "parts": [{"type": "text", "text": "draft a post titled Fish and list my posts"}]}
    first = list(DemoBackend().stream(system="", messages=[user], tools=tools, model="demo"))
    assert [(e["name"], e["input"]["title"]) for e in first if e["kind"] == "tool_use"] == [("create_post", "Fish")]
    made = {"id": 3, "title": "Fish", "status": "draft"}
    messages = [
        user,
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "c1", "name": "create_post", "input": {}}]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": "c1", "name": "create_post", "status": "ok", "result": made}
            ],
        },
    ]
    second = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert "".join(e.get("text", "") for e in second) == "Done: I drafted “Fish”.\n\nLet me look at your posts."
    assert [e["name"] for e in second if e["kind"] == "tool_use"] == ["list_posts"]


def test_a_drafts_body_does_not_repeat_its_title_as_a_heading(settings):
    """The post page shows the title as its heading: a body starting "# Morning light" showed it twice."""
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": "create_post", "description": "", "input_schema": {}}]
    user = {"role": "user", "parts": [{"type": "text", "text": "draft a post titled Morning light"}]}
    events = list(DemoBackend().stream(system="", messages=[user], tools=tools, model="demo"))
    (call,) = [e for e in events if e["kind"] == "tool_use"]
    assert call["input"]["title"] == "Morning light"
    assert call["input"]["body"] == "A first draft, written by the demo assistant. Edit me!"


def test_renaming_a_post_that_has_a_cover_does_not_claim_to_have_set_it(settings):
    """A tool's result says whether the post has a cover (`"cover": true`); only the draft made from a
    photo set it. Renaming such a post answered "Done: I updated “Blue square” with your photo as its
    cover." in a chat that had no photo."""
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": "update_post", "description": "", "input_schema": {}}]
    user = {"role": "user", "parts": [{"type": "text", "text": "rename this post to Blue square"}]}
    done = {"id": 4, "title": "Blue square", "status": "draft", "cover": True}
    messages = [
        user,
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "c1", "name": "update_post", "input": {}}]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_result", "tool_use_id": "c1", "name": "update_post", "status": "ok", "result": done}
            ],
        },
    ]
    events = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert "".join(e.get("text", "") for e in events) == "Done: I updated “Blue square”."


def test_publish_it_with_nothing_drafted_asks_which_post(settings):
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "publish_post")]
    messages = [{"role": "user", "parts": [{"type": "text", "text": "publish it"}]}]
    events = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert not [e for e in events if e["kind"] == "tool_use"]
    assert "".join(e.get("text", "") for e in events) == "Which post? Say its title, like “publish Morning light”."


def test_a_request_past_the_grant_is_refused_in_the_clients_screens_words(settings):
    """What a person reads names what they may allow, never a tool's name ("list_posts")."""
    settings.AGENT_DEMO_DELAY_MS = 0
    messages = [{"role": "user", "parts": [{"type": "text", "text": "list my posts"}]}]
    events = list(DemoBackend().stream(system="", messages=messages, tools=[], model="demo"))
    assert not [e for e in events if e["kind"] == "tool_use"]
    assert "".join(e.get("text", "") for e in events) == (
        "I'm not allowed to read posts on this blog for you. "
        "The Clients screen shows what I may do, and lets you change it."
    )


def test_a_delete_confirmed_in_words_says_it_is_done(settings):
    """Without the approval buttons: "delete X", "yes", the list, the delete, then one sentence (the
    delete's result once ended the turn with a ValueError: its answer was a bare sentence, not
    (text, calls); mypy found it)."""
    settings.AGENT_CONFIRM_TOOLS = []
    settings.AGENT_DEMO_DELAY_MS = 0
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "delete_post")]
    post = {"id": 7, "title": "Old notes", "status": "draft"}

    def result(call_id, name, value):
        part = {"type": "tool_result", "tool_use_id": call_id, "name": name, "status": "ok", "result": value}
        return {"role": "tool", "parts": [part]}

    def call(call_id, name):
        return {"role": "assistant", "parts": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}]}

    messages = [
        {"role": "user", "parts": [{"type": "text", "text": "delete Old notes"}]},
        {
            "role": "assistant",
            "parts": [{"type": "text", "text": "Delete “Old notes”? This can't be undone. Reply “yes” to confirm."}],
        },
        {"role": "user", "parts": [{"type": "text", "text": "yes"}]},
        call("c1", "list_posts"),
        result("c1", "list_posts", {"items": [post]}),
    ]
    events = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert [(e["name"], e["input"]) for e in events if e["kind"] == "tool_use"] == [("delete_post", {"post_id": 7})]
    messages += [call("c2", "delete_post"), result("c2", "delete_post", {"id": 7, "title": "Old notes"})]
    events = list(DemoBackend().stream(system="", messages=messages, tools=tools, model="demo"))
    assert not [e for e in events if e["kind"] == "tool_use"]
    assert "".join(e.get("text", "") for e in events) == "Done: I deleted “Old notes”."


def test_a_call_refused_because_the_grant_changed_mid_turn_is_told_in_the_clients_screens_words(settings):
    """Revoked in another tab after the call was offered (or while it waited for Approve): the person
    reads what the Clients screen calls it, not the engine's words for the model ("The tool
    'publish_post' is not available to you here. Ask the user to grant it.")."""
    settings.AGENT_DEMO_DELAY_MS = 0
    refused = {"error": "The tool 'publish_post' is not available to you here. Ask the user to grant it."}
    messages = [
        {"role": "user", "parts": [{"type": "text", "text": "publish Fish"}]},
        {"role": "assistant", "parts": [{"type": "tool_use", "id": "c1", "name": "publish_post", "input": {}}]},
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "name": "publish_post",
                    "status": "error",
                    "result": refused,
                }
            ],
        },
    ]
    events = list(DemoBackend().stream(system="", messages=messages, tools=[], model="demo"))
    assert "".join(e.get("text", "") for e in events) == (
        "I'm not allowed to publish posts on this blog for you. "
        "The Clients screen shows what I may do, and lets you change it."
    )
