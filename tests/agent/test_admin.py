"""The transcript admin as an auditor uses it: read-only, latest activity first."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import escape

from agent.models import Session
from agent.state import Run
from agent.transcript import add_message
from tests.chats import long_chat

pytestmark = pytest.mark.django_db


def test_sessions_and_messages_are_listed_latest_first(auditor, user):
    now = timezone.now()
    sessions = [Session.objects.create(user=user, purpose="chat") for _ in range(3)]
    for age, session in zip((5, 1, 3), sessions, strict=True):
        Session.objects.filter(pk=session.pk).update(updated_at=now - timedelta(minutes=age))
    body = auditor.get("/admin/agent/session/").content.decode()
    order = sorted(sessions, key=lambda s: body.index(str(s.pk)))
    assert order == [sessions[1], sessions[2], sessions[0]]

    first = add_message(Run(sessions[0]), "user", [{"type": "text", "text": "older words"}])
    second = add_message(Run(sessions[1]), "user", [{"type": "text", "text": "newer words"}])
    from agent.models import Message

    Message.objects.filter(pk=first.pk).update(created_at=now - timedelta(minutes=2))
    body = auditor.get("/admin/agent/message/").content.decode()
    assert body.index(f"/admin/agent/message/{second.pk}/") < body.index(f"/admin/agent/message/{first.pk}/")


def test_the_transcript_cannot_be_changed_in_the_admin(auditor, user):
    session = Session.objects.create(user=user, purpose="chat")
    assert auditor.get("/admin/agent/session/add/").status_code == 403
    response = auditor.post(f"/admin/agent/session/{session.pk}/change/", {"purpose": "other"})
    assert response.status_code in (403, 200)
    session.refresh_from_db()
    assert session.purpose == "chat"


def test_a_session_page_shows_whether_it_waits_for_people(auditor, user):
    session = Session.objects.create(user=user, purpose="chat", awaiting_people=True)
    response = auditor.get(f"/admin/agent/session/{session.pk}/change/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Awaiting people" in body and "icon-yes" in body.split("Awaiting people", 1)[1][:400]


def test_the_session_page_lists_its_own_fields_first(auditor, user):
    session = Session.objects.create(user=user, purpose="chat")
    body = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    assert body.index("Id:") < body.index("Awaiting people")


#: The transcript's stylesheet linked (however the Django version writes the tag's attributes).
STYLESHEET = re.compile(
    r'<link [^>]*href="/static/agent/admin\.css"[^>]*rel="stylesheet"|<link [^>]*rel="stylesheet"[^>]*href="/static/agent/admin\.css"'
)


def transcript_with_everything(user) -> tuple[Session, str]:
    """A session whose messages carry every kind of value the transcript shows, some long."""
    session = Session.objects.create(user=user, purpose="chat")
    run = Run(session)
    long_word = "https://example.com/" + "a" * 300  # no place to break it
    add_message(run, "user", [{"type": "text", "text": f"Look at {long_word} please"}])
    add_message(
        run,
        "assistant",
        [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "call_77", "name": "read_note", "input": {"note_id": 7, "why": "<b>asked</b>"}},
        ],
        backend="openai",
        model_id="anthropic.claude-3-5-haiku-20241022-v1:0-with-a-long-suffix",
        stop_reason="tool_use",
        input_tokens=1234,
        output_tokens=56,
        cache_read_tokens=7,
        cache_write_tokens=8,
        cost_usd="0.012345",
        reasoning="high",
        tools_offered=["list_notes", "read_note", "write_note", "delete_note"],
    )
    add_message(
        run,
        "tool",
        [{"type": "tool_result", "tool_use_id": "call_77", "name": "read_note", "result": {"body": "x" * 50}}],
    )
    return session, long_word


def test_the_session_page_shows_every_messages_values_in_columns_that_fit(auditor, user):
    session, long_word = transcript_with_everything(user)
    body = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    assert STYLESHEET.search(body)
    assert 'class="module agent-transcript agent-messages"' in body
    head = body[body.index("<thead>", body.index("agent-messages")) :]
    head = head[: head.index("</thead>")]
    columns = [c.strip() for c in re.findall(r'<th class="column-[^"]*">\s*([^<]*)', head)]
    assert columns == [
        "Position",
        "Role",
        "Content",
        "Backend / model · stop reason",
        "Tokens in/out/cache · cost USD",
        "Tools offered",
        "Created at",
    ]
    assert long_word in body  # wrapped, not cut
    assert "openai / anthropic.claude-3-5-haiku-20241022-v1:0-with-a-long-suffix<br>tool_use<br>thinking: high" in body
    assert "1234 / 56 / 7+8<br>0.012345" in body
    assert (
        "<details><summary>4 tools</summary><ul><li>list_notes</li><li>read_note</li><li>write_note</li>"
        "<li>delete_note</li></ul></details>" in body
    )  # the whole list, one click away
    # (an input's keys in the order the database keeps them: PostgreSQL's jsonb orders them its own way)
    call = re.search(r"read_note\(\{(.*?)\}\) \[call_77\]", body)
    assert call is not None  # as JSON, as on the message's own page
    assert sorted(call.group(1).split(", ")) == [
        "&quot;note_id&quot;: 7",
        "&quot;why&quot;: &quot;&lt;b&gt;asked&lt;/b&gt;&quot;",
    ]
    assert f"ok: {{&quot;body&quot;: &quot;{'x' * 50}&quot;}} [call_77]" in body


def test_the_list_of_messages_names_each_and_its_chat_shortly_with_its_call_and_usage_in_two_columns(auditor, user):
    """Thirteen columns, the first a chat's full id, pushed the time out of a 1280 px window beside the
    filters: each message is named by its role and place, its chat by its title (else the start of its
    id), and its call and usage take the session page's two columns."""
    session, _ = transcript_with_everything(user)
    Session.objects.filter(pk=session.pk).update(title="Heron notes")
    untitled = Session.objects.create(user=user, purpose="chat")
    add_message(Run(untitled), "user", [{"type": "text", "text": "hello"}])
    body = auditor.get("/admin/agent/message/").content.decode()
    listed = body[body.index('<table id="result_list">') :]
    head = listed[: listed.index("</thead>")]
    columns = re.findall(r'<div class="text"><(?:a|span)[^>]*>([^<]*)<', head)
    assert columns == [
        "Message",
        "Chat",
        "Backend / model · stop reason",
        "Tokens in/out/cache · cost USD",
        "Created at",
    ]
    rows = re.findall(r"<tr>(.*?)</tr>", listed[listed.index("</thead>") :], re.S)
    text = [re.sub(r"\s+", " ", re.sub(r"<(?!br)[^>]+>", " ", row)).strip() for row in rows]
    assert text[0].startswith(f"user #0 Chat {str(untitled.pk)[:8]} - 0 / 0 / 0+0<br>0.000000 ")
    assert text[1].startswith("tool #2 Heron notes - 0 / 0 / 0+0<br>0.000000 ")
    assert text[2].startswith(
        "assistant #1 Heron notes openai / anthropic.claude-3-5-haiku-20241022-v1:0-with-a-long-suffix<br>tool_use"
        "<br>thinking: high 1234 / 56 / 7+8<br>0.012345 "
    )
    assert str(session.pk) not in body  # (no full id to push the times out of sight)


