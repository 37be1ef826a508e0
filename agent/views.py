"""The JSON API and the event stream (docs/engine.md, "HTTP API and streams")."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from django.db.models import prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.urls import reverse

from agent import approvals, hub, intake, logcontext, sse, stream_pass, streams, turns
from agent.api import BadQuery, Page, api_view, error, json_body, transcript_page
from agent.exceptions import NothingToResume, TurnInProgress
from agent.follow import Item, abandoned, follow_batches, had_the_end
from agent.media_views import attachment_json
from agent.models import Approval, Message, Session, Turn
from agent.policy import Access, get_policy
from agent.transcript import part_to_neutral

logger = logcontext.get_logger("agent.views")

NOT_FOUND = "That chat doesn't exist or isn't yours."
NOT_JSON = 'Send a JSON object, {"text": "..."}, or multipart/form-data.'


def api_login_required(view):
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return error(401, "unauthenticated", "Please sign in first.")
        return view(request, *args, **kwargs)

    return wrapped


def session_api(view):
    """Resolve `session_id` to the request user's session, while the policy lets them read it, and
    call the view with it and the policy's answer (`Access`); else answer 404 not_found as JSON."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, session_id: Any, *args: Any, **kwargs: Any) -> HttpResponse:
        found = readable_session(request, session_id)
        if found is None:
            return error(404, "not_found", NOT_FOUND)
        return view(request, *found, *args, **kwargs)

    return wrapped


def own_session(request: HttpRequest, session_id: Any) -> tuple[Session, Access]:
    """The request user's session and what they may do in it, else Http404 (another user's session,
    or one the policy no longer lets them read, does not exist for them)."""
    found = readable_session(request, session_id)
    if found is None:
        raise Http404(NOT_FOUND)
    return found


def readable_session(request: HttpRequest, session_id: Any) -> tuple[Session, Access] | None:
    """The request user's own session, while the policy still lets them read it, with the policy's
    whole answer (one look at the domain's rules serves the request's checks); else None."""
    policy = get_policy()
    try:
        sessions = Session.objects.select_related(*policy.related) if policy.related else Session.objects
        session = sessions.get(pk=session_id, user=request.user.pk)
    except Session.DoesNotExist:
        return None
    assert request.user.is_authenticated  # (the session is theirs: an anonymous user has none)
    session.user = request.user  # the same row, already read for this request
    access = policy.access(session)
    return (session, access) if access.read else None


def stream_url(session: Session, turn: Turn, request: HttpRequest | None = None) -> str:
    """The turn's stream; handed out by a `request` that has just checked the user and the chat, it
    carries a pass that lets the stream open without checking them again (`agent.stream_pass`)."""
    token = stream_pass.issue(request, session.pk, turn.pk) if request is not None else None
    if token is None:
        return reverse("agent:stream", args=[session.pk, turn.pk])
    return reverse("agent:stream_pass", args=[session.pk, turn.pk, token])


@api_view("POST")
@api_login_required
def create_session(request: HttpRequest) -> HttpResponse:
    body = json_body(request)
    if body is None:
        return error(400, "bad_request", "Send a JSON object.")
    try:
        session = intake.open_session(request.user, body)
    except intake.Refused as exc:
        return error(exc.status, exc.code, exc.message, **exc.extra)
    return JsonResponse({"id": str(session.pk)}, status=201)


@api_view("POST")
@api_login_required
@session_api
def post_message(request: HttpRequest, session: Session, access: Access) -> HttpResponse:
    """A JSON body `{"text"}`, or multipart/form-data with `text` and `files` (repeatable)."""
    try:
        if request.content_type == "multipart/form-data":
            files = intake.uploaded_files(request)
            text = request.POST.get("text")
        else:
            body = json_body(request)
            if body is None:
                return error(400, "bad_message", NOT_JSON)
            files, text = [], body.get("text")
        run, message = intake.accept(session, request.user, text, files, access=access)
    except intake.Refused as exc:
        return error(exc.status, exc.code, exc.message, **exc.extra)
    return JsonResponse({"message_id": message.pk, "stream_url": stream_url(session, run.turn, request)}, status=202)


@api_view("GET")
def stream(request: HttpRequest, session_id: Any, turn_id: Any, token: str | None = None) -> HttpResponseBase:
    """The turn's events. With a valid pass (`agent.stream_pass`) for a turn running in this
    process it follows the turn at once; else the user, the chat and the policy are checked first."""
    passed = _passed(request, token, session_id, turn_id) if token is not None else None
    if passed is None:
        return _checked_stream(request, session_id, turn_id)
    user_id, chat = passed
    turn = Turn(pk=turn_id, session=chat)  # a reference to its row: the HTML flavour's last event reads through it
    return _turn_stream(request, user_id, turn)


