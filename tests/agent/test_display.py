"""What people see of a transcript: chip summaries and the usage meter."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent import display
from agent.chat_views import conversation
from agent.display import meter_display, shortened, summaries, summarize_input
from agent.models import Message, Part, Turn
from agent.tools import register, unregister
from tests.chats import long_chat


def test_chip_summary_follows_schema_order_not_storage_order():
    stored = {"body": "long text", "title": "Morning light"}  # as jsonb may return it
    assert summarize_input(stored, ["title", "body"]) == "title: Morning light, body: long text"
    assert summarize_input({"post_id": 3}, ["post_id"]) == "post_id: 3"
    assert summarize_input({}) == ""
    assert summarize_input({"a": "x" * 100}).endswith("…")
    assert summarize_input({"a": "line\nbreak"}) == "a: line break"


def test_meter_shows_only_near_limits_and_caps_at_100():
    assert meter_display({"minute": 0.1, "hour": 0.2, "month": 0.0, "global": 0.0}) is None
    assert meter_display({"minute": 172.0, "hour": 0.85, "month": 0.0, "global": 0.0}) == {"minute": 100, "hour": 85}


@pytest.fixture
def toy_tools():
    """Two tools sharing one `shown` hook (as a domain registers its own), and one without."""
    asked: list[tuple[object, list]] = []

    def shown(session, calls):
        asked.append((session, calls))
        if any(data.get("thing_id") == 666 for _name, data in calls):
            raise RuntimeError("the domain's lookup failed")
        return [{"thing": f"“Thing {data['thing_id']}”", "note": data.get("note", "")} for _name, data in calls]

    schema = {"type": "object", "properties": {"thing_id": {"type": "integer"}, "note": {"type": "string"}}}
    for name in ("open_thing", "shut_thing"):
        register(name, input_schema=schema, shown=shown)(lambda session, **raw: raw)
    register("plain_thing", input_schema=schema)(lambda session, **raw: raw)
    yield asked
    for name in ("open_thing", "shut_thing", "plain_thing"):
        unregister(name)


def test_chips_read_inputs_as_the_tools_shown_hook_gives_them_once_per_page(toy_tools):
    session = object()
    calls = [
        ("open_thing", {"thing_id": 1}),
        ("plain_thing", {"note": "n", "thing_id": 2}),
        ("shut_thing", {"note": "bye", "thing_id": 3}),
        ("unknown_tool", {"thing_id": 4}),
        ("open_thing", {}),
    ]
    assert summaries(session, calls) == [
        "thing: “Thing 1”, note: ",
        "thing_id: 2, note: n",  # no hook: the input as sent, in the schema's order
        "thing: “Thing 3”, note: bye",  # the hook's own order
        "thing_id: 4",
        "",
    ]
    assert toy_tools == [(session, [("open_thing", {"thing_id": 1}), ("shut_thing", {"note": "bye", "thing_id": 3})])]


def test_a_failing_shown_hook_leaves_the_input_as_sent(toy_tools, caplog):
    assert summaries(None, [("open_thing", {"thing_id": 666}), ("plain_thing", {"thing_id": 5})]) == [
        "thing_id: 666",
        "thing_id: 5",
    ]
    assert "the shown hook of open_thing failed" in caplog.text


def drawn(html: str) -> list[str]:
    return re.findall(r"(question \d+|answer \d+)", html)


def test_a_long_chat_draws_its_latest_turns_and_earlier_ones_page_by_page(user, other_user, chat):
    """A chat of a year of use (1,000 turns, 4,000 messages): the log draws the latest 20 turns, and
    "Earlier messages" brings the 20 before them in order, each time in the same few queries."""
    long_chat(chat, 1000)
    client = Client()
    client.force_login(user)
    request = RequestFactory().get("/")
    request.user = user
    with CaptureQueriesContext(connection) as latest:
        context = conversation(chat, request)
    html = render_to_string("agent/_conversation.html", context)
    assert drawn(html) == [f"{kind} {n}" for n in range(980, 1000) for kind in ("question", "answer")]
    assert html.count('class="chip"') == 20 and html.count('data-status="ok"') == 20
    pages, url = [], re.search(r'hx-get="([^"]+)"', html).group(1)
    while url:
        with CaptureQueriesContext(connection) as earlier:
            response = client.get(url)
        assert response.status_code == 200 and len(earlier) <= len(latest) + 4  # (+ the session and sign-in)
        page = response.content.decode()
        pages.append(drawn(page))
        found = re.search(r'hx-get="([^"]+)"', page)
        url = found.group(1).replace("&amp;", "&") if found else ""
    assert len(pages) == 49 and pages[-1][:2] == ["question 0", "answer 0"]
    assert [x for page in reversed(pages) for x in page] == [
        f"{kind} {n}" for n in range(980) for kind in ("question", "answer")
    ]
    other = Client()
    other.force_login(other_user)
    assert other.get(f"/chat/{chat.pk}/earlier?before=8").status_code == 404
    assert client.get(f"/chat/{chat.pk}/earlier?before=x").status_code == 404


def test_the_latest_turns_take_the_same_queries_however_long_the_chat(user, chat, django_user_model):
    request = RequestFactory().get("/")
    request.user = user
    long_chat(chat, 25)
    with CaptureQueriesContext(connection) as short:
        conversation(chat, request)
    long_chat(chat, 2000, first=25)
    with CaptureQueriesContext(connection) as long:
        shown = conversation(chat, request)
    assert len(long) == len(short)
    assert len(shown["items"]) == 40


@pytest.mark.parametrize(
    "text, shown",
    [
        ("short", "short"),
        ("abcdefghij", "abcdefghij"),  # exactly the limit
        ("abcdefgh 👋🏽 z", "abcdefgh…"),  # a hand is not left without its skin tone
        ("abcdefgh🇫🇷 z", "abcdefgh…"),  # nor a flag cut to one letter
        ("abcdefg👨‍👩‍👧 z", "abcdefg…"),  # nor a family cut at a joiner
        ("abcdefgé zz", "abcdefgé…"),  # an é written as one character
        ("abcdefghe\u0301 z", "abcdefgh…"),  # an e and its combining accent stay together
        ("abcdefghijk", "abcdefghi…"),
    ],
)
def test_a_shortened_text_is_never_cut_inside_what_a_reader_sees_as_one_character(text, shown):
    assert shortened(text, 10) == shown
    assert len(shortened(text, 10)) <= 10


def test_an_answer_that_ends_while_the_page_is_read_is_drawn_or_followed(user, chat):
    """The chat's page is read in a few queries while its answer may end between any two of them: whatever
    the moment it ends, the page draws the answer, or draws the turn as running (its stream brings the end).
    Read the other way round (its messages, then the running turn), an answer that ended between the two
    was neither, and a page without scripts showed the chat as if nothing had been asked."""
    long_chat(chat, 1)
    question = Message.objects.create(session=chat, role=Message.USER, position=4)
    Part.objects.create(message=question, position=0, type="text", text="question 1")
    turn = Turn.objects.create(session=chat, status=Turn.RUNNING, created_at=timezone.now(), user_message=question)
    Message.objects.filter(pk=question.pk).update(turn=turn)
    with CaptureQueriesContext(connection) as reads:
        display.conversation(chat)
    assert len(reads) >= 3

    def end_turn() -> None:
        answer = Message.objects.create(session=chat, turn=turn, role=Message.ASSISTANT, position=5)
        Part.objects.create(message=answer, position=0, type="text", text="answer 1")
        Turn.objects.filter(pk=turn.pk).update(status=Turn.DONE, finished_at=timezone.now())

    for moment in range(len(reads) + 1):
        Message.objects.filter(turn=turn, role=Message.ASSISTANT).delete()
        Turn.objects.filter(pk=turn.pk).update(status=Turn.RUNNING, finished_at=None)
        queries = 0

        def ends_at_the_moment(execute, sql, params, many, context, at=moment):
            nonlocal queries
            queries += 1
            if queries - 1 == at:
                end_turn()  # (its own queries come through here too, counted past the moment)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(ends_at_the_moment):
            shown = display.conversation(chat)
        texts = [block.get("html", "") for item in shown.items for block in item.get("blocks", [])]
        answered = any("answer 1" in text for text in texts)
        assert answered or (shown.running is not None and shown.running.pk == turn.pk), f"ended before read {moment}"