def test_the_session_page_cuts_a_long_part_and_its_message_page_shows_it_whole(auditor, user):
    session = Session.objects.create(user=user)
    run = Run(session)
    add_message(run, "user", [{"type": "text", "text": "read it"}])
    add_message(run, "assistant", [{"type": "tool_use", "id": "call_1", "name": "get_post", "input": {"post_id": 1}}])
    body_text = "heron " * 1000  # 6,000 characters, as a long post's body comes back
    add_message(
        run,
        "tool",
        [{"type": "tool_result", "tool_use_id": "call_1", "name": "get_post", "result": {"body": body_text}}],
    )
    page = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    head = escape(('{"body": "' + body_text)[:2000])  # the first 2,000 characters of its JSON
    assert f"ok: {head}… [call_1]" in page
    assert body_text not in page
    result = session.messages.get(role="tool")
    assert body_text.strip() in auditor.get(f"/admin/agent/message/{result.pk}/change/").content.decode()


def test_a_message_page_shows_its_parts_whole(auditor, user):
    session, long_word = transcript_with_everything(user)
    call = session.messages.get(role="assistant")
    body = auditor.get(f"/admin/agent/message/{call.pk}/change/").content.decode()
    assert STYLESHEET.search(body)
    shown = re.search(r"<b>read_note</b><div class='agent-part'>\{\n(.*?)\n\}</div>", body, re.S)
    assert shown is not None  # indented JSON, escaped, its keys in the order the database keeps them
    assert sorted(shown.group(1).split(",\n")) == [
        "  &quot;note_id&quot;: 7",
        "  &quot;why&quot;: &quot;&lt;b&gt;asked&lt;/b&gt;&quot;",
    ]
    result = session.messages.get(role="tool")
    body = auditor.get(f"/admin/agent/message/{result.pk}/change/").content.decode()
    assert (
        f"<b>read_note: ok</b><div class='agent-part'>{{\n  &quot;body&quot;: &quot;{'x' * 50}&quot;\n}}</div>" in body
    )
    assert "call_77" in body