def _passed(request: HttpRequest, token: str, session_id: Any, turn_id: Any) -> tuple[Any, Session] | None:
    """The user a valid pass lets follow this turn, and its chat, while the turn runs in this process
    and the policy, asked afresh, still lets them read it; None: the stream is checked in full."""
    user_id = stream_pass.holder(request, token, session_id, turn_id)
    channel = hub.get_channel(str(turn_id)) if user_id is not None else None
    if channel is None or channel.session is None or (channel.closed and channel.delivered):
        return None
    chat = channel.session  # as the request that started the turn read it, with its user
    if chat.user_id != user_id or str(chat.pk) != str(session_id):
        return None
    return (user_id, chat) if get_policy().may_read(chat) else None


@api_login_required
def _checked_stream(request: HttpRequest, session_id: Any, turn_id: Any) -> HttpResponseBase:
    policy = get_policy()
    # The turn with its session in one query, under the same rules as `session_api`.
    try:
        turn = Turn.objects.select_related("session", *(f"session__{name}" for name in policy.related)).get(
            pk=turn_id, session_id=session_id, session__user=request.user.pk
        )
    except Turn.DoesNotExist:
        return error(404, "not_found", NOT_FOUND)
    assert request.user.is_authenticated  # (`api_login_required`; and the turn's session is theirs)
    turn.session.user = request.user  # the same row, already read for this request
    if not policy.may_read(turn.session):
        return error(404, "not_found", NOT_FOUND)
    return _turn_stream(request, request.user.pk, turn)


def _turn_stream(request: HttpRequest, user_id: Any, turn: Turn) -> HttpResponseBase:
    """The turn's stream for a user the checks let follow it.

    Resumed (`Last-Event-ID`) at or after its terminal event, the client has had everything: 204,
    which tells an EventSource to stop reconnecting; the HTML flavour gets its `end` alone, which
    closes the page's stream.
    """
    last_event_id, flavour = _last_event_id(request), request.GET.get("flavour")
    if had_the_end(turn.pk, last_event_id):
        return event_stream(iter([sse.encode("end", "end")])) if flavour == "html" else HttpResponse(status=204)
    return event_stream(_users_stream(user_id, turn, last_event_id, flavour))


def _users_stream(user_id: Any, turn: Turn, last_event_id: int | None, flavour: str | None) -> Iterator[bytes]:
    """One of the user's open streams (`agent.streams`); when it is superseded it ends calmly."""
    html = flavour == "html"
    with streams.opened(user_id) as ticket:
        batches = follow_batches(turn, last_event_id=last_event_id, ticket=ticket)
        yield from _html_events(batches, turn) if html else _json_events(batches)
    if ticket.superseded:
        yield streams.SUPERSEDED_BYTES + (sse.encode("end", "end") if html else b"")


