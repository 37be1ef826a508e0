"""Accepting a user's message or a new chat: the checks the JSON API and the chat panel make, in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest
from django.utils import timezone

from agent import media, signals, turns
from agent.api import RateLimited, RateSlot, give_back_rate_slot, message_text, take_rate_slot
from agent.conf import settings
from agent.exceptions import NothingToRetry, TurnInProgress
from agent.models import Message, Session
from agent.policy import Access, get_policy
from agent.runtime import off_the_loop
from agent.state import TurnRun
from agent.upload_handler import refusal_of
from agent.uploads import Upload, UploadRefused, check_all


class Refused(Exception):
    """The message was not accepted; nothing was stored. Carries the HTTP status, code and calm sentence.

    `reason` is the sentence without its own request to wait, for a page that says the wait itself
    ("Try again in 36 s.", counting down); it is `message` when that has none.
    """

    def __init__(
        self, status: int, code: str, message: str, retry_after_seconds: int | None = None, *, reason: str = ""
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after_seconds = retry_after_seconds
        self.reason = reason or message

    @property
    def extra(self) -> dict[str, Any]:
        return {} if self.retry_after_seconds is None else {"retry_after_seconds": self.retry_after_seconds}


TOO_QUICKLY = "You're sending messages too quickly."
RATE_LIMITED = f"{TOO_QUICKLY} Please wait a moment."  # (the API's: its wait is `retry_after_seconds`)


STILL_ANSWERING = "The assistant is still answering. Wait for it or stop it."


def answering(session: Session) -> bool:
    """Whether a turn held the chat's lease when this request read the session (no query): a message
    sent now would be refused by `turns.begin`, which decides under its UPDATE."""
    until = session.lease_until
    return session.turn_id is not None and until is not None and until > timezone.now()


def rate_slot(user: Any) -> RateSlot:
    """Take one slot of AGENT_MESSAGES_PER_MINUTE and return it, or raise Refused 429 rate_limited."""
    try:
        return take_rate_slot(user)
    except RateLimited as exc:
        raise Refused(429, "rate_limited", RATE_LIMITED, exc.wait, reason=TOO_QUICKLY) from None


def open_session(user: Any, data: dict[str, Any]) -> Session:
    """A new session through the domain's policy; or raise Refused.

    Opening one takes a slot of the message rate limit, as a message does, so sessions cannot be
    created without bound either. The slot is taken first: a refused request counts too.
    """
    rate_slot(user)
    try:
        return get_policy().create(user, data)
    except PermissionDenied:
        raise Refused(403, "forbidden", "You may not use the assistant here.") from None
    except Http404:
        raise Refused(404, "not_found", "That doesn't exist or isn't yours.") from None
    except ValidationError as exc:  # (the policy's words to the person; any other exception is a bug)
        raise Refused(400, "bad_request", " ".join(exc.messages)) from None


NO_IMAGES = "This assistant's model can't read images. Send your message without them, or as a document."
BAD_MESSAGE = "Write a message of up to 20,000 characters."


def uploaded_files(request: HttpRequest) -> list[tuple[str, bytes]]:
    """The request's `files` as (name, bytes); Refused when the upload was stopped as it arrived."""
    received = request.FILES.getlist("files")  # (first: the body is parsed, and an upload stopped, here)
    refused = refusal_of(request)
    if refused is not None:
        code, message = refused
        raise Refused(413 if code == "too_large" else 400, code, message)
    out = []
    for upload in received:
        assert upload.name is not None  # (Django's upload parser skips a file part without a filename)
        with upload.open("rb") as fh:
            out.append((upload.name, fh.read()))
    return out


def check_uploads(files: list[tuple[str, bytes]]) -> list[Upload]:
    """The checked attachments (nothing stored yet); or raise Refused with the first problem."""
    try:
        uploads = off_the_loop(check_all, files)
    except UploadRefused as exc:
        raise Refused(exc.status, exc.code, exc.message) from None
    if not settings.AGENT_MODEL_IMAGES and any(u.kind == "image" for u in uploads):
        raise Refused(400, "unsupported_attachment", NO_IMAGES)
    return uploads