def test_the_approvals_list_takes_the_same_queries_whatever_its_length(auditor, django_user_model):
    """Each row names the person who decided it (a nullable relation, which the admin does not join
    by itself): one query per row until the list joins it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent.models import Approval

    def approvals(count: int, start: int) -> None:
        for i in range(start, start + count):
            person = django_user_model.objects.create_user(f"decider{i}")
            session = Session.objects.create(user=person, purpose="chat")
            message = add_message(Run(session), "assistant", [{"type": "text", "text": "may I?"}])
            Approval.objects.create(
                session=session,
                message=message,
                tool_use_id=f"call_{i}",
                tool_name="publish",
                status=Approval.APPROVED,
                decided_by=person,
                decided_at=timezone.now(),
                expires_at=timezone.now() + timedelta(minutes=15),
            )

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert auditor.get("/admin/agent/approval/").status_code == 200
        return len(captured)

    approvals(2, 0)
    few = queries()
    approvals(5, 2)
    assert queries() == few


def a_whole_record(user) -> Session:
    """A finished chat with a call and its result, its turn, a summary, an approval and the ledger's rows."""
    from agent.models import Approval, ContextSummary, Spend, SpendDay, Turn

    session, _ = transcript_with_everything(user)
    call = session.messages.get(role="assistant")
    turn = Turn.objects.create(session=session, status=Turn.DONE, terminal_event="done")
    ContextSummary.objects.create(session=session, up_to_position=0, text="they asked")
    Approval.objects.create(
        session=session, message=call, tool_use_id="call_77", tool_name="read_note", expires_at=timezone.now()
    )
    Spend.objects.create(user=user, created_at=timezone.now(), tokens=10, cost_usd="0.5", settled=True)
    SpendDay.objects.get_or_create(day=timezone.now().date(), defaults={"cost_usd": "0.5"})
    session.messages.update(turn=turn)
    return session


