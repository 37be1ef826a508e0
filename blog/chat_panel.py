"""The assistant panel on a blog page: the latest chat resumes, earlier ones are listed, a new one starts.

Showing the page writes nothing: with no chat yet, the panel's form posts to `first_message`, which
creates the chat with its first message; "New chat" is an explicit POST. Both count under the
message rate limit; a refused "New chat" from the page (htmx) answers the notice the chat's log shows
for a refused message, and the page stays where it is.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap

from accounts.http import AuthenticatedHttpRequest, HtmxHttpRequest
from agent import budget, display, intake, titles, typed
from agent.api import message_text
from agent.chat_views import conversation, earlier_position, notice, sent_as_page
from agent.models import Message, Session
from agent.policy import Access
from agent.templatetags.agent_waits import wait
from agent.views import stream_url
from blog import chat_search, grants, live
from blog.chat import panel_page, start_session
from blog.models import Blog, Post, Seat
from blog.pieces import piece_of_page

#: How much of a chat's first message names it in the list of earlier chats.
LABEL_CHARS = 48
#: How many of the latest chats the panel lists; the rest are on the chats page, a page at a time.
PANEL_CHATS = 20
CHATS_PER_PAGE = 50
#: The order of a person's chats in every list of them.
LATEST_FIRST = "-updated_at"


def blog_sessions(user: Any, blog: Blog, post: Post | int | None = None):
    """The user's chats on the blog page (`post` None), or beside one post's editor (the post or its id), the
    latest first."""
    return Session.objects.filter(user=user, blog_link__blog=blog, blog_link__post=post).order_by(LATEST_FIRST)


def listed(sessions: QuerySet[Session], shown: str = "") -> QuerySet[Session]:
    """Of these chats (`blog_sessions`), those a list names: each one something was said in, and the one
    the page shows even with nothing said yet (`shown`, its id; with none named, the latest, which the
    panel resumes: just started by New chat, say). A chat with nothing said is listed nowhere else: not
    one more "Untitled chat" for each New chat left, nor one just started in another tab (it joins the
    list with its first message, `live.first_message`). Not deleted: a link to it still opens it.

    One query, its cost the person's chats whatever the size of the messages table: whether a chat has
    a message is a subquery of its first message's position (LIMIT 1, by the (session, position) index),
    the latest's id another. An EXISTS would say the same, but under the OR PostgreSQL may read it as
    one set, every person's messages scanned (a hashed subplan over the whole table), even for the
    panel's twenty; a subquery with LIMIT 1 is never read so (as `chat_search.matching`'s)."""
    first = Message.objects.filter(session=OuterRef("pk")).order_by("position").values("position")[:1]
    said = Q(listed_first_position__isnull=False)
    named = Q(pk=shown) if is_uuid(shown) else Q(pk=Subquery(sessions.values("pk")[:1]))
    return sessions.alias(listed_first_position=Subquery(first)).filter(said | named)


def labelled(sessions) -> list[Session]:
    """The chats, each with `label`: its title, else the start of its first message (read in the same
    query), so a person knows them apart by more than a date."""
    found: list[Any] = list(display.with_first_words(sessions, LABEL_CHARS))  # (each given its `label`)
    for session in found:
        session.label = display.chat_label(session, LABEL_CHARS)
    return found


def shown_chats(ids: Any, words: str = "") -> list[Session]:
    """The chats of a page of a list (`ids`: a slice of its `values("pk")`), latest first, `labelled`, each
    with `found` for its snippet when a search found them (`words`). One statement: the slice is its
    subquery, so the earlier chats the slice skips cost no label, no snippet (two for words with letters
    beyond ASCII: the shown chats' texts are read and matched here, `chat_search.find_here`)."""
    chats = Session.objects.filter(pk__in=ids).order_by(LATEST_FIRST)
    if not words or not words.isascii():
        shown = labelled(chats)
        if words:  # (letters the database does not fold: their texts read once, matched here)
            chat_search.find_here(shown, words)
        return shown
    return labelled(chat_search.with_found(chats, words))


def panel_context(
    request: HttpRequest, blog: Blog, seat: Seat, chat_id: str | None, post: Post | None = None
) -> dict[str, Any]:
    """The panel on the blog page, or (with `post`) beside that post's editor, in chats about it."""
    if not grants.may_summon(seat):
        return {"assistant": False}
    own = blog_sessions(request.user, blog, post)
    sessions = labelled(listed(own, chat_id or "")[:PANEL_CHATS])
    current = next((s for s in sessions if str(s.pk) == chat_id), None) if chat_id else None
    if current is None and chat_id and is_uuid(chat_id):  # an older chat of theirs, named by its link
        current = own.filter(pk=chat_id).first()
    current = current or (sessions[0] if sessions else None)
    shown = (
        conversation(current, request, before=earlier_position(request))
        if current
        else {"chat": None, "items": [], "running": None, "running_url": ""}
    )
    meter = budget.meter(request.user)
    return {
        "assistant": True,
        "chat_sessions": sessions,
        "all_chats_url": _panel_url("chats", blog, post),  # (always: chats are renamed there)
        **shown,
        "meter": display.meter_display(meter),
        "grant_scopes": _grant_scopes(request.user, blog),
        "panel_post": post,
        "new_chat_url": _panel_url("new_chat", blog, post),
        "first_message_url": _panel_url("first_message", blog, post),
        "panel_chat_url": _panel_url("panel_chat", blog, post),
        "chat_list_url": _panel_url("chat_list", blog, post),
    }


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


@require_GET
@login_required
def chats(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """All of the person's chats on the blog (or beside one post's editor), the latest first, a page at
    a time: the panel lists only the latest, and every older one stays a link away. Its form finds
    them by their name or by what was said in them (`?q=`, `blog/chat_search.py`). Each can be renamed
    here (`chat_rename`)."""
    blog = _summoner_blog(request, slug)
    return _chats_page(request, blog, _panel_post(blog, pk), request.GET.get("page"), chat_search.read(request.GET))


def _chats_page(
    request: HttpRequest,
    blog: Blog,
    post: Post | None,
    number: Any,
    search: chat_search.ChatSearch,
    rename: dict[str, Any] | None = None,
) -> HttpResponse:
    """The chats page, or those of its chats a `search` finds; with `rename` (`chat`, `typed`, `error`),
    again after a refused name, that chat's field open with what was typed and the refusal beside it:
    on the page the form came from, first when newer chats have moved it to a later page meanwhile.

    The count and the page's slice of the list are of chats' ids: whether a chat is listed (and a
    search's match) is read for each chat up to the page, as any count or OFFSET must, but only the
    chats shown have their label and snippet read, in the statement around that slice (`shown_chats`).
    With the labels in the statement that pages, PostgreSQL worked out every skipped chat's label
    before its OFFSET. Two statements (the count, the page), whatever the chats; a search with letters
    beyond ASCII reads the chats' texts and titles once more each, and the shown chats' texts."""
    sessions, cut = listed(blog_sessions(request.user, blog, post)), False
    if search.problem:
        sessions = sessions.none()
    elif search.words:
        sessions, cut = chat_search.matching(sessions, search.words)
    page = Paginator(sessions.values("pk"), CHATS_PER_PAGE).get_page(number)
    shown: list[Any] = shown_chats(page.object_list, search.words)  # (each given its `snippet` too)
    if rename and not any(s.pk == rename["chat"].pk for s in shown):
        shown = labelled(Session.objects.filter(pk=rename["chat"].pk)) + shown
    for session in shown:
        session.snippet = chat_search.snippet(session, search.words) if search.words else ""
    context = {
        "blog": blog,
        "panel_post": post,
        "page": page,
        "chat_sessions": shown,
        "panel_url": _panel_page(blog, post),
        "chats_url": _panel_url("chats", blog, post),
        "search": search,
        "max_query": chat_search.MAX_QUERY_CHARS,
        "capped": cut,
        "matches_max": chat_search.MATCHES_MAX,
        "title_max": titles.TITLE_MAX,
        "rename": rename,
    }
    return render(request, "blog/chats.html", context, status=400 if rename else 200)


@require_http_methods(["GET", "POST"])
@login_required
def chat_rename(request: AuthenticatedHttpRequest, slug: str, chat_id: uuid.UUID) -> HttpResponse:
    """The person's own chat on this blog given a name of theirs, from the chats page, which it goes back
    to (the same page of it, and the same search); a name refused shows that page again, the refusal
    beside what was typed. `action=unname` takes the name away (the chat named by its first words again). Anyone else's chat, or another blog's, is 404. A GET (back from signing in,
    the form's address as `next`) goes to the chats page."""
    blog = _summoner_blog(request, slug)
    own = Session.objects.filter(user=request.user, blog_link__blog=blog).select_related("blog_link__post")
    session = get_object_or_404(own, pk=chat_id)
    post = session.blog_link.post  # (the panel the chat is listed in: the blog page's, or a post's)
    back = _panel_url("chats", blog, post)
    if request.method != "POST":
        return redirect(back)
    typed, number = request.POST.get("title", ""), request.POST.get("page", "")
    search = chat_search.read(request.POST)
    if request.POST.get("action") == "unname":  # (its **Use its first words**)
        titles.session_unname(session=session)
        messages.success(request, "The chat is named by its first words again.")
    else:
        try:
            title = titles.session_rename(session=session, title=typed)
        except titles.TitleRefused as exc:
            refused = {"chat": session, "typed": typed, "error": exc.args[0]}
            return _chats_page(request, blog, post, number, search, refused)
        messages.success(request, f"Renamed the chat “{title}”.")
    kept = [search.params] if search.params else []  # (the search and the page the form came from)
    if number.isascii() and number.isdigit():
        kept.append(f"page={number}")
    return redirect(back + ("?" + "&".join(kept) if kept else ""))


def _grant_scopes(user: Any, blog: Blog) -> list[str]:
    """What the assistant may do for `user` on `blog` now (their Consent within their seat), in order."""
    return sorted(grants.assistant(user, blog).scopes)


def _panel_url(name: str, blog: Blog, post: Post | None) -> str:
    if post is None:
        return reverse(f"blog:{name}", args=[blog.slug])
    return reverse(f"blog:post_{name}", args=[blog.slug, post.pk])


def _panel_post(blog: Blog, pk: int | None) -> Post | None:
    """The post whose editor the panel is beside (404 if it is not this blog's), or None."""
    return None if pk is None else get_object_or_404(Post, blog=blog, pk=pk)


def _panel_page(blog: Blog, post: Post | None, session: Session | None = None) -> str:
    return panel_page(blog, None if post is None else post.pk, session)


def _summoner_blog(request: HttpRequest, slug: str) -> Blog:
    """The blog, for a member who may summon the assistant on it; else 404."""
    found = grants.member_blog(request.user, slug)
    if found is None or not grants.may_summon(found[1]):
        raise Http404("No such blog.")
    return found[0]


def _refusal(exc: intake.Refused) -> str:
    return exc.reason + (f" Try again in {wait(exc.retry_after_seconds)}." if exc.retry_after_seconds else "")


@piece_of_page
@require_GET
def grant_line(request: HttpRequest, slug: str) -> HttpResponse:
    """The panel's line saying what the assistant may do for the person here, as it stands now.

    Asked by the page on its own (an answer ended, the tab shown again), never by a click: signed out
    meanwhile, or no longer one who may summon the assistant here, it answers 204 and the page stays
    as it is (the blog's live channel and the next click say so), not sent to sign in unasked."""
    if not request.user.is_authenticated:
        return HttpResponse(status=204)
    try:
        blog = _summoner_blog(request, slug)
    except Http404:
        return HttpResponse(status=204)
    context = {"blog": blog, "grant_scopes": _grant_scopes(request.user, blog)}
    return render(request, "blog/_grant_line.html", context)


def _quiet_panel(request: HttpRequest, slug: str, pk: int | None) -> tuple[Blog, Post | None] | None:
    """The blog and post of a panel a page asks about on its own (never by a click), or None where it
    should quietly get nothing: signed out meanwhile, or no longer one who may summon the assistant here."""
    if not request.user.is_authenticated:
        return None
    try:
        blog = _summoner_blog(request, slug)
        return blog, _panel_post(blog, pk)
    except Http404:
        return None


@piece_of_page
@never_cache  # (one person's chat: no cache between keeps it, nor one of its 204s)
@require_GET
def panel_chat(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """The panel with one of the person's chats (`?chat=<id>`), for a page of theirs that showed none
    when they started it in another tab (`blog.live.chat_opened`): its log, and out of band its form
    and the page's stream naming it. `?latest=1` names their latest chat of this panel instead, for
    such a page whose stream was down meanwhile (it heard no notice; showing none, it had none there).
    Asked by the page on its own, never by a click: signed out meanwhile, no longer one who may summon
    the assistant here, or not their chat of this panel (or none), it answers 204 and the page stays
    as it is."""
    panel = _quiet_panel(request, slug, pk)
    if panel is None:
        return HttpResponse(status=204)
    blog, post = panel
    own = blog_sessions(request.user, blog, post)
    chat_id = request.GET.get("chat", "")
    if request.GET.get("latest") == "1":
        session = own.first()
    else:
        session = own.filter(pk=chat_id).first() if is_uuid(chat_id) else None
    if session is None:
        return HttpResponse(status=204)
    context = {"blog": blog, "assistant": True, "panel_post": post, **conversation(session, request)}
    return render(request, "blog/_panel_chat.html", context)


@piece_of_page
@never_cache  # (one person's list of chats)
@require_GET
def chat_list(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """The panel's list of the person's chats as it stands now, the one its page shows (`?chat=<id>`)
    marked: asked by a page of theirs showing a chat when they start another in another tab
    (`blog.live.chat_opened`), or open the list. Asked by the page on its own, never by a click: signed
    out meanwhile, or no longer one who may summon the assistant here, it answers 204."""
    panel = _quiet_panel(request, slug, pk)
    if panel is None:
        return HttpResponse(status=204)
    blog, post = panel
    chat_id = request.GET.get("chat", "")
    sessions = labelled(listed(blog_sessions(request.user, blog, post), chat_id)[:PANEL_CHATS])
    context = {
        "chat_sessions": sessions,
        "all_chats_url": _panel_url("chats", blog, post),
        "chat": next((s for s in sessions if str(s.pk) == chat_id), None),
    }
    return render(request, "blog/_chat_history.html", context)


@require_POST
@login_required
def new_chat(request: HtmxHttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    blog = _summoner_blog(request, slug)
    post = _panel_post(blog, pk)
    data: dict[str, Any] = {"blog": blog.slug} if post is None else {"blog": blog.slug, "post": post.pk}
    try:
        session = intake.open_session(request.user, data)
    except intake.Refused as exc:
        if request.htmx:
            return notice(request, exc.reason, exc.retry_after_seconds)
        messages.error(request, _refusal(exc))
        return redirect(_panel_page(blog, post))
    if request.htmx:
        return HttpResponseClientRedirect(_panel_page(blog, post, session))
    return redirect(_panel_page(blog, post, session))


@require_POST
@login_required
def first_message(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """The panel's first message when there is no chat yet: the chat is created with it.

    Answers like `chat:send`, plus the chat form again (out of band) pointing at the new chat. Whatever
    can refuse the message without a chat is asked before one is made: its text, the rate slot (one
    past the limit makes none) and its files (checked here, handed on checked). So a refused message
    never makes a chat, nor deletes one that another tab's first message may have joined meanwhile.

    The form says which chat the page was drawn with (`drawn`: the panel's latest, "" for none). Two
    tabs showing no chat may send at once: under a lock on the person's seat, a chat of this panel
    newer than that one (the other tab's, made a moment ago) takes the message instead, answered as a
    send to it is (`_joined`), so the tabs share one chat. A form that does not say (a client of its
    own) makes a chat each time, as before.

    Sent by the browser as a page (`sent_as_page`: before the page's scripts ran), it is answered with a
    redirect to the panel's page, at the chat when the message went to one, as `chat:send` is then.
    """
    blog = _summoner_blog(request, slug)
    post = _panel_post(blog, pk)

    as_page = sent_as_page(request)

    def refused(exc: intake.Refused) -> HttpResponse:
        if as_page:
            typed.refused(request, exc)  # (why, said on the page; the words back in its box)
            return redirect(_panel_page(blog, post))
        return notice(request, exc.reason, exc.retry_after_seconds)

    try:
        files = intake.uploaded_files(request)  # (first: a body stopped as it arrived has no text either)
    except intake.Refused as exc:
        return refused(exc)
    text = request.POST.get("text")
    if message_text({"text": text}) is None:
        return refused(intake.Refused(400, "bad_message", intake.BAD_MESSAGE))
    try:
        slot = intake.rate_slot(request.user)  # (before the files: checking them can take seconds the limit spares)
    except intake.Refused as exc:
        return refused(exc)
    try:
        uploads = intake.uploads_for_slot(slot, files)
    except intake.Refused as exc:
        return refused(exc)
    session, created = _chat_for_first_message(request.user, blog, post, request.POST.get("drawn"))
    try:
        # (`_summoner_blog` has just read the seat that lets them summon the assistant here)
        access = Access(read=True, use=True)
        run, message = intake.accept(session, request.user, text, access=access, slot=slot, checked=uploads)
    except intake.Refused as exc:
        # Only "still answering" is expected (the other tab's first message went first): the checks
        # above were made. The chat stays either way, never deleted: another tab may have joined it.
        if created:
            live.chat_opened(session, blog, post)
        if as_page:  # (the page goes to the chat: its form takes the words)
            typed.refused(request, exc, reverse("chat:send", args=[session.pk]))
            return redirect(_panel_page(blog, post, session))
        if exc.code == "turn_in_progress":
            return _joined(request, blog, post, session, sent=False)
        return notice(request, exc.reason, exc.retry_after_seconds)
    if as_page:
        return redirect(_panel_page(blog, post, session))  # (the page draws the message and the answer so far)
    if not created:
        return _joined(request, blog, post, session, sent=True)
    # (made for this message, it is announced with it: `live.first_message`, a chat to take up)
    context = {
        "blog": blog,
        "chat": session,
        "text": text,
        "attachments": display.attachment_items(message.parts.all(), session.pk) if files else [],
        "turn": run.turn,
        "stream_url": stream_url(session, run.turn, request),
    }
    return render(request, "blog/_first_sent.html", context)


def _chat_for_first_message(user: Any, blog: Blog, post: Post | None, drawn: str | None) -> tuple[Session, bool]:
    """The chat a first message goes to, and whether it was made for it: the person's latest chat of
    the panel when the page was drawn with another (`drawn`, "" for none), else a new one. One request
    of the person at a time decides (their seat's row locked; on SQLite the transaction, begun
    IMMEDIATE, is the lock), so of two sent at once the second finds the first's chat."""
    with transaction.atomic():
        list(Seat.objects.select_for_update().filter(blog=blog, user=user).values_list("pk", flat=True))
        latest = blog_sessions(user, blog, post).first() if drawn is not None else None
        if latest is not None and str(latest.pk) != drawn:
            return latest, False
        return start_session(user, blog, post), True


def _joined(request: HttpRequest, blog: Blog, post: Post | None, session: Session, *, sent: bool) -> HttpResponse:
    """The answer to a first message that went to a chat the person had started meanwhile in another
    tab: the log drawn again as that chat stands (HX-Reswap innerHTML), with the message and its answer
    followed (`sent`), or, that chat's turn still running, as `chat:send` answers then (the words stay
    in the box, `data-keep-typed`); out of band, the form and the page's stream naming that chat."""
    shown = conversation(session, request)
    context = {"blog": blog, "assistant": True, "panel_post": post, "sent": sent, "keep_typed": not sent, **shown}
    return reswap(render(request, "blog/_first_joined.html", context), "innerHTML")
