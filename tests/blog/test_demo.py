"""The offline demo model: understands a few plain requests, whatever the line breaks."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from agent.backends import get_backend
from blog.demo import DemoBackend
from blog.demo_grammar import intent, requests


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
        ("rename this post to A long walk", ("rename", "A long walk")),  # (nor here)
        ("rename this post to The story so far", ("rename", "The story so far")),
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


def test_something_long_is_forty_paragraphs_as_it_says():
    from agent.markdown import render_markdown

    messages = [{"role": "user", "parts": [{"type": "text", "text": "write something long"}]}]
    text = "".join(
        e.get("text", "") for e in DemoBackend().stream(system="", messages=messages, tools=[], model="demo")
    )
    html = render_markdown(text)
    assert html.count("<p>") == 40
    assert html.index("Paragraph 1:") < html.index("Paragraph 40:")


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


# What the chat beside an editor suggests, and the blog page's lists by status, session 36 --------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("suggest three titles", ("titles", "")),
        ("Suggest a title", ("titles", "")),
        ("suggest some titles for this post", ("titles", "")),
        ("give me three title ideas", ("titles", "")),
        ("Could you suggest three titles, please?", ("titles", "")),
        ("tighten the second paragraph", ("tighten", "second")),
        ("Tighten the first paragraph.", ("tighten", "first")),
        ("tighten the third paragraph please", ("tighten", "third")),
        ("tighten the last paragraph", ("tighten", "last")),
        ("tighten paragraph 2", ("tighten", "2")),
        ("tighten it", ("tighten", "")),
        ("tighten this post", ("tighten", "")),
        ("tighten up the post", ("tighten", "")),
        ("list my drafts", ("list", "draft")),
        ("show my drafts", ("list", "draft")),
        ("what drafts do I have?", ("list", "draft")),
        ("list my draft posts", ("list", "draft")),
        ("list my published posts", ("list", "published")),
        ("show my unpublished posts", ("list", "draft")),
        ("what posts have I published?", ("list", "published")),
        ("list my posts", ("list", "")),
        ("draft a post titled Suggest three titles", ("draft", "Suggest three titles")),  # (a title, as asked)
        ("publish Tighten it", ("publish", "Tighten it")),
    ],
)
def test_the_editors_suggestions_and_lists_by_status_are_understood(text, expected):
    assert intent(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("draft a post titled “Tide pools” and show me the draft", ("draft", "Tide pools")),
        ("draft a post titled Tide pools, then let me see it", ("draft", "Tide pools")),
        ("publish Morning light and show me it", ("publish", "Morning light")),
        ("publish “Morning light” and then show me", ("publish", "Morning light")),
        ("unpublish Morning light and let me see it", ("unpublish", "Morning light")),
        ("delete Old notes and show me", ("delete", "Old notes")),
        ("rename this post to Evening light and show me it", ("rename", "Evening light")),
        # Only at the end, only those words: a title that has them otherwise keeps them.
        ("publish Show me the way", ("publish", "Show me the way")),
        ("publish Tide pools and show me the way", ("publish", "Tide pools and show me the way")),
        ("draft a post titled Show me the draft", ("draft", "Show me the draft")),
    ],
)
def test_a_request_to_see_it_after_a_title_is_not_part_of_the_title(text, expected):
    assert intent(text) == expected
    assert requests(text) == [text]  # (one request: "show me it" is not one of its own)


def test_the_help_names_what_the_demo_does_beside_the_editor_and_the_drafts_list():
    from blog.demo_grammar import HELP

    for phrase in ("“list my drafts”", "“suggest three titles”", "“tighten the second paragraph”"):
        assert phrase in HELP
    # Finding posts by their words, and beside the editor the cover removed with no title named.
    editor = HELP.split("beside a post's editor")[1]
    assert "“find posts about birds”" in HELP and "“remove the cover”" in editor


def test_the_empty_editor_chat_suggests_only_what_the_demo_does():
    """Each suggestion of the empty chat beside an editor is a request the demo understands."""
    from pathlib import Path

    import blog

    template = (Path(blog.__file__).parent / "templates/blog/_chat_log.html").read_text()
    suggested = re.findall(r"“([^”]+)”", template.split("{% if panel_post %}")[1].split("{% else %}")[0])
    assert len(suggested) == 3
    for phrase in suggested:
        assert intent(phrase.replace("…", "Evening light"))[0] in ("rename", "tighten", "titles"), phrase


# Tightening a paragraph: filler words out, everything else as it was ----------------------------------------------


@pytest.mark.parametrize(
    "body,which,expected_body,removed",
    [
        (
            "First stays very much as it is.\n\nIt was really very cold, and we just walked on.\n\nThird.",
            "second",
            "First stays very much as it is.\n\nIt was cold, and we walked on.\n\nThird.",
            ["really", "very", "just"],
        ),
        (
            "Really good light.\n\nIn order to see it, we left early.",
            "first",
            "Good light.\n\nIn order to see it, we left early.",
            ["really"],
        ),
        (
            "A.\n\nIn order to see it, we basically left early.",
            "last",
            "A.\n\nTo see it, we left early.",
            ["in order to", "basically"],
        ),
        # Markdown stays: emphasis, links, inline code, line breaks. A list is not part of the paragraph
        # before it, even with no blank line between (the page shows a paragraph, then a list)...
        (
            "# Heading\n\nIt is *very* nice, **really** [just here](https://x.test/very-just) and `just code`.\n"
            "- simply the list\n- a very short item",
            "first",
            "# Heading\n\nIt is *very* nice, **really** [here](https://x.test/very-just) and `just code`.\n"
            "- simply the list\n- a very short item",
            ["just"],
        ),
        # ...nor counted as one: the paragraphs are the page's top-level ones, not a list's or a quote's.
        (
            "- One.\n- Two.\n\n> Quoted.\n\nFirst is very good.",
            "first",
            "- One.\n- Two.\n\n> Quoted.\n\nFirst is good.",
            ["very"],
        ),
        # The whole post is every paragraph, a list's and a quote's too; their markers stay.
        (
            "It is *very* nice.\n- simply the list\n- a very short item\n\n> Just a quote.\n>\n>     just code",
            "",
            "It is *very* nice.\n- the list\n- a short item\n\n> A quote.\n>\n>     just code",
            ["simply", "very", "just"],
        ),
        # Where removing a word would change what is said, it stays.
        (
            "Not very far, it isn't really cold, not just here: quite a few, thank you very much, simply put, "
            "dressed simply. Just as well, really?",
            "first",
            "Not very far, it isn't really cold, not just here: quite a few, thank you very much, simply put, "
            "dressed simply. Just as well, really?",
            [],
        ),
        # Headings, code blocks and tables are not paragraphs; the whole post is every paragraph.
        (
            "## Very big\n\n```\njust code\n\nvery code\n```\n\nOne really.\n\n| very | just |\n|---|---|\n\nTwo is just fine.",
            "",
            "## Very big\n\n```\njust code\n\nvery code\n```\n\nOne really.\n\n| very | just |\n|---|---|\n\nTwo is fine.",
            ["just"],
        ),
        ("One.\r\n\r\nTwo is very good.\r\n", "2", "One.\r\n\r\nTwo is good.\r\n", ["very"]),
        # A heading underlined, a rule, a link's definition, indented code: none is a paragraph.
        (
            "Very big\n===\n\nOne is just fine.\n\n---\n\n[very]: https://x.test/just\n\n    just code\n\nTwo, very.",
            "second",
            "Very big\n===\n\nOne is just fine.\n\n---\n\n[very]: https://x.test/just\n\n    just code\n\nTwo, very.",
            [],
        ),
        ("Last line.\n\n  Really no newline", "last", "Last line.\n\n  No newline", ["really"]),
        # The page shows HTML as text (agent.markdown renders with raw HTML off): its words are prose,
        # its tags stay.
        ("<div>\nIt is very nice.\n</div>", "", "<div>\nIt is nice.\n</div>", ["very"]),
    ],
)
def test_tightening_removes_filler_words_from_that_paragraph_only(body, which, expected_body, removed):
    from blog.demo_writing import tighten

    done = tighten(body, which)
    assert (done.body, done.removed) == (expected_body, removed)


def test_tightening_a_paragraph_that_is_not_there_says_how_many_there_are():
    from blog.demo_writing import tighten

    done = tighten("# Only a heading\n\nOne paragraph, very short.", "third")
    assert (done.body, done.removed, done.paragraphs) == (None, [], 1)


def test_suggested_titles_are_three_made_of_the_posts_own_words():
    from blog.demo_writing import suggest_titles

    titles = suggest_titles("Notes from the river", "The heron was back this morning.\n\n*More soon.*")
    assert len(titles) == 3 and len({t.casefold() for t in titles}) == 3
    assert "Notes from the river" not in titles
    assert titles[0] == "The heron was back this morning"
    words = set(re.findall(r"\w+", "Notes from the river The heron was back this morning More soon".casefold()))
    for title in titles:
        assert set(re.findall(r"\w+", title.casefold())) <= words | {"revisited", "again", "in", "short", "and"}
    # A code block's comment is not a heading; a heading underlined is one.
    titles = suggest_titles("Tools", "```sh\n# install the tools\n```\n\nShort.\n\nSetting up\n---")
    assert titles[0] == "Setting up" and "Install the tools" not in titles
    # Even a post with no body has three.
    assert len(set(suggest_titles("Editor chat check", ""))) == 3


# Through the demo's stream: beside an editor, and on the blog page -----------------------------------------------

EDITOR = "alice has the post “River” (post_id 7) open in the editor beside you; “this post”, …"
EDIT_TOOLS = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "get_post", "update_post")]


def _turn(settings, system, *messages, tools=EDIT_TOOLS):
    settings.AGENT_DEMO_DELAY_MS = 0
    events = list(DemoBackend().stream(system=system, messages=list(messages), tools=tools, model="demo"))
    calls = [(e["name"], e["input"]) for e in events if e["kind"] == "tool_use"]
    return "".join(e.get("text", "") for e in events), calls


def _user(text):
    return {"role": "user", "parts": [{"type": "text", "text": text}]}


def _called(call_id, name, result, args=None):
    return [
        {"role": "assistant", "parts": [{"type": "tool_use", "id": call_id, "name": name, "input": args or {}}]},
        {
            "role": "tool",
            "parts": [{"type": "tool_result", "tool_use_id": call_id, "name": name, "status": "ok", "result": result}],
        },
    ]


RIVER = {"id": 7, "title": "River", "status": "draft", "body": "Morning.\n\nThe heron was really very still."}


def test_tighten_the_second_paragraph_reads_the_open_post_then_updates_its_body(settings):
    user = _user("tighten the second paragraph")
    text, calls = _turn(settings, EDITOR, user)
    assert calls == [("get_post", {"post_id": 7})]
    text, calls = _turn(settings, EDITOR, user, *_called("c1", "get_post", RIVER))
    assert calls == [("update_post", {"post_id": 7, "body": "Morning.\n\nThe heron was still."})]
    assert text == "Tightening the second paragraph: 2 filler words to remove (really, very)."
    done = {"id": 7, "title": "River", "status": "draft"}
    messages = [user, *_called("c1", "get_post", RIVER), *_called("c2", "update_post", done)]
    text, calls = _turn(settings, EDITOR, *messages)
    assert (text, calls) == ("Done: I removed 2 filler words from the second paragraph of “River”.", [])


@pytest.mark.parametrize(
    "request_,said",
    [
        (
            "tighten the first paragraph",
            "The first paragraph has none of the filler words I remove (very, really, just, quite, actually, "
            "basically, simply, “in order to”), so I left it as it is.",
        ),
        ("tighten the third paragraph", "“River” has 2 paragraphs, so there is no third one to tighten."),
    ],
)
def test_nothing_to_tighten_is_said_plainly_and_nothing_is_written(settings, request_, said):
    text, calls = _turn(settings, EDITOR, _user(request_), *_called("c1", "get_post", RIVER))
    assert (text, calls) == (said, [])


def test_tighten_it_tightens_every_paragraph(settings):
    post = {**RIVER, "body": "It was just dawn.\n\nThe heron was really very still."}
    text, calls = _turn(settings, EDITOR, _user("tighten it"), *_called("c1", "get_post", post))
    assert calls == [("update_post", {"post_id": 7, "body": "It was dawn.\n\nThe heron was still."})]
    assert text == "Tightening the post: 3 filler words to remove (just, really, very)."


def test_suggest_three_titles_reads_the_open_post_and_writes_nothing(settings):
    user = _user("suggest three titles")
    text, calls = _turn(settings, EDITOR, user)
    assert calls == [("get_post", {"post_id": 7})]
    text, calls = _turn(settings, EDITOR, user, *_called("c1", "get_post", RIVER))
    assert calls == []
    assert text.startswith("Three titles made of the post's own words:\n\n1. ")
    assert re.findall(r"^\d\. .+$", text, re.M) == [f"{i}. {t}" for i, t in enumerate(suggest(RIVER), 1)]
    assert text.endswith("To use one, say “rename this post to …” with it.")


def suggest(post):
    from blog.demo_writing import suggest_titles

    return suggest_titles(post["title"], post["body"])


@pytest.mark.parametrize("request_", ["tighten the second paragraph", "suggest three titles"])
def test_away_from_the_editor_the_editors_requests_ask_for_the_post(settings, request_):
    text, calls = _turn(settings, "A blog chat.", _user(request_))
    assert (text, calls) == ("Which post? Open it in the editor and ask me there.", [])


def test_tighten_without_the_write_grant_is_refused_before_reading(settings):
    tools = [{"name": n, "description": "", "input_schema": {}} for n in ("list_posts", "get_post")]
    text, calls = _turn(settings, EDITOR, _user("tighten it"), tools=tools)
    assert calls == []
    assert text == (  # (the Clients screen's words for posts:write)
        "I'm not allowed to draft posts on this blog for you. "
        "The Clients screen shows what I may do, and lets you change it."
    )


@pytest.mark.parametrize("request_", ["remove the cover", "remove its cover"])
def test_remove_the_cover_names_no_post_so_it_is_the_open_one_or_the_chats_last(settings, request_):
    """Beside an editor, the open post; on the blog page, the post the chat last drafted or changed, as for
    "remove the cover of this post"; with none, a question. (Each was help's answer.)"""
    removed = [("update_post", {"post_id": 7, "remove_cover": True})]
    assert _turn(settings, EDITOR, _user(request_)) == ("Removing its cover.", removed)
    drafted = _called("c1", "create_post", {"id": 3, "title": "Fish", "status": "draft"})
    done = {"role": "assistant", "parts": [{"type": "text", "text": "Done: I drafted “Fish”."}]}
    text, calls = _turn(settings, "A blog chat.", _user("draft a post titled Fish"), *drafted, done, _user(request_))
    assert (text, calls) == ("Looking for “Fish”.", [("list_posts", {"query": "Fish"})])
    text, calls = _turn(settings, "A blog chat.", _user(request_))
    assert (text, calls) == ("Which post? Say its title, like “remove the cover of Morning light”.", [])


@pytest.mark.parametrize(
    "request_,status,heading",
    [
        ("list my drafts", "draft", "Here are your drafts:"),
        ("list my published posts", "published", "Here are your published posts:"),
    ],
)
def test_a_list_by_status_asks_the_tool_for_that_status(settings, request_, status, heading):
    user = _user(request_)
    text, calls = _turn(settings, "", user)
    assert calls == [("list_posts", {"status": status})]
    items = [{"id": 1, "title": "Notes from the river", "status": status}]
    text, calls = _turn(settings, "", user, *_called("c1", "list_posts", {"items": items}, {"status": status}))
    assert (text, calls) == (f"{heading}\n\n- **Notes from the river** ({status})\n", [])
    text, calls = _turn(settings, "", user, *_called("c1", "list_posts", {"items": []}, {"status": status}))
    assert text == {"draft": "You have no drafts.", "published": "You have no published posts."}[status]


@pytest.mark.django_db
@pytest.mark.parametrize("approve", [True, False])
def test_tightening_through_real_turns_waits_for_approval_like_any_update(team, consent, settings, approve):
    """The grant and the approval buttons hold for the demo's edit as for any update_post."""
    from agent import approvals, turns
    from agent.backends import reset_backends
    from agent.models import Approval
    from blog.chat import start_session
    from blog.models import Post
    from tests.blog.conftest import ALL, make_post

    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS = "demo", 0
    settings.AGENT_CONFIRM_TOOLS = ["update_post"]
    reset_backends()
    consent(team.owner, team.blog, ALL)
    body = "# River\n\nMorning.\n\nThe heron was *really* very still, just there."
    post = make_post(team.blog, "River", body)
    session = start_session(team.owner, team.blog, post)
    run, _ = turns.begin(session, "tighten the second paragraph")
    steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
    assert [s[1]["name"] for s in steps if s[0] == "tool_use"] == ["get_post", "update_post"]
    assert steps[-1][0] == "confirm"
    post.refresh_from_db()
    assert post.body == body  # nothing written before the person decides
    (waiting,) = Approval.objects.filter(session=session, status=Approval.PENDING)
    approvals.decide(session, waiting.pk, team.owner, approve)
    said = "".join(s[1]["text"] for s in turns.drive(turns.resume(session)) if s[0] == "token")
    post.refresh_from_db()
    if approve:
        assert post.body == "# River\n\nMorning.\n\nThe heron was *really* still, there."
        assert said == "Done: I removed 2 filler words from the second paragraph of “River”."
    else:
        assert post.body == body
        assert said == "All right, I left it as it was."
    assert post.status == Post.DRAFT


# Asking for posts by their words: a search through list_posts' query --------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("search posts for birds", ("search", "birds")),
        ("search my posts for birds", ("search", "birds")),
        ("Search my posts for “autumn birds”, please.", ("search", "autumn birds")),
        ("search for birds", ("search", "birds")),
        ("find posts about birds", ("search", "birds")),
        ("find posts mentioning birds", ("search", "birds")),
        ("find the posts that mention birds", ("search", "birds")),
        ("Which posts mention birds?", ("search", "birds")),
        ("what posts mention birds?", ("search", "birds")),
        ("posts about birds", ("search", "birds")),
        ("my posts about birds", ("search", "birds")),
        ("show me posts about birds", ("search", "birds")),
        ("list my posts about birds", ("search", "birds")),
        ("could you find posts about\nbirds?", ("search", "birds")),
        ("find drafts about birds", ("search", "birds")),
        ("which of my drafts mention birds", ("search", "birds")),
        ("find posts about a long walk", ("search", "a long walk")),  # (not "write something long")
        ("find posts about publishing", ("search", "publishing")),
        # The requests around it are what they were.
        ("list my posts", ("list", "")),
        ("list my drafts", ("list", "draft")),
        ("what posts do I have?", ("list", "")),
        ("show me the post", ("list", "")),
        ("write a post about autumn birds", ("draft", "Autumn birds")),
        ("draft a post titled Posts about birds", ("draft", "Posts about birds")),
        ("write a short draft about posts about birds", ("draft", "Posts about birds")),
        ("publish Posts about birds", ("publish", "Posts about birds")),
        ("remove the cover of Posts about birds", ("uncover", "Posts about birds")),
        ("remove the cover", ("uncover", "it")),
    ],
)
def test_asking_for_posts_by_their_words_is_a_search(text, expected):
    assert intent(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("find posts about birds", {"query": "birds"}),
        ("search posts for birds", {"query": "birds"}),
        ("find drafts about birds", {"query": "birds", "status": "draft"}),
        ("search my unpublished posts for birds", {"query": "birds", "status": "draft"}),
        ("which of my published posts mention birds?", {"query": "birds", "status": "published"}),
        # The status is read from the words before the subject, never from the subject itself.
        ("find posts about published drafts", {"query": "published drafts"}),
    ],
)
def test_a_search_asks_list_posts_for_its_words_and_the_status_named(text, expected):
    from blog.demo_grammar import search_args

    assert search_args(text) == expected


