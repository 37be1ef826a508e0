"""The operator's log line: the format and filter of `config/settings.py` LOGGING over the engine's records."""

from __future__ import annotations

import logging

import pytest

from agent.models import Turn
from config.settings import LOGGING

pytestmark = pytest.mark.django_db


def test_a_failed_model_calls_line_names_its_session_and_turn_once(api, chat, script, caplog):
    """The ids once, at the line's start. (The message named them again: `session=… user=… turn=…
    backend fake failed (model …, session=… turn=… retryable=False)`.)"""
    script([[{"kind": "error", "message": "boom", "retryable": False}]])
    with caplog.at_level(logging.ERROR, logger="agent.loop"):
        api.turn(chat, "hi")
    turn = Turn.objects.get(session=chat)
    record = next(r for r in caplog.records if r.name == "agent.loop")
    line = logging.Formatter(LOGGING["formatters"]["plain"]["format"]).format(record)
    assert f" ERROR agent.loop session={chat.pk} user={chat.user_id} turn={turn.pk} backend fake failed " in line
    assert line.count("session=") == 1 and line.count("turn=") == 1, line


def test_a_line_outside_any_turn_says_so_in_the_same_places():
    """Django's and the blog's lines go through the same format: the project's filter gives them `-`."""
    from agent.logcontext import ContextFilter

    assert LOGGING["handlers"]["stderr"]["filters"] == ["agent_context"]
    assert LOGGING["filters"]["agent_context"]["()"] == "agent.logcontext.ContextFilter"
    record = logging.makeLogRecord({"name": "django.request", "levelname": "WARNING", "msg": "Not Found: /x"})
    ContextFilter().filter(record)
    line = logging.Formatter(LOGGING["formatters"]["plain"]["format"]).format(record)
    assert line.endswith(" WARNING django.request session=- user=- turn=- Not Found: /x"), line
