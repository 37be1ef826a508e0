"""Every open page of a blog hears what changed in it: a per-blog channel on the engine's event bus.

Each change to a post (`blog.services`, the one write path: a person's form, another tab, another
member, the assistant) announces its effect on the channel `blog:<id>` once its transaction has
committed. Each blog page listens on `/blogs/<slug>/events/`, an SSE stream of `effects` events
(a JSON list of `{"type", "id"}`, the shape of the chat stream's effects), and refreshes its post
list on each. With `AGENT_EVENTS_URL` the channel reaches pages served by every worker and host;
without it, those of the worker that made the change. A user keeps at most AGENT_MAX_STREAMS_PER_USER
such pages listening in a worker: opening one more stops the oldest, which says so. A page names
itself (`?page=`): the stream it opens when it points its stream at another chat, or reconnects,
replaces its earlier one in the worker at once, whose place is then free (not at its next heartbeat,
the first a stream closed by its page is found gone).

Only members who may read the blog hear it, checked after each message arrives and before it is
relayed (`blog.rosters`: one read per message for all the process's pages of the blog). A seat changed
or removed sends the channel a message with no effects (`seat_changed`), so the page of a member who
lost the blog stops at once, not at the blog's next change; that page's stream ends with a notice
saying why, and the page stops listening. So does the page of a session that no longer signs its
member in (signed out, or ended by a password change elsewhere), looked at once a minute at most.
Only an EventSource is answered (`from_event_source`): an image in a post cannot open a stream.

A page showing one of its member's own chats names it (`?chat=<id>`): that chat's notices
(`agent.notices`: a turn started, a call decided, in another tab or device) come on the same stream
as `chat` events (`{"turn": id}` or `{"approval": id}`), under the same per-message check; the
chat's own panel then fetches what the notice names. No other member's page hears them: the chat is
checked to be the requester's own before its channel is listened to.

A page showing none of its member's chats (the panel's first words: `?panel=blog`, or `?panel=<post
id>` beside that post's editor) hears instead when that member starts one there, in another tab or
device or through the API (`chat_opened`, on their own channel `panel:<blog>:<user>[:<post>]`): a
`chat` event `{"chat": id}`, under the same check. The panel then takes that chat up in place, and
the page's stream names it from then on. A page showing one of their chats hears that channel too
(the panel of the chat it shows): the chat started elsewhere joins its list of earlier chats, the chat
shown stays. No one else's page listens to that channel.

What changed between a page's drawing and its stream's first opening was published to no one who
listened. So the page is drawn with a mark of the blog's posts (`page_mark`, read before the posts it
vouches for), and its stream, once listening, sends the mark as it is now (a `mark` event, its first):
the page, finding it different, reads again what a change refreshes, as after an outage (static/js/chat/tabs.js). So
for the blog's own title, description and owner and the member's seat (`head_mark`: a rename, a hand-over or a
seat saved writes no revision; the seat decides the page's links and its assistant's column). A
page showing no chat hears in the same event the person's latest chat of its panel, and takes it up.
Anything committed after the stream's mark was read is published after it listened, so it is heard.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Generator, Iterator
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib import auth
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count
from django.db.models.signals import post_save
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_GET

from accounts.http import AuthenticatedHttpRequest
from agent import events, notices, sse, streams
from agent.models import Message, Session
from agent.transcript import release_connection
from agent.views import event_stream
from blog import grants, rosters
from blog.access import READ, ROLE_SCOPES
from blog.models import Blog, ChatLink, Post, PostRevision, Seat

HEARTBEAT_SECONDS = 15.0
SIGNED_IN_CHECK_SECONDS = 60.0  # how often a page's stream looks whether its session still signs its member in
STREAM_KIND = "blog"


def channel_name(blog: Blog | int) -> str:
    return f"blog:{blog if isinstance(blog, int) else blog.pk}"


def announce(blog: Blog, effect: dict[str, Any]) -> None:
    """Tell every open page of the blog about `effect` once the change is committed (never raises)."""
    name = channel_name(blog)
    transaction.on_commit(lambda: events.publish(name, [effect]))


class Batch:
    """The effects of many changes made in one transaction that is all or nothing (an import's posts),
    told to the blog's open pages as one message once it is committed (`send`), not one message a change:
    an import of 2,000 posts is one message on the bus (one round trip to Redis) and one event a page.
    Pass its `announce` to the write path (`services.post_create(..., announce=batch.announce)`)."""

    def __init__(self, blog: Blog) -> None:
        self.blog = blog
        self.effects: list[dict[str, Any]] = []

    def announce(self, blog: Blog, effect: dict[str, Any]) -> None:
        if blog.pk != self.blog.pk:
            raise ValueError("A batch announces the changes of its own blog only.")
        self.effects.append(effect)

    def send(self) -> None:
        """Once the transaction around the changes commits, tell the blog's open pages about them all, in
        the order they were made (nothing, if there were none or it rolls back; never raises)."""
        if self.effects:
            name, effects = channel_name(self.blog), list(self.effects)
            transaction.on_commit(lambda: events.publish(name, effects))


def blog_updated(blog: Blog) -> None:
    """The blog was renamed, described anew or handed over: once committed, its open pages redraw their
    header (`blog_views.blog_head`: the title, the description, the links each member's seat opens) and
    their document's title (never raises)."""
    announce(blog, {"type": "blog.updated", "id": blog.pk})


def page_mark(blog: Blog | int) -> str:
    """What a page of the blog is drawn from, as far as the blog's changes go: how many revisions it has.
    Every change a page hears of (`announce`) writes one revision in its transaction (`blog.services`),
    and none is ever taken away but with the blog, so any change committed after this was read makes it
    different, whatever order concurrent transactions took their ids in (the last id would not do: on
    PostgreSQL a smaller id can commit after a larger one was read). One query, an index-only count."""
    return str(PostRevision.objects.filter(blog=blog).aggregate(n=Count("*"))["n"])


def head_mark(blog: Blog, seat: Seat | None) -> str:
    """What a page's header and its assistant's column are drawn from, as a short digest: the blog's title,
    description and owner (the owner's links), and its member's seat (their links, and whether they may
    summon the assistant: the panel or the note in its place), as `blog` and `seat` were read; "" for one
    who is no longer a member. A `blog.updated` change (`blog_updated`, `seat_changed`) writes no
    revision, so `page_mark` does not see it: this does, for a page whose stream opened after it (no query)."""
    if seat is None:
        return ""
    drawn = f"{blog.owner_id}\n{blog.title}\n{blog.description}\n{seat.role}\n{grants.may_summon(seat):d}"
    return hashlib.sha256(drawn.encode()).hexdigest()[:16]


def panel_channel(blog_id: int, user_id: int, post_id: int | None = None) -> str:
    """The channel of one person's chat panel on a blog page (`post_id` None) or beside a post's editor."""
    return f"panel:{blog_id}:{user_id}" + ("" if post_id is None else f":{post_id}")


def chat_opened(session: Session, blog: Blog, post: Post | None = None) -> None:
    """A chat of its person's panel was started (a first message, New chat, the API): once committed,
    their pages showing no chat there hear its id and take it up (never raises)."""
    name = panel_channel(blog.pk, session.user_id, None if post is None else post.pk)
    notice = {"chat": str(session.pk)}
    transaction.on_commit(lambda: events.publish(name, notice))


def first_message(sender: Any, session: Session, message: Message, **kwargs: Any) -> None:
    """`agent.signals.message_received` (connected in `BlogConfig.ready`): a chat's first message. Its
    person's pages of that panel hear it as they hear a chat started (`chat_opened`): one showing no chat
    takes it up, one showing another chat lists it now (a chat with nothing said is listed only where it
    is shown, `chat_panel.listed`). No query: the session's link was read with it (or made with it)."""
    if message.position != 0:
        return
    try:
        link = session.blog_link
    except ChatLink.DoesNotExist:
        return  # not a blog chat
    name = panel_channel(link.blog_id, session.user_id, link.post_id)
    notice = {"chat": str(session.pk)}
    transaction.on_commit(lambda: events.publish(name, notice))


def seat_changed(sender: Any, instance: Seat, created: bool = False, **kwargs: Any) -> None:
    """`post_save` and `post_delete` of a Seat (connected in `BlogConfig.ready`): once the change is
    committed, every open page of the blog checks its member's seat again, whoever changed it: the
    Members screen, the admin, an account or a blog deleted. A seat saved anew (a role, the assistant
    allowed or not) comes as `blog.updated`, so each page also redraws its header and post list for its
    member's seat now (a viewer's page loses New post and Edit at once); a seat deleted as a message
    with no effects (its member's page ends, and the others have nothing to redraw)."""
    if created:
        return  # (a new member has no page open yet)
    name = channel_name(instance.blog_id)
    saved = kwargs.get("signal") is post_save
    effects = [{"type": "blog.updated", "id": instance.blog_id}] if saved else []
    transaction.on_commit(lambda: events.publish(name, effects))


@require_GET
@login_required
def blog_events(request: AuthenticatedHttpRequest, slug: str) -> HttpResponseBase:
    """The blog's changes as they happen, for its members only (anyone else: 404, as for the blog)."""
    found = grants.member_blog(request.user, slug)
    if found is None or READ not in ROLE_SCOPES[found[1].role]:
        raise Http404("No such blog.")
    blog = found[0]
    if not from_event_source(request):
        return HttpResponse("This address is a page's live stream.", status=406, content_type="text/plain")
    shown, panel = own_chat(request, blog), None
    if shown is not None:
        chat, post_id = shown
        also = [notices.channel_name(chat), panel_channel(blog.pk, request.user.pk, post_id)]
    else:
        panel = panel_of(request, blog)
        also = [panel_channel(blog.pk, request.user.pk, panel[0])] if panel else []
    page = request.GET.get("page", "")
    key = page if page.isascii() and page.isalnum() and len(page) <= 40 else None
    mark = Mark(blog, request.user.pk, panel)
    return event_stream(_changes(blog, request.user.pk, request.session.session_key, *also, key=key, mark=mark))


def own_chat(request: AuthenticatedHttpRequest, blog: Blog) -> tuple[str, int | None] | None:
    """The chat the page shows (`?chat=<id>`), when it is the request user's own chat on this blog,
    with the post whose panel it is in (None: the blog page's): its notices (`agent.notices`) and its
    panel's (`chat_opened`) join the page's stream. Anyone else's, or none: the blog's alone."""
    chat = request.GET.get("chat", "")
    try:
        chat = str(uuid.UUID(chat))
    except ValueError:
        return None
    mine = Session.objects.filter(pk=chat, user=request.user.pk, blog_link__blog=blog).values("blog_link__post")
    row = mine.first()
    return None if row is None else (chat, row["blog_link__post"])


def panel_of(request: AuthenticatedHttpRequest, blog: Blog) -> tuple[int | None] | None:
    """The requester's own panel, for a page showing none of their chats: `(None,)` for the blog page's
    (`?panel=blog`), `(post id,)` beside the editor of a post of this blog (`?panel=<post id>`); else None."""
    panel = request.GET.get("panel", "")
    if panel == "blog":
        return (None,)
    if panel.isascii() and panel.isdigit() and len(panel) < 12 and Post.objects.filter(blog=blog, pk=panel).exists():
        return (int(panel),)
    return None


class Mark:
    """What the page's stream says first, once it listens (`page_mark`): the blog's mark now, its header's
    (`head_mark`, the blog read again with its member's seat) and, for a page showing no chat (`panel`), the id of the person's
    latest chat of that panel ("" for none)."""

    def __init__(self, blog: Blog, user_id: int, panel: tuple[int | None] | None) -> None:
        self.blog, self.user_id, self.panel = blog, user_id, panel

    def read(self) -> dict[str, str]:
        from blog.chat_panel import blog_sessions  # (it imports this module)

        mark = {"posts": page_mark(self.blog)}
        # (renamed, handed over, or the member's seat changed since the page was drawn? one query for both)
        seat = Seat.objects.filter(blog=self.blog.pk, user=self.user_id).select_related("blog").first()
        mark["head"] = "" if seat is None else head_mark(seat.blog, seat)
        if self.panel is not None:  # the chat `?latest=1` would take up (chat_panel.panel_chat)
            latest = blog_sessions(self.user_id, self.blog, self.panel[0])
            mark["chat"] = str(latest.values_list("pk", flat=True).first() or "")
        return mark


def from_event_source(request: HttpRequest) -> bool:
    """Whether a page's EventSource asks, which always accepts `text/event-stream`. Anything else is
    refused before a stream opens: a post's body may show images from the site's own addresses, and
    an `<img>` of this one would hold a stream of the reader's open, taking the place of their pages'
    (`AGENT_MAX_STREAMS_PER_USER`) and a connection of the few a browser allows the site.
    (`request.accepts` would not do: an image accepts `*/*`.)"""
    return "text/event-stream" in request.headers.get("Accept", "")


def _changes(
    blog: Blog, user_id: int, session_key: str | None, *also: str, key: str | None = None, mark: Mark | None = None
) -> Iterator[bytes]:
    """The page's stream, one of the user's live page streams (`agent.streams`, kind "blog"): past
    AGENT_MAX_STREAMS_PER_USER open pages the oldest ends with `superseded`, which tells that page
    to stop listening (not to reconnect and close another) and to say so. A page whose member may no
    longer read the blog, or whose session no longer signs them in, ends with the same event, saying
    that instead. With `also` (the channels of the user's own chat and of their own panel), their
    notices come too, as `chat` events. With `key` (the page's own, `?page=`), it replaces that page's
    earlier stream in this worker, which ends at once and frees its place (`streams.opened`). With
    `mark`, its first event is the `mark` read once listening (after `subscribe`: a change committed
    after the read is published after it, so heard)."""
    subscription = events.subscribe(channel_name(blog), *also)
    try:
        with (
            streams.opened(user_id, kind=STREAM_KIND, on_supersede=subscription.end, key=key) as ticket,
            rosters.listening(blog.pk) as roster,
        ):
            yield sse.HEARTBEAT_BYTES  # the headers and a first byte now: the page knows it listens
            if mark is not None:
                yield sse.encode("mark", json.dumps(mark.read(), separators=(",", ":")))
            ended = yield from _relay(subscription, roster, user_id, session_key)
        if ended == "no_access":
            yield sse.encode("superseded", render_to_string("blog/_live_closed.html", {"blog": blog}))
        elif ended == "signed_out":
            yield sse.encode("superseded", render_to_string("blog/_live_signed_out.html", {"blog": blog}))
        elif ticket.superseded:
            yield sse.encode("superseded", render_to_string("blog/_live_paused.html", {"blog": blog}))
    finally:
        events.unsubscribe(subscription)


def _relay(
    subscription: events.Subscription, roster: rosters.Roster, user_id: int, session_key: str | None
) -> Generator[bytes, None, str]:
    """The blog's changes while the member may read the blog and their session signs them in.
    Returns why it ended: "no_access", "signed_out", or "ended" (superseded, the bus lost the
    channel, or the process is stopping)."""
    looked = time.monotonic()
    while True:
        release_connection()
        messages = subscription.wait(HEARTBEAT_SECONDS)
        if time.monotonic() - looked >= SIGNED_IN_CHECK_SECONDS:
            looked = time.monotonic()
            if not signed_in(session_key, user_id):
                return "signed_out"
        if messages:
            # Read after the messages arrived: nothing published after the seat went is relayed.
            if not roster.reads(user_id, after=messages[-1]):
                return "no_access"
            # The chat's or panel's notices are dicts (`agent.notices`, `chat_opened`), the blog's lists of effects.
            effects = [effect for message in messages if isinstance(message, list) for effect in message]
            if effects:  # (a seat's change brings none: only the check above)
                yield sse.encode("effects", json.dumps(effects, separators=(",", ":")))
            for notice in (message for message in messages if isinstance(message, dict)):
                yield sse.encode("chat", json.dumps(notice, separators=(",", ":")))
            continue
        if subscription.closed:
            return "ended"  # (the page connects again, unless superseded)
        if not rosters.may_read(roster.blog_id, user_id):
            return "no_access"
        yield sse.HEARTBEAT_BYTES


def signed_in(session_key: str | None, user_id: int) -> bool:
    """Whether the session a page was opened in still signs its member in: not signed out, nor ended
    by a password change elsewhere (the check `auth.get_user` makes of a request's session, on the
    session as it is stored now, and only read: that would flush or re-key the session it doubts)."""
    if session_key is None:
        return False
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    if str(store.get(auth.SESSION_KEY)) != str(user_id):
        return False  # (signed out: the session is gone)
    user = auth.get_user_model().objects.filter(pk=user_id, is_active=True).first()
    held = store.get(auth.HASH_SESSION_KEY) or ""
    return user is not None and any(
        constant_time_compare(held, known)
        for known in (user.get_session_auth_hash(), *user.get_session_auth_fallback_hash())
    )