def test_a_search_is_split_from_the_requests_around_it():
    assert requests("find posts about salt and pepper") == ["find posts about salt and pepper"]
    assert requests("find drafts about birds, then publish Morning light") == [
        "find drafts about birds",
        "publish Morning light",
    ]
    assert requests("write a post about autumn birds and find posts about birds") == [
        "write a post about autumn birds",
        "find posts about birds",
    ]


@pytest.mark.parametrize(
    "request_,args,found,none",
    [
        (
            "find posts about birds",
            {"query": "birds"},
            "Here are your posts that mention “birds”:",
            "No posts mention “birds”.",
        ),
        (
            "find drafts about birds",
            {"query": "birds", "status": "draft"},
            "Here are your drafts that mention “birds”:",
            "No drafts mention “birds”.",
        ),
    ],
)
def test_a_search_lists_what_it_found_as_a_list_does_or_says_none_match(settings, request_, args, found, none):
    user = _user(request_)
    text, calls = _turn(settings, "", user)
    assert calls == [("list_posts", args)]
    items = [{"id": 1, "title": "Autumn birds", "status": "draft"}]
    text, calls = _turn(settings, "", user, *_called("c1", "list_posts", {"items": items}, args))
    assert (text, calls) == (f"{found}\n\n- **Autumn birds** (draft)\n", [])
    text, calls = _turn(settings, "", user, *_called("c1", "list_posts", {"items": []}, args))
    assert (text, calls) == (none, [])


