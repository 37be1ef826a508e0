"""Accepting a user's message: the checks both the JSON API and the chat panel make, in one place."""

from __future__ import annotations

from typing import Any

from agent import signals, turns
from agent.api import message_text, take_rate_slot
from agent.exceptions import TurnInProgress
from agent.models import Message, Session
from agent.policy import get_policy
from agent.state import Run


class Refused(Exception):
    """The message was not accepted; nothing was stored. Carries the HTTP status, code and calm sentence."""

    def __init__(self, status: int, code: str, message: str, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after_seconds = retry_after_seconds

    @property
    def extra(self) -> dict[str, Any]:
        return {} if self.retry_after_seconds is None else {"retry_after_seconds": self.retry_after_seconds}


def accept(session: Session, user: Any, raw_text: Any) -> tuple[Run, Message]:
    """Validate, authorise, rate-limit and store the message, then start its turn; or raise Refused."""
    text = message_text({"text": raw_text})
    if text is None:
        raise Refused(400, "bad_message", "Write a message of up to 20,000 characters.")
    if not get_policy().may_use(session):
        raise Refused(403, "forbidden", "You may not use the assistant here.")
    wait = take_rate_slot(user)
    if wait is not None:
        raise Refused(429, "rate_limited", "You're sending messages too quickly. Please wait a moment.", wait)
    try:
        run, message = turns.begin(session, text)
    except TurnInProgress:
        raise Refused(409, "turn_in_progress", "The assistant is still answering. Wait for it or stop it.") from None
    signals.message_received.send(sender=Session, session=session, message=message)
    turns.start(run)
    return run, message
