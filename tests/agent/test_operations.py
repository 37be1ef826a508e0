"""Operations: pruning old chats, signals, and log lines that carry session, user and turn."""

from __future__ import annotations

import io
import logging
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from agent import signals
from agent.models import Approval, Message, RateEvent, Session, Spend, Turn

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn"}


def test_chat_cleanup_prunes_old_sessions_in_batches_and_keeps_recent(user, capsys):
    old = [Session.objects.create(user=user) for _ in range(5)]
    Session.objects.filter(pk__in=[s.pk for s in old]).update(updated_at=timezone.now() - timedelta(days=40))
    recent = Session.objects.create(user=user)
    Message.objects.create(session=old[0], role="user", position=0)
    Spend.objects.create(user=user, created_at=timezone.now() - timedelta(days=31), tokens=5)
    Spend.objects.create(user=user, created_at=timezone.now() - timedelta(days=1), tokens=5)
    RateEvent.objects.create(user=user, created_at=timezone.now() - timedelta(hours=1))
    call_command("chat_cleanup", "--older-than", "30", "--batch-size", "2")
    assert list(Session.objects.all()) == [recent]
    assert not Message.objects.exists()
    assert Spend.objects.count() == 1
    assert not RateEvent.objects.exists()
    assert "Deleted 5 sessions" in capsys.readouterr().out


def test_chat_cleanup_takes_the_same_queries_for_two_chats_as_for_six(
    user, monkeypatch, django_capture_on_commit_callbacks
):
    """Its deletion read each chat's attachment keys again, one query a chat (the Session's `pre_delete`,
    `agent.media.session_deleted`): a cron run over a year of chats made as many queries as chats. The
    keys of a batch are read once, and every file still goes once the deletion commits."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent import media
    from agent.models import Part

    gone: list[str] = []
    monkeypatch.setattr(media, "delete", lambda keys: gone.extend(keys) or len(gone))

    def run(count: int) -> tuple[int, list[str]]:
        keys = []
        for i in range(count):
            chat = Session.objects.create(user=user)
            message = Message.objects.create(session=chat, role="user", position=0)
            Part.objects.create(message=message, position=0, type="text", text="hi")
            keys.append(f"agent/{chat.pk}/{i}.png")
            Part.objects.create(message=message, position=1, type="image", media_ref=keys[-1])
        Session.objects.update(updated_at=timezone.now() - timedelta(days=40))
        gone.clear()
        with django_capture_on_commit_callbacks(execute=True), CaptureQueriesContext(connection) as queries:
            call_command("chat_cleanup", "--older-than", "30", stdout=io.StringIO())
        assert not Session.objects.exists()
        return len(queries), sorted(gone) == sorted(keys)

    (few, all_went), (many, all_went_too) = run(2), run(6)
    assert many == few
    assert all_went and all_went_too


def test_chat_cleanup_never_deletes_a_session_with_a_running_turn_but_one_whose_turn_died(user):
    from agent.turns import claim

    session = Session.objects.create(user=user)
    claim(session)
    Session.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(days=90))
    call_command("chat_cleanup", "--older-than", "30")
    assert Session.objects.filter(pk=session.pk).exists()
    Session.objects.filter(pk=session.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    call_command("chat_cleanup", "--older-than", "30")  # its worker died long ago: the chat is idle
    assert not Session.objects.filter(pk=session.pk).exists()


@pytest.mark.django_db(transaction=True)  # two connections, each committing as in production
def test_chat_cleanup_never_deletes_a_chat_that_a_message_claims_while_it_deletes(user, monkeypatch):
    """A message to an old chat, on another worker, while the cleanup lists and deletes its batch: either
    the message's turn runs in a chat that stays, or it finds the chat gone; never a running turn deleted."""
    from django.db import connection

    from agent import media
    from agent.turns import claim

    session = Session.objects.create(user=user)
    Session.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(days=90))
    claimed, meanwhile = [], []

    def message_arrives():
        try:
            claim(Session.objects.get(pk=session.pk))
            claimed.append(True)
        except Exception:  # the chat was gone by then (a 404 or 409 for the message)
            claimed.append(False)
        finally:
            connection.close()

    def keys_while_a_message_arrives(ids, keys_of_sessions=media.keys_of_sessions):
        if not meanwhile:
            meanwhile.append(threading.Thread(target=message_arrives))
            meanwhile[0].start()
            meanwhile[0].join(2)  # (it waits for the cleanup's lock, once there is one)
        return keys_of_sessions(ids)

    monkeypatch.setattr(media, "keys_of_sessions", keys_while_a_message_arrives)
    call_command("chat_cleanup", "--older-than", "30")
    meanwhile[0].join(30)
    assert claimed in ([True], [False])
    assert claimed == [Session.objects.filter(pk=session.pk).exists()]