def test_a_search_without_the_read_grant_is_refused_in_the_clients_screens_words(settings):
    text, calls = _turn(settings, "", _user("find posts about birds"), tools=[])
    assert calls == []
    assert text.startswith("I'm not allowed to ")


@pytest.mark.django_db
def test_the_demo_finds_posts_by_their_words_in_real_turns(team, consent, settings):
    """Through real turns and tools: "find posts about birds" searches the titles and the texts, by status
    when asked, shows the line of a text that holds the words, and says so plainly when nothing matches."""
    from agent import turns
    from agent.backends import reset_backends
    from blog.chat import start_session
    from tests.blog.conftest import ALL, make_post

    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS = "demo", 0
    reset_backends()
    consent(team.owner, team.blog, ALL)
    make_post(team.blog, "Tide pools")
    make_post(team.blog, "Birds of the shore", published=True)
    make_post(team.blog, "Autumn birds")
    make_post(team.blog, "Low water", body="Two shore BIRDS on the mud.", published=True)
    session = start_session(team.owner, team.blog)

    def turn(text):
        run, _ = turns.begin(session, text)
        steps = [s for s in turns.drive(run) if isinstance(s, tuple)]
        calls = [(s[1]["name"], s[1]["input"]) for s in steps if s[0] == "tool_use"]
        return "".join(s[1]["text"] for s in steps if s[0] == "token"), calls

    said, calls = turn("find posts about birds")
    assert calls == [("list_posts", {"query": "birds"})]
    assert said == (
        "Looking for posts that mention “birds”."
        "Here are your posts that mention “birds”:\n\n"
        "- **Low water** (published): “Two shore BIRDS on the mud.”\n"
        "- **Autumn birds** (draft)\n- **Birds of the shore** (published)\n"
    )
    said, calls = turn("find drafts about birds")
    assert calls == [("list_posts", {"query": "birds", "status": "draft"})]
    assert said.endswith("Here are your drafts that mention “birds”:\n\n- **Autumn birds** (draft)\n")
    said, calls = turn("Which posts mention herons?")
    assert calls == [("list_posts", {"query": "herons"})]
    assert said.endswith("No posts mention “herons”.")