def _last_event_id(request: HttpRequest) -> int | None:
    raw = request.headers.get("Last-Event-ID", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None  # (no turn has more events)


# One chunk per batch: the events a follower found at one wake-up go out in one write, byte for byte
# what one chunk per event would send.


def _json_events(batches: Iterator[list[Item]]) -> Iterator[bytes]:
    encode = sse.encode_json
    for batch in batches:
        if len(batch) == 1:
            event_id, name, payload = batch[0]
            yield sse.HEARTBEAT_BYTES if name == "heartbeat" else encode(name, payload, event_id)
        else:
            yield b"".join(
                sse.HEARTBEAT_BYTES if name == "heartbeat" else encode(name, payload, event_id)
                for event_id, name, payload in batch
            )


def _html_events(batches: Iterator[list[Item]], turn: Turn) -> Iterator[bytes]:
    encode = sse.encode_html
    for batch in batches:
        yield encode(batch[0], turn) if len(batch) == 1 else b"".join(encode(item, turn) for item in batch)


def event_stream(chunks: Iterator[bytes]) -> StreamingHttpResponse:
    """A server-sent event stream: one person's, so no cache keeps it (`no-store`) nor serves it to
    another (`private`); `X-Accel-Buffering: no` asks a proxy in front to pass each event on at once."""
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-store, private"
    response["X-Accel-Buffering"] = "no"
    return response


@api_view("POST")
@api_login_required
@session_api
def stop(request: HttpRequest, session: Session, access: Access) -> HttpResponse:
    if not turns.request_stop(session):
        return error(409, "no_turn", "Nothing is running in this chat.")
    return JsonResponse({}, status=202)


@api_view("POST")
@api_login_required
@session_api
def retry(request: HttpRequest, session: Session, access: Access) -> HttpResponse:
    """Ask for the chat's latest answer again after it failed for now (the page's "Try again",
    `intake.retry`): no message is added; `202 {"stream_url"}` of the new answer, or the message's errors
    and `409 nothing_to_retry`."""
    try:
        run = intake.retry(session, request.user, access=access)
    except intake.Refused as exc:
        return error(exc.status, exc.code, exc.message, **exc.extra)
    return JsonResponse({"stream_url": stream_url(session, run.turn, request)}, status=202)


@api_view("GET")
@api_login_required
@session_api
def transcript(request: HttpRequest, session: Session, access: Access) -> HttpResponse:
    """The chat's messages in order: all of them, or with `?after=<position>&limit=<n>` one page of
    them, the next page's URL then in `Link: <url>; rel="next"` while more follow (the body keeps
    its shape)."""
    try:
        page = transcript_page(request)
    except BadQuery as exc:
        return error(400, "bad_request", str(exc))
    running = Turn.objects.filter(session=session, status=Turn.RUNNING).order_by("-created_at").first()
    if running is not None:
        running.session = session
        if abandoned(running):  # its worker died: nothing runs, whatever its row says (the next turn closes it)
            running = None
    # (read after the turn: a turn that ends between the two reads is shown running, with its end)
    messages, next_url = transcript_messages(session, page)
    body: dict[str, Any] = {
        "id": str(session.pk),
        "purpose": session.purpose,
        "running": running is not None,
        "messages": [message_json(m) for m in messages],
    }
    if running is not None:
        body["stream_url"] = stream_url(session, running, request)
    response = JsonResponse(body)
    if next_url is not None:
        response["Link"] = f'<{next_url}>; rel="next"'
    return response


def transcript_messages(session: Session, page: Page | None) -> tuple[list[Message], str | None]:
    """The session's messages with their parts, all of them or one `page`, and the next page's URL
    when more follow. Two reads however long the chat: the messages, then their parts."""
    if page is None:
        return list(session.messages.prefetch_related("parts")), None
    # one message past the page says whether another page follows; its parts are not read
    messages = list(session.messages.filter(position__gt=page.after)[: page.limit + 1])
    next_url = None
    if len(messages) > page.limit:
        messages = messages[: page.limit]
        after = messages[-1].position
        next_url = f"{reverse('agent:transcript', args=[session.pk])}?after={after}&limit={page.limit}"
    prefetch_related_objects(messages, "parts")
    return messages, next_url


def message_json(message: Message) -> dict[str, Any]:
    assistant = message.role == Message.ASSISTANT
    return {
        "id": message.pk,
        "role": message.role,
        "position": message.position,
        "parts": [_part_json(p) for p in message.parts.all()],
        "usage": message.usage if assistant else None,
        "stop_reason": message.stop_reason or None,
        "tools_offered": message.tools_offered if assistant else None,
    }


def _part_json(part: Any) -> Mapping[str, Any]:
    if part.type in ("image", "document"):
        return attachment_json(part)
    return part_to_neutral(part)


@api_view("POST")
@api_login_required
@session_api
def decide_approval(request: HttpRequest, session: Session, access: Access, approval_id: Any) -> HttpResponse:
    """Approve or reject a call waiting for a person; answers the stream URL of the resumed turn."""
    body = json_body(request)
    if body is None or not isinstance(body.get("approve"), bool):
        return error(400, "bad_request", 'Send {"approve": true} or {"approve": false}.')
    outcome, payload = resolve_approval(request, session, access, approval_id, body["approve"])
    if outcome != "started":
        return error(*payload) if outcome == "error" else JsonResponse(payload, status=202)
    return JsonResponse({"stream_url": payload}, status=202)


def resolve_approval(
    request: HttpRequest, session: Session, access: Access, approval_id: Any, approve: bool
) -> tuple[str, Any]:
    """Shared by the API and the chat panel: ("error", (status, code, message)), ("waiting", body), ("started", url).

    `access`: what the policy answered for this session in this request."""
    if not access.use:
        return "error", (403, "forbidden", "You may not use the assistant here.")
    result = approvals.decide(session, approval_id, request.user, approve)
    if result == "expired":
        return "error", (409, "approval_expired", approvals.NOT_DECIDED[result])
    if result == "gone" and not Approval.objects.filter(pk=approval_id, session=session).exists():
        return "error", (404, "not_found", "That request doesn't exist or isn't yours.")
    if result == "gone":
        return "error", (409, "approval_decided", approvals.NOT_DECIDED[result])
    still = approvals.waiting(session, approval_id)
    if still:
        return "waiting", {"stream_url": None, "waiting": [str(a.pk) for a in still]}
    try:
        run = turns.resume(session)
    except NothingToResume:  # decided at the same moment as another call: that request's turn answers both
        latest = turns.latest(session)
        assert latest is not None  # (calls waited on people: the turn that paused for them is there)
        return "started", stream_url(session, latest, request)
    except TurnInProgress:
        return "error", (409, "turn_in_progress", approvals.STILL_ANSWERING)
    turns.start(run)
    return "started", stream_url(session, run.turn, request)


def no_such_call(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Any other URL under the API's prefix (a malformed id, a trailing slash): 404 in the API's shape,
    with `DEBUG` on too (not Django's HTML page)."""
    return error(404, "not_found", "Nothing is at this URL. Check it against the API's documentation.")