def test_chat_cleanup_expires_stale_approvals(chat):
    turn = Turn.objects.create(session=chat)
    message = Message.objects.create(session=chat, role="assistant", position=0)
    Approval.objects.create(
        session=chat,
        turn=turn,
        message=message,
        tool_use_id="t",
        tool_name="x",
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    call_command("chat_cleanup", "--older-than", "30")
    assert Approval.objects.get().status == "expired"


def test_chat_cleanup_rejects_bad_arguments():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="at least 1 day"):
        call_command("chat_cleanup", "--older-than", "0")


def test_signals_for_message_tool_and_error(api, chat, script):
    from agent.tools import register, unregister

    seen = []
    handlers = {
        "message": lambda sender, session, message, **kw: seen.append(("message", message.role)),
        "tool": lambda sender, session, name, status, **kw: seen.append(("tool", name, status)),
        "error": lambda sender, session, code, **kw: seen.append(("error", code)),
    }
    signals.message_received.connect(handlers["message"])
    signals.tool_called.connect(handlers["tool"])
    signals.agent_error.connect(handlers["error"])
    register("ping")(lambda session: {"pong": True})
    try:
        script(
            [
                [
                    {"kind": "tool_use", "id": "p", "name": "ping", "input": {}},
                    {"kind": "done", "stop_reason": "tool_use"},
                ],
                [{"kind": "error", "retryable": False}],
            ]
        )
        api.turn(chat, "hi")
    finally:
        unregister("ping")
        signals.message_received.disconnect(handlers["message"])
        signals.tool_called.disconnect(handlers["tool"])
        signals.agent_error.disconnect(handlers["error"])
    assert seen == [("message", "user"), ("tool", "ping", "ok"), ("error", "provider_error")]


def failed_turn_record(api, chat, script, caplog) -> tuple[logging.LogRecord, Turn]:
    """A turn whose model call fails, and the engine's error record about it."""
    script([[{"kind": "error", "message": "boom", "retryable": False}]])
    with caplog.at_level(logging.ERROR, logger="agent.loop"):
        api.turn(chat, "hi")
    return next(r for r in caplog.records if r.name == "agent.loop"), Turn.objects.get(session=chat)


def context_of(record: logging.LogRecord) -> tuple[str, str, str]:
    return str(record.session_id), str(record.user_id), str(record.turn_id)


def test_log_lines_carry_session_user_and_turn(api, chat, script, caplog):
    from agent.logcontext import ContextFilter

    caplog.handler.addFilter(ContextFilter())
    record, turn = failed_turn_record(api, chat, script, caplog)
    assert context_of(record) == (str(chat.pk), str(chat.user_id), str(turn.pk))


def test_a_failed_model_calls_message_leaves_the_ids_to_the_record(api, chat, script, caplog):
    """The ids travel as the record's attributes, for the host's format to write once; the message does
    not name them again (a line read `session=… turn=… backend fake failed (model …, session=… turn=…)`).
    caplog's handler has no filter of the project's: the engine's records carry their context in any host."""
    record, turn = failed_turn_record(api, chat, script, caplog)
    assert context_of(record) == (str(chat.pk), str(chat.user_id), str(turn.pk))
    message = record.getMessage()
    assert message.startswith("backend fake failed (model "), message
    assert str(chat.pk) not in message and str(turn.pk) not in message, message
    assert "session=" not in message and "turn=" not in message, message


def test_the_engines_records_carry_their_context_without_the_projects_logging(api, chat, script, caplog):
    """A host that uses the engine with logging of its own (no `agent_context` filter on its handlers)
    still finds whose line it is on every record, to name in its format (docs/engine.md)."""
    from agent.logcontext import ContextFilter

    projects = [(h, f) for h in logging.getLogger().handlers for f in h.filters if isinstance(f, ContextFilter)]
    for handler, found in projects:
        handler.removeFilter(found)
    try:
        record, turn = failed_turn_record(api, chat, script, caplog)
    finally:
        for handler, found in projects:
            handler.addFilter(found)
    assert context_of(record) == (str(chat.pk), str(chat.user_id), str(turn.pk))
