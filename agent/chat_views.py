"""The chat panel's HTMX endpoints: send a message (answering with the streaming fragment) and stop."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import resolve, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap

from agent import display, intake, turns, typed
from agent.models import Approval, Message, Part, Session, Turn
from agent.policy import get_policy
from agent.views import own_session, resolve_approval, stream_url


def notice(request: HttpRequest, message: str, retry_after_seconds: int | None = None) -> HttpResponse:
    """A refused message as one calm line in the chat, with the wait (if any) the page counts down."""
    return render(request, "agent/_notice.html", {"message": message, "retry_after_seconds": retry_after_seconds})


def sent_as_page(request: HttpRequest) -> bool:
    """Whether the browser sent this form as a page of its own: a plain form's POST, sent before the page's
    scripts ran (or where they never do), which must be answered with a page. Browsers say so in the
    `Sec-Fetch-Mode` header (`navigate`); htmx's requests, scripts and other clients of the chat's URLs
    do not, and are answered with the fragment."""
    return request.headers.get("Sec-Fetch-Mode") == "navigate" and request.headers.get("HX-Request") != "true"


def page_without_scripts(request: HttpRequest, session: Session) -> str | None:
    """For a chat's form sent as a page (`sent_as_page`), the page to answer with a redirect to: the one the
    session policy names (`SessionPolicy.page_url`). None otherwise, or when the policy names no page."""
    return get_policy().page_url(session) if sent_as_page(request) else None


@require_POST
@login_required
def send(request: HttpRequest, session_id: Any) -> HttpResponse:
    session, access = own_session(request, session_id)
    page = page_without_scripts(request, session)
    text = request.POST.get("text")
    try:
        files = intake.uploaded_files(request)
        run, message = intake.accept(session, request.user, text, files, access=access)
    except intake.Refused as exc:
        if page is not None:
            typed.refused(request, exc)  # (why, said on the page; the words back in its box)
            return redirect(page)
        if exc.code == "turn_in_progress":
            return still_answering(request, session)
        return notice(request, exc.reason, exc.retry_after_seconds)
    if page is not None:
        return redirect(page)  # (the page draws the message, and the answer as it stands)
    context = {
        "text": text,
        "attachments": display.attachment_items(message.parts.all(), session.pk) if files else [],
        "turn": run.turn,
        "stream_url": stream_url(session, run.turn, request),
    }
    return render(request, "agent/_sent.html", context)


def still_answering(request: HttpRequest, session: Any) -> HttpResponse:
    """A message sent while the chat's turn runs, asked from another tab or window (or a script): the
    log is drawn again as a reload would draw it, following that answer (with its Stop), and says why.

    The person's words stay in the box (static/js/chat/log.js keeps a form whose answer is `data-kept`), to send
    when the answer ends; before, the log only said to wait for an answer this page did not show."""
    return reswap(render(request, "agent/_still_answering.html", conversation(session, request)), "innerHTML")


def conversation(session: Session, request: HttpRequest, before: int | None = None) -> dict[str, Any]:
    """What `agent/_conversation.html` draws of a chat: its latest items, the way to earlier ones, and
    the turn still running with its stream (a pass for this request's user in the URL), and whether this
    is a whole page (`whole_page`: not htmx's request), where a running turn says, for a browser without
    scripts, to reload the page to read its answer (a fragment never holds that). With `before`
    (a page asked for the turns before that position, `earlier_position`), those turns instead, with
    `latest_url` (the page at the latest) and no running turn; the form's `running` still says whether
    one runs, so its Stop shows."""
    shown = display.conversation(session, before=before)
    running = shown.running
    context = {
        "chat": session,
        "items": shown.items,
        **earlier_way(session, shown.earlier),
        "running": running,
        "running_url": stream_url(session, running, request) if running else "",
        "whole_page": request.headers.get("HX-Request") != "true",
    }
    if before is not None:
        context["latest_url"] = get_policy().page_url(session) or ""
        context["form_running"] = Turn.objects.filter(session=session, status=Turn.RUNNING).exists()
    return context


def earlier_way(session: Session, before: int | None) -> dict[str, Any]:
    """How `agent/_earlier_button.html` asks for the turns before position `before` (none: nothing
    earlier is left out): the address htmx gets, and the form's, sent as a page before scripts ran."""
    if before is None:
        return {"earlier_url": ""}
    url = reverse("chat:earlier", args=[session.pk])
    return {"earlier_url": f"{url}?before={before}", "earlier_action": url, "earlier_before": before}


def earlier_position(request: HttpRequest) -> int | None:
    """The position whose earlier turns a page is asked to draw (`?before=<position>`, what "Earlier
    messages" sent as a page adds to the chat's page), else None: the latest turns."""
    before = request.GET.get("before", "")
    return int(before) if before.isascii() and before.isdigit() and len(before) < 10 else None


@require_GET
@login_required
def earlier(request: HttpRequest, session_id: Any) -> HttpResponse:
    """The turns before position `before` of the person's own chat, in order, with the way to the
    ones before them: "Earlier messages" puts them in its own place, at the top of the log. Pressed
    before the page's scripts ran (its form sent as a page), it goes to the chat's page asked for them
    (`?before=`, `SessionPolicy.page_url`), which draws them in the log."""
    session, _ = own_session(request, session_id)
    before = earlier_position(request)
    if before is None:
        raise Http404("No such messages.")
    page = page_without_scripts(request, session)
    if page is not None:
        return redirect(with_query(page, before=before))
    shown = display.conversation(session, before=before)
    context = {"chat": session, "items": shown.items, **earlier_way(session, shown.earlier)}
    return render(request, "agent/_earlier.html", context)


def with_query(url: str, **params: Any) -> str:
    """`url` with `params` added to its query (replacing any of the same names)."""
    scheme, netloc, path, query, fragment = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in params]
    return urlunsplit((scheme, netloc, path, urlencode([*kept, *params.items()]), fragment))


@never_cache  # (one person's chat, with a stream pass: no cache between keeps it, nor one of its 204s)
@require_GET
def news(request: HttpRequest, session_id: Any) -> HttpResponse:
    """What a notice of the chat (`agent.notices`) names, for another of its person's open pages:
    `?turn=<id>`, the turn's message (none for an answer resumed after a decision) and its answer,
    followed on its stream (which, opened after the turn ended, gives its end at once); `?approval=<id>`,
    the call's card, decided; `?after=<turn id>`, the turn that came next (`?after=`: the chat's first),
    drawn as `?turn=` draws it, for a page whose stream (re)opened and may have missed notices meanwhile.
    Asked by the page on its own, never by a click: signed out meanwhile, or the chat no longer theirs,
    or nothing to draw, it answers 204 and the page stays as it is."""
    if not request.user.is_authenticated:
        return HttpResponse(status=204)
    try:
        session, _ = own_session(request, session_id)
    except Http404:
        return HttpResponse(status=204)
    turn = _named(Turn.objects.filter(session=session), request.GET.get("turn"))
    if turn is None and "after" in request.GET:
        turn = _next_turn(session, request.GET["after"])
    if turn is not None:
        messages = turn.messages.filter(role=Message.USER).prefetch_related("parts").order_by("position")
        items = [display.user_item(message, session.pk) for message in messages]
        context = {
            "chat": session,
            "items": items,
            "turn": turn,
            "stream_url": stream_url(session, turn, request),
            "answered": _answered_before(turn),
        }
        return render(request, "agent/_news_turn.html", context)
    decided = (Approval.APPROVED, Approval.REJECTED)
    approval = _named(Approval.objects.filter(session=session, status__in=decided), request.GET.get("approval"))
    if approval is not None:
        context = {"approval_id": approval.pk, "approved": approval.status == Approval.APPROVED}
        return render(request, "agent/_news_decided.html", context)
    return HttpResponse(status=204)


def _answered_before(turn: Turn) -> list[dict[str, Any]]:
    """The chips of calls made in an earlier turn that `turn` answered (a call a person decided, run as
    the answer resumed), as they read now: its stream, opened after it ended, gives only its end, not
    the results that turned those chips "done"."""
    parts = Part.objects.filter(message__turn=turn, type__in=("tool_use", "tool_result")).order_by(
        "message__position", "position"
    )
    made = {part.tool_use_id for part in parts if part.type == "tool_use"}
    return [
        display.chip(part.tool_use_id, part.tool_name, display.shown_status(part.tool_status, part.tool_result))
        for part in parts
        if part.type == "tool_result" and part.tool_use_id not in made
    ]


def _next_turn(session: Session, after: str) -> Turn | None:
    """The chat's turn started next after the one whose id is `after` (empty: its first), else None."""
    turns = Turn.objects.filter(session=session).order_by("created_at", "pk")
    if after == "":
        return turns.first()
    shown = _named(turns, after)
    return None if shown is None else turns.filter(created_at__gt=shown.created_at).first()


def _named(rows: Any, raw: str | None) -> Any:
    """The row of `rows` whose id is `raw` (a UUID), else None."""
    try:
        return rows.filter(pk=uuid.UUID(raw or "")).first()
    except ValueError:
        return None


@require_POST
@login_required
def stop(request: HttpRequest, session_id: Any) -> HttpResponse:
    """Stop the chat's running answer. Pressed before the page's scripts ran (the chat form sent here as
    a page, by its Stop), it goes back to the chat's page, saying so, with the words in the box kept
    there (`agent.typed`, as a refused message's)."""
    session, _ = own_session(request, session_id)
    stopped = turns.request_stop(session)
    page = page_without_scripts(request, session)
    if page is None:
        return HttpResponse(status=204)
    typed.keep(request, request.POST.get("text"), reverse("chat:send", args=[session.pk]))
    if stopped:
        messages.info(request, "Stopped: the answer ends where it had got to.", fail_silently=True)
    else:
        messages.info(request, "The answer had already ended.", fail_silently=True)
    return redirect(page)


@require_POST
@login_required
def retry(request: HttpRequest, session_id: Any) -> HttpResponse:
    """ "Try again" pressed below the chat's last answer, which failed for now: the answer is asked for again
    (`intake.retry`), no message added, and followed as a sent message's answer is. Refused (still
    answering, nothing to try again, too many requests), the chat says why in one line."""
    session, access = own_session(request, session_id)
    page = page_without_scripts(request, session)
    try:
        run = intake.retry(session, request.user, access=access)
    except intake.Refused as exc:
        if page is not None:
            messages.error(request, exc.message, fail_silently=True)  # (the wait in words: nothing counts it down)
            return redirect(page)
        if exc.code == "turn_in_progress":
            return still_answering(request, session)
        return notice(request, exc.reason, exc.retry_after_seconds)
    if page is not None:
        return redirect(page)  # (the page draws the answer as it stands)
    context = {"turn": run.turn, "stream_url": stream_url(session, run.turn, request)}
    return render(request, "agent/_retried.html", context)


@require_POST
@login_required
def approval(request: HttpRequest, session_id: Any, approval_id: Any) -> HttpResponse:
    session, access = own_session(request, session_id)
    approve = request.POST.get("approve") == "1"
    outcome, payload = resolve_approval(request, session, access, approval_id, approve)
    page = page_without_scripts(request, session)
    if page is not None:
        if outcome == "error":
            messages.error(request, payload[2], fail_silently=True)
        return redirect(page)
    context = {"approval_id": approval_id, "approved": approve, "outcome": outcome}
    if outcome == "error":
        context["message"] = payload[2]
    elif outcome == "started":
        turn = Turn.objects.get(pk=resolve(payload).kwargs["turn_id"])
        context.update({"turn": turn, "stream_url": payload})
    return render(request, "agent/_decided.html", context)
