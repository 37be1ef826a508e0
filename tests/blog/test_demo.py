"""The offline demo model: understands a few plain requests, whatever the line breaks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from agent.backends import get_backend
from blog.demo import DemoBackend, intent


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