def uploads_for_slot(slot: RateSlot, files: Sequence[tuple[str, bytes]]) -> list[Upload]:
    """The checked attachments of a message whose rate slot (`rate_slot`'s) is taken; refused, that
    slot is given back (refused files cost no slot) and Refused raised."""
    if not files:
        return []
    try:
        return check_uploads(list(files))
    except Refused:
        give_back_rate_slot(slot)
        raise


NOTHING_TO_RETRY = "The chat's last answer did not fail, so there is nothing to try again."


def retry(session: Session, user: Any, *, access: Access | None = None) -> TurnRun:
    """Ask for the chat's latest answer again after it failed ("Try again"), as a message asks for one:
    authorised, rate-limited (a slot, given back if nothing is started), one turn at a time; or raise
    Refused, having started nothing."""
    if not (access.use if access is not None else get_policy().may_use(session)):
        raise Refused(403, "forbidden", "You may not use the assistant here.")
    if answering(session):
        raise Refused(409, "turn_in_progress", STILL_ANSWERING)
    slot = rate_slot(user)
    try:
        run = turns.retry(session)
    except TurnInProgress:
        give_back_rate_slot(slot)
        raise Refused(409, "turn_in_progress", STILL_ANSWERING) from None
    except NothingToRetry:
        give_back_rate_slot(slot)
        raise Refused(409, "nothing_to_retry", NOTHING_TO_RETRY) from None
    turns.start(run)
    return run


def accept(
    session: Session,
    user: Any,
    raw_text: Any,
    files: Sequence[tuple[str, bytes]] = (),
    *,
    access: Access | None = None,
    slot: RateSlot | None = None,
    checked: Sequence[Upload] | None = None,
) -> tuple[TurnRun, Message]:
    """Validate, authorise, rate-limit and store the message with its attachments, then start its
    turn; or raise Refused, having stored nothing (no file, no message; refused files take no slot).

    `access`: what the policy answered for this session in this request, if it was asked already.
    `slot`: the message's rate slot, when the caller took it already (`rate_slot`), before work the
    limit must spare (a chat made for the message); files refused give it back, as does a message
    refused because the assistant is still answering, unless its files were decoded by then.
    `checked`: the attachments the caller checked already (`check_uploads`), instead of `files`; each
    is decoded once, and a caller can refuse them before it writes anything for the message.
    """
    text = message_text({"text": raw_text})
    if text is None:
        raise Refused(400, "bad_message", BAD_MESSAGE)
    if not (access.use if access is not None else get_policy().may_use(session)):
        raise Refused(403, "forbidden", "You may not use the assistant here.")
    # A chat seen answering (the session as this request read it: no query) refuses before the slot
    # and the files, so sending again and again during an answer costs neither a slot nor decoding.
    if answering(session):
        if slot is not None and not checked:
            give_back_rate_slot(slot)
        raise Refused(409, "turn_in_progress", STILL_ANSWERING)
    # The slot first: checking files decodes and re-encodes every image (seconds for large ones),
    # which a message the limit refuses must not cost. Files refused give the slot back.
    if slot is None:
        slot = rate_slot(user)
    uploads = list(checked) if checked is not None else uploads_for_slot(slot, files)
    parts = media.store(session, uploads) if uploads else []
    try:
        run, message = turns.begin(session, text, parts)
    except TurnInProgress:
        media.delete(p["media_ref"] for p in parts)
        if not uploads:  # (a message whose files were decoded keeps its slot: that work was done)
            give_back_rate_slot(slot)
        raise Refused(409, "turn_in_progress", STILL_ANSWERING) from None
    except BaseException:
        media.delete(p["media_ref"] for p in parts)
        raise
    signals.message_received.send(sender=Session, session=session, message=message)
    turns.start(run)
    return run, message