def test_the_one_post_a_search_finds_by_its_text_alone_is_not_taken_for_the_post_named(settings):
    """Asked to "publish Fish", it lists posts by "Fish": one found because its title holds the words is the one meant
    (as ever); one found only because its text mentions them is not acted on."""
    user, tools = _user("publish Fish"), [*EDIT_TOOLS, {"name": "publish_post", "description": "", "input_schema": {}}]
    by_text = [{"id": 4, "title": "Low water", "status": "draft", "excerpt": "No fish today."}]
    listed = _called("c1", "list_posts", {"items": by_text}, {"query": "Fish"})
    text, calls = _turn(settings, "", user, *listed, tools=tools)
    assert (text, calls) == ("I couldn't find a post titled “Fish”.", [])
    titled = [{"id": 5, "title": "Fish soup", "status": "draft"}]
    listed = _called("c1", "list_posts", {"items": titled}, {"query": "Fish"})
    text, calls = _turn(settings, "", user, *listed, tools=tools)
    assert calls == [("publish_post", {"post_id": 5})]


class Recorded:
    """A compiled pattern that notes the length of every text it is matched against."""

    def __init__(self, pattern: re.Pattern[str], lengths: list[int]) -> None:
        self.pattern, self.lengths = pattern, lengths

    def search(self, text: str) -> re.Match[str] | None:
        self.lengths.append(len(text))
        return self.pattern.search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        self.lengths.append(len(text))
        return self.pattern.fullmatch(text)