def test_no_part_of_a_transcript_or_the_ledger_is_deleted_on_its_own(auditor, user):
    """A message alone gone leaves a call without its result (the next model call is refused); a turn,
    approval or summary alone gone, a chat whose record has a hole; a ledger row gone, a budget that
    forgot spending. Each goes only with its chat or its person's account."""
    from agent.models import Approval, ContextSummary, Message, Spend, SpendDay, Turn

    a_whole_record(user)
    for model in (Message, Turn, Approval, ContextSummary, Spend, SpendDay):
        row = model.objects.first()
        page = f"/admin/agent/{model._meta.model_name}/"
        assert auditor.get(f"{page}{row.pk}/delete/").status_code == 403, page
        assert auditor.post(f"{page}{row.pk}/delete/", {"post": "yes"}).status_code == 403, page
        selected = {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
        auditor.post(page, selected)
        assert model.objects.filter(pk=row.pk).exists(), page
        assert "delete_selected" not in auditor.get(page).content.decode(), page
        assert f"{page}{row.pk}/delete/" not in auditor.get(f"{page}{row.pk}/change/").content.decode(), page


def test_a_whole_chat_or_account_is_still_deleted_with_its_record(auditor, user):
    from agent.models import Message, Spend, Turn

    session = a_whole_record(user)
    assert auditor.post(f"/admin/agent/session/{session.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Message.objects.filter(session_id=session.pk).exists()
    assert not Turn.objects.filter(session_id=session.pk).exists()
    a_whole_record(user)
    assert auditor.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Session.objects.filter(user_id=user.pk).exists()
    assert not Spend.objects.filter(user_id=user.pk).exists()


def test_a_chat_is_not_deleted_while_a_turn_runs_in_it(auditor, user):
    """The turn would go on writing into a chat that is gone; its person's account waits for it too."""
    from agent.models import Turn

    session = Session.objects.create(user=user, purpose="chat")
    turn = Turn.objects.create(session=session)
    Session.objects.filter(pk=session.pk).update(turn=turn, lease_until=timezone.now() + timedelta(minutes=2))
    assert auditor.post(f"/admin/agent/session/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    auditor.post(
        "/admin/agent/session/", {"action": "delete_selected", "_selected_action": [session.pk], "post": "yes"}
    )
    auditor.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})
    assert Session.objects.filter(pk=session.pk).exists()
    # a lease run out is a dead worker's: nothing writes into the chat any more
    Session.objects.filter(pk=session.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert auditor.post(f"/admin/agent/session/{session.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Session.objects.filter(pk=session.pk).exists()


def test_the_session_page_shows_how_each_turn_ended_and_who_decided_each_call(auditor, user, django_user_model):
    """Errors (a budget met, a provider down) and the person's Approve or Reject are on turns and
    approvals, not on messages: the session page lists both, so its transcript reads whole."""
    from agent.models import Approval, Turn

    session = a_whole_record(user)
    Turn.objects.filter(session=session).update(
        status=Turn.ERROR, terminal_event="error", terminal_payload={"code": "budget_exceeded", "message": "<b>x"}
    )
    Approval.objects.filter(session=session).update(
        status=Approval.APPROVED, decided_by=user, decided_at=timezone.now(), description="Publish “<b>x”"
    )
    body = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    turns = body[body.index('class="module agent-transcript agent-turns"') :]
    assert "budget_exceeded" in turns and "&lt;b&gt;x" in turns and "<b>x" not in turns
    turn = Turn.objects.get(session=session)
    assert f"Turn {str(turn.pk)[:8]} (error)" in turns and "Turn object" not in turns  # (each row's label)
    approvals = body[body.index('class="module agent-transcript agent-approvals"') :]
    assert "read_note" in approvals and "approved" in approvals and "uma" in approvals
    assert "Publish “&lt;b&gt;x”" in approvals
    assert "read_note (approved)" in approvals and "Approval object" not in approvals


def test_the_session_page_says_what_asked_for_each_turn(auditor, user):
    """A turn answers a person's message, or carries on once people decided its calls, or asks again after
    an answer that failed for now ("Try again"): the last two have no message of their own, and the turns
    list says which each was, so an auditor does not read a retry as an answer nobody asked for."""
    from agent.models import Message, Turn

    session = Session.objects.create(user=user, purpose="chat")
    run = Run(session)
    start = timezone.now() - timedelta(hours=1)

    def turn(minute: int, status: str, *, said: str = "") -> Turn:
        made = Turn.objects.create(session=session, status=status, created_at=start + timedelta(minutes=minute))
        if said:
            add_message(run, Message.USER, [{"type": "text", "text": said}])
            session.messages.filter(role=Message.USER, turn=None).update(turn=made)
        return made

    asked = turn(1, Turn.PAUSED, said="publish it")
    decided = turn(2, Turn.ERROR)
    retried = turn(3, Turn.DONE)
    again = turn(4, Turn.DONE, said="thanks")
    body = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    turns = body[body.index('class="module agent-transcript agent-turns"') :]
    rows = re.findall(r'<tr[^>]*class="[^"]*form-row[^"]*"[^>]*>(.*?)</tr>', turns, re.S)
    cells = [re.search(r'<td class="field-asked_by">(.*?)</td>', row, re.S).group(1) for row in rows]
    asked_by = [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]
    assert asked_by == ["a message", "calls decided", "Try again", "a message"], (asked, decided, retried, again)
    listed = auditor.get(f"/admin/agent/turn/?q={session.pk}").content.decode()  # (the latest first)
    cells = re.findall(r'<td class="field-asked_by">(.*?)</td>', listed, re.S)
    assert cells == ["a message", "Try again", "calls decided", "a message"]
    page = auditor.get(f"/admin/agent/turn/{retried.pk}/change/").content.decode()
    assert re.search(r"asked by:?</label>\s*<div class=\"readonly\">Try again</div>", page, re.I), page


def test_turns_are_found_by_their_session_or_person(auditor, user, other_user):
    from agent.models import Turn

    mine = Turn.objects.create(session=Session.objects.create(user=user))
    theirs = Turn.objects.create(session=Session.objects.create(user=other_user))
    body = auditor.get(f"/admin/agent/turn/?q={mine.session_id}").content.decode()
    assert str(mine.pk) in body and str(theirs.pk) not in body
    body = auditor.get(f"/admin/agent/turn/?q={other_user.username}").content.decode()
    assert str(theirs.pk) in body and str(mine.pk) not in body


def test_the_session_page_takes_the_same_queries_whatever_the_length_of_its_chat(auditor, user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent.models import Approval, Turn

    session = Session.objects.create(user=user, purpose="chat")
    run = Run(session)

    def turns(count: int) -> None:
        for i in range(count):
            turn = Turn.objects.create(session=session, status=Turn.DONE, terminal_event="done")
            add_message(run, "user", [{"type": "text", "text": "go"}])
            call = add_message(run, "assistant", [{"type": "tool_use", "id": f"c{i}", "name": "n", "input": {}}])
            Approval.objects.create(
                session=session,
                turn=turn,
                message=call,
                tool_use_id=f"c{i}",
                tool_name="n",
                expires_at=timezone.now(),
                decided_by=user,
            )

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert auditor.get(f"/admin/agent/session/{session.pk}/change/").status_code == 200
        return len(captured)

    turns(2)
    few = queries()
    turns(18)
    assert queries() == few


def test_an_attachment_is_opened_from_the_session_and_message_pages(auditor, user):
    """The pages named the file's storage key only; the auditor opens it where the chat's person
    would (the attachment's URL, which serves staff with the view permission), its name escaped."""
    session = Session.objects.create(user=user, purpose="chat")
    name = "<img src=x onerror=alert(1)>.png"
    message = add_message(
        Run(session),
        "user",
        [{"type": "image", "media_type": "image/png", "media_ref": "attachments/k.png", "name": name}],
    )
    part = message.parts.get()
    link = f'<a href="/api/agent/sessions/{session.pk}/attachments/{part.pk}">{escape(name)}</a>'
    assert link in auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    page = auditor.get(f"/admin/agent/message/{message.pk}/change/").content.decode()
    assert link in page and name not in page


def test_a_message_page_takes_the_same_queries_whatever_its_number_of_attachments(auditor, user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(count: int) -> int:
        session = Session.objects.create(user=user, purpose="chat")
        image = {"type": "image", "media_type": "image/png", "media_ref": "attachments/k.png", "name": "k.png"}
        message = add_message(Run(session), "user", [image] * count)
        with CaptureQueriesContext(connection) as captured:
            assert auditor.get(f"/admin/agent/message/{message.pk}/change/").status_code == 200
        with CaptureQueriesContext(connection) as on_the_session_page:
            assert auditor.get(f"/admin/agent/session/{session.pk}/change/").status_code == 200
        return len(captured), len(on_the_session_page)

    assert queries(2) == queries(8)


@pytest.mark.parametrize(
    "path", ["session", "message", "turn", "spend", "approval"], ids=lambda p: f"/admin/agent/{p}/"
)
def test_people_are_searched_by_the_user_models_own_login_field(auditor, user, monkeypatch, path):
    """A project whose user model signs in by email (`USERNAME_FIELD = "email"`, often with no
    `username` at all) searches the engine's admin by that field; `user__username` was a FieldError."""
    from django.contrib.auth import get_user_model

    from agent.models import Approval, Spend, Turn

    monkeypatch.setattr(get_user_model(), "USERNAME_FIELD", "email")
    user.email = "uma@example.com"
    user.save()
    chat = Session.objects.create(user=user)
    Turn.objects.create(session=chat)
    message = add_message(Run(chat), "user", [{"type": "text", "text": "hi"}])
    Spend.objects.create(user=user, created_at=timezone.now())
    Approval.objects.create(
        session=chat, message=message, tool_use_id="c1", tool_name="x", expires_at=timezone.now(), decided_by=user
    )
    response = auditor.get(f"/admin/agent/{path}/?q=uma@example.com")
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1


def messages_shown(body: str) -> list[int]:
    """The positions of the message rows on a session's page."""
    group = body[body.index('id="messages-group"') : body.index('id="turns-group"')]
    return [int(p) for p in re.findall(r'<td class="field-position">\s*<p>(\d+)</p>', group)]


def test_a_long_chat_is_audited_a_page_at_a_time(auditor, user):
    """A chat of 4,000 messages: its page shows the latest 100 messages (and turns), and links reach
    every other page, in the same number of queries whatever the page and the chat's length."""
    session = Session.objects.create(user=user, purpose="chat")
    long_chat(session, 30)
    auditor.get(f"/admin/agent/session/{session.pk}/change/")  # (the first request also reads the sign-in)
    with CaptureQueriesContext(connection) as short:
        auditor.get(f"/admin/agent/session/{session.pk}/change/")
    long_chat(session, 970, first=30)
    url = f"/admin/agent/session/{session.pk}/change/"
    with CaptureQueriesContext(connection) as long:
        body = auditor.get(url).content.decode()
    assert len(long) == len(short)
    assert messages_shown(body) == list(range(3900, 4000))
    assert "Messages 3,901–4,000 of 4,000 (page 40 of 40)" in body
    assert body.count('<tr class="form-row') <= 200  # the latest 100 messages and 100 turns
    first = re.search(r'<a href="(\?messages-page=1)#messages-group">First</a>', body).group(1)
    body = auditor.get(url + first).content.decode()
    assert messages_shown(body) == list(range(100))
    later = re.search(r'<a href="([^"#]+)#messages-group">Later</a>', body).group(1)
    assert messages_shown(auditor.get(url + later.replace("&amp;", "&")).content.decode()) == list(range(100, 200))


def test_the_admin_names_context_summaries_in_good_english(auditor):
    """Not Django's "Context summarys", made from the class name with an s."""
    index = auditor.get("/admin/").content.decode()
    assert ">Context summaries</a>" in index and "summarys" not in index
    assert "0 context summaries" in auditor.get("/admin/agent/contextsummary/").content.decode()


def test_a_chat_is_known_by_its_first_words_in_the_list_and_on_its_page(auditor, user):
    """An auditor tells chats apart by what their person first said (as the person's own list of chats
    does), not by a UUID and an empty title; a chat with a title shows its title."""
    said = Session.objects.create(user=user, purpose="chat")
    run = Run(said)
    add_message(run, "user", [{"type": "text", "text": "  Draft a post\nabout <b>herons</b> at dawn " + "x" * 80}])
    add_message(run, "assistant", [{"type": "text", "text": "Drafted."}])
    Session.objects.create(user=user, purpose="chat", title="Spring notes")
    silent = Session.objects.create(user=user, purpose="chat")

    with CaptureQueriesContext(connection) as one:
        body = auditor.get("/admin/agent/session/").content.decode()
    assert "Draft a post about &lt;b&gt;herons&lt;/b&gt; at dawn" in body
    assert "x" * 60 not in body  # (cut, as the person's list cuts it)
    assert "Spring notes" in body
    assert "Drafted." not in body  # (the person's words, never the assistant's)

    add_message(Run(silent), "user", [{"type": "text", "text": "hello"}])
    with CaptureQueriesContext(connection) as again:
        auditor.get("/admin/agent/session/")
    assert len(again) == len(one)  # (read with the list, not a query a row)

    page = auditor.get(f"/admin/agent/session/{said.pk}/change/").content.decode()
    assert "Begins:" in page and "Draft a post about &lt;b&gt;herons&lt;/b&gt; at dawn" in page
