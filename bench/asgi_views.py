"""What a user would pick instead: Django async views under uvicorn, the turn run by the stream itself.

Same routes, bytes and per-turn database work as the product (claim + user message in the POST;
turn row, message count, tool catalogue, transcript, budget reservation before the model call;
the stop flag polled every AGENT_STOP_POLL_SECONDS; settle, assistant message and turn finish
after), but the model's events come from an async generator (`asyncio.sleep` pacing) and every
ORM call goes through `sync_to_async`, as Django's async ORM does.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import path, reverse

from agent import budget, sse, turns
from agent.api import error, json_body, message_text
from agent.backends import get_backend, model_for
from agent.backends.base import zero_usage
from agent.exceptions import TurnInProgress
from agent.loop import _Call, _persist
from agent.models import Message, Session, Turn
from agent.policy import get_policy
from agent.tools import catalog_for
from agent.transcript import build_neutral_messages, release_connection


async def _own_session(request: HttpRequest, session_id: Any) -> Session | None:
    user = await request.auser()
    if not user.is_authenticated:
        return None
    return await Session.objects.select_related("user").filter(pk=session_id, user=user).afirst()


async def post_message(request: HttpRequest, session_id: Any) -> HttpResponse:
    if request.method != "POST":
        return error(405, "method_not_allowed", "POST only.")
    session = await _own_session(request, session_id)
    if session is None:
        return error(404, "not_found", "No such chat.")
    text = message_text(json_body(request))
    if text is None:
        return error(400, "bad_message", "Write a message.")
    if not await sync_to_async(get_policy().may_use)(session):
        return error(403, "forbidden", "You may not use the assistant here.")
    try:
        turn, message = await sync_to_async(turns.begin)(session, text)
    except TurnInProgress:
        return error(409, "turn_in_progress", "The assistant is still answering.")
    url = reverse("bench_stream", args=[session.pk, turn.pk])
    return JsonResponse({"message_id": message.pk, "stream_url": url}, status=202)


async def stream(request: HttpRequest, session_id: Any, turn_id: Any) -> HttpResponse:
    session = await _own_session(request, session_id)
    if session is None:
        return error(404, "not_found", "No such chat.")
    turn = await Turn.objects.filter(pk=turn_id, session=session).afirst()
    if turn is None:
        return error(404, "not_found", "No such chat.")
    response = StreamingHttpResponse(_events(turn.pk), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _before_call(turn_id: Any) -> tuple[Turn, list[dict[str, Any]], budget.Reservation, int]:
    turn = Turn.objects.select_related("session", "session__user").get(pk=turn_id)
    session = turn.session
    calls = Message.objects.filter(session=session, role=Message.ASSISTANT).count()
    specs = catalog_for(session.purpose, session)
    messages = build_neutral_messages(session)
    model = model_for(get_backend())
    reservation = budget.reserve(
        session.user,
        model,
        max_tokens=settings.AGENT_MAX_TOKENS,
        input_estimate=budget.estimate_tokens(session.system_prompt, messages, specs),
    )
    release_connection()
    return turn, specs, reservation, calls


def _stop_requested(turn_id: Any) -> bool:
    stop = Turn.objects.filter(pk=turn_id, stop_requested=True).exists()
    release_connection()
    return stop


def _after_call(turn: Turn, call: _Call, specs: list[dict[str, Any]], reservation: budget.Reservation) -> dict:
    backend = get_backend()
    cost = budget.settle(reservation, call.usage)
    message = _persist(turn.session, turn, call, backend.name, model_for(backend), cost, specs)
    payload = {"message_id": message.pk, "stop_reason": call.stop_reason, "usage": call.usage}
    turns._finish(turn, "done", payload)
    release_connection()
    return payload


async def _events(turn_id: Any):
    turn, specs, reservation, index = await sync_to_async(_before_call)(turn_id)
    script = json.loads(open(settings.AGENT_FAKE_SCRIPT).read())["calls"][index]
    call = _Call()
    polled = time.monotonic()
    n = 0
    for raw in script:
        ev = dict(raw)
        delay = ev.pop("delay_ms", 0)
        if delay:
            await asyncio.sleep(delay / 1000)
        if ev["kind"] == "text":
            call.text.append(ev["text"])
            yield sse.encode_json("token", {"text": ev["text"]}, n)
            n += 1
        elif ev["kind"] == "done":
            call.usage = {**zero_usage(), **(ev.get("usage") or {})}
        if time.monotonic() - polled >= settings.AGENT_STOP_POLL_SECONDS:
            polled = time.monotonic()
            if await sync_to_async(_stop_requested)(turn_id):
                call.stop_reason = "stopped"
                break
    payload = await sync_to_async(_after_call)(turn, call, specs, reservation)
    yield sse.encode_json("done", payload, n)


urlpatterns = [
    path("api/agent/sessions/<uuid:session_id>/messages", post_message),
    path("api/agent/sessions/<uuid:session_id>/turns/<uuid:turn_id>/stream", stream, name="bench_stream"),
]
