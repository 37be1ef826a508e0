"""The chat panel's HTMX endpoints: send a message (answering with the streaming fragment) and stop."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import resolve
from django.views.decorators.http import require_POST
from django_htmx.http import reswap

from agent import display, intake, turns
from agent.models import Approval, Turn
from agent.views import own_session, resolve_approval, stream_url


def notice(request: HttpRequest, message: str, retry_after_seconds: int | None = None) -> HttpResponse:
    """A refused message as one calm line in the chat, with the wait (if any) the page counts down."""
    return render(request, "agent/_notice.html", {"message": message, "retry_after_seconds": retry_after_seconds})


@require_POST
@login_required
def send(request: HttpRequest, session_id: Any) -> HttpResponse:
    session, access = own_session(request, session_id)
    text = request.POST.get("text")
    try:
        files = intake.uploaded_files(request)
        run, message = intake.accept(session, request.user, text, files, access=access)
    except intake.Refused as exc:
        if exc.code == "turn_in_progress":
            # (asked in another tab: this one did not show that answer, only "wait for it or stop it")
            return log_again(request, session, "", kept=True)
        return notice(request, exc.reason, exc.retry_after_seconds)
    context = {
        "text": text,
        "attachments": display.attachment_items(message.parts.all(), session.pk) if files else [],
        "turn": run.turn,
        "stream_url": stream_url(session, run.turn, request),
    }
    return render(request, "agent/_sent.html", context)


#: Said in a chat drawn again because another tab or window (or a script) moved it on.
STILL_ANSWERING = (
    "The assistant is still answering an earlier message of this chat, shown above. Your message is "
    "still in the box: send it when the answer ends, or stop the answer."
)
JUST_ANSWERED = (
    "The assistant has just answered an earlier message of this chat, shown above. Your message is "
    "still in the box: send it now if it still fits."
)
ALREADY = {
    Approval.APPROVED: "That was already approved, in another tab or window. The chat is shown as it stands.",
    Approval.REJECTED: "That was already rejected, in another tab or window. The chat is shown as it stands.",
}
ALREADY_DECIDED = "That was already decided. The chat is shown as it stands."


def log_again(request: HttpRequest, session: Any, said: str, *, kept: bool = False) -> HttpResponse:
    """The chat's log drawn again as a reload would draw it (following a running answer, with its Stop),
    then `said`: this page acted on a chat that another tab or window had moved on."""
    items, running = display.conversation(session)
    context = {
        "chat": session,
        "items": items,
        "running": running,
        "running_url": stream_url(session, running, request) if running else "",
        "said": (STILL_ANSWERING if running else JUST_ANSWERED) if kept else said,
        "kept": kept,
    }
    return reswap(render(request, "agent/_log_again.html", context), "innerHTML")


@require_POST
@login_required
def stop(request: HttpRequest, session_id: Any) -> HttpResponse:
    session, _ = own_session(request, session_id)
    turns.request_stop(session)
    return HttpResponse(status=204)


@require_POST
@login_required
def approval(request: HttpRequest, session_id: Any, approval_id: Any) -> HttpResponse:
    session, access = own_session(request, session_id)
    approve = request.POST.get("approve") == "1"
    outcome, payload = resolve_approval(request, session, access, approval_id, approve)
    if outcome == "error" and payload[1] == "approval_decided":  # (in another tab: this one's card was stale)
        status = Approval.objects.filter(pk=approval_id, session=session).values_list("status", flat=True).first()
        return log_again(request, session, ALREADY.get(status, ALREADY_DECIDED))
    context = {"approval_id": approval_id, "approved": approve, "outcome": outcome}
    if outcome == "error":
        context["message"] = payload[2]
    elif outcome == "started":
        turn = Turn.objects.get(pk=resolve(payload).kwargs["turn_id"])
        context.update({"turn": turn, "stream_url": payload})
    return render(request, "agent/_decided.html", context)
