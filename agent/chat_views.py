"""The chat panel's HTMX endpoints: send a message (answering with the streaming fragment) and stop."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from agent import signals, turns
from agent.api import message_text, take_rate_slot
from agent.exceptions import TurnInProgress
from agent.models import Session, Turn
from agent.policy import get_policy
from agent.views import own_session, resolve_approval, stream_url


def _notice(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "agent/_notice.html", {"message": message})


@require_POST
@login_required
def send(request: HttpRequest, session_id: Any) -> HttpResponse:
    session = own_session(request, session_id)
    text = message_text({"text": request.POST.get("text")})
    if text is None:
        return _notice(request, "Write a message first (up to 20,000 characters).")
    if not get_policy().may_use(session):
        return _notice(request, "You may not use the assistant here any more.")
    wait = take_rate_slot(request.user)
    if wait is not None:
        return _notice(request, f"You're sending messages too quickly. Try again in {wait} s.")
    try:
        turn, message = turns.begin(session, text)
    except TurnInProgress:
        return _notice(request, "The assistant is still answering. Wait for it or press Stop.")
    signals.message_received.send(sender=Session, session=session, message=message)
    turns.start(turn)
    return render(request, "agent/_sent.html", {"text": text, "turn": turn, "stream_url": stream_url(session, turn)})


@require_POST
@login_required
def stop(request: HttpRequest, session_id: Any) -> HttpResponse:
    try:
        session = own_session(request, session_id)
    except Http404:
        raise
    turns.request_stop(session)
    return HttpResponse(status=204)


@require_POST
@login_required
def approval(request: HttpRequest, session_id: Any, approval_id: Any) -> HttpResponse:
    session = own_session(request, session_id)
    approve = request.POST.get("approve") == "1"
    outcome, payload = resolve_approval(request, session, approval_id, approve)
    context = {"approval_id": approval_id, "approved": approve, "outcome": outcome}
    if outcome == "error":
        context["message"] = payload[2]
    elif outcome == "started":
        turn = Turn.objects.get(pk=payload.rstrip("/").split("/")[-2])
        context.update({"turn": turn, "stream_url": payload})
    return render(request, "agent/_decided.html", context)