@pytest.mark.parametrize(
    "filler", ["make post ", "draft a post about ", ", ", "x and publish it and ", "list posts ", "!"]
)
def test_a_long_message_is_read_for_its_first_requests_only(filler, monkeypatch):
    """The demo is the default model: a message as long as the chat allows (20,000 characters) made of
    words its patterns backtrack over ("make post make post ...") held a worker's CPU for minutes, and
    a gevent worker answers nobody else meanwhile. The grammar reads a message's first READ_CHARS
    characters: no pattern is ever matched against more. Was: each was matched against all 20,000."""
    from blog import demo_grammar

    lengths: list[int] = []
    monkeypatch.setattr(demo_grammar, "PATTERNS", [(name, Recorded(p, lengths)) for name, p in demo_grammar.PATTERNS])
    for name in ("SEARCH", "COURTESY"):
        monkeypatch.setattr(demo_grammar, name, Recorded(getattr(demo_grammar, name), lengths))
    text = (filler * (20_000 // len(filler) + 1))[:20_000]
    for request in requests(text):
        intent(request)
        demo_grammar.search_args(request)
    assert lengths and max(lengths) <= demo_grammar.READ_CHARS


def test_the_words_of_a_pattern_are_still_found_in_their_order():
    """The patterns take each of their words' first place (atomic groups, so a long message is not tried in
    every combination of places): what they find is unchanged, words in order, the title the last one."""
    assert intent("please make a new blog post from this photo")[0] == "photo_post"
    assert intent("turn this picture into a blog post")[0] == "photo_post"
    assert intent("post a photo")[0] != "photo_post"  # (the words out of order)
    assert intent("show me every post")[0] == "list"
    assert intent("what posts do I have?")[0] == "list"
    assert intent("draft a post titled Salt and pepper") == ("draft", "Salt and pepper")
    assert intent("write a post, a short one, called “Tide pools”") == ("draft", "Tide pools")
    assert intent("create a post post named Two titled words") == ("draft", "words")
    assert intent(("make post " * 40) + "from this photo")[0] == "photo_post"
    assert intent(("make post " * 60) + "from this photo")[0] == "help"  # (its last word past READ_CHARS)


def test_a_list_of_the_first_hundred_says_how_many_there_are_in_all(settings):
    user = _user("list my drafts")
    items = [{"id": n, "title": f"Note {n}", "status": "draft"} for n in range(100)]
    text, calls = _turn(settings, "", user, *_called("c1", "list_posts", {"items": items, "total": 130}))
    assert calls == [] and text.endswith("- **Note 99** (draft)\n\nThese are the 100 most recently changed of 130.\n")
    text, _ = _turn(settings, "", user, *_called("c1", "list_posts", {"items": items[:3], "total": 3}))
    assert text.endswith("- **Note 2** (draft)\n")
    capped = {"items": items, "total": 100, "note": "A search with letters beyond A to Z finds at most the 100 …"}
    text, _ = _turn(settings, "", user, *_called("c1", "list_posts", capped))
    assert text.endswith("- **Note 99** (draft)\n\nA search with letters beyond A to Z finds at most the 100 …\n")
