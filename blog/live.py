"""Every open page of a blog hears what changed in it: a per-blog channel on the engine's event bus.

Each change to a post (`blog.services`, the one write path: a person's form, another tab, another
member, the assistant) announces its effect on the channel `blog:<id>` once its transaction has
committed. Each blog page listens on `/blogs/<slug>/events/`, an SSE stream of `effects` events
(a JSON list of `{"type", "id"}`, the shape of the chat stream's effects), and refreshes its post
list on each. With `AGENT_EVENTS_URL` the channel reaches pages served by every worker and host;
without it, those of the worker that made the change. A user keeps at most AGENT_MAX_STREAMS_PER_USER
such pages listening in a worker: opening one more stops the oldest, which says so.

Only members who may read the blog hear it, checked after each message arrives and before it is
relayed (`blog.rosters`: one read per message for all the process's pages of the blog). A seat changed
or removed sends the channel a message with no effects (`seat_changed`), so the page of a member who
lost the blog stops at once, not at the blog's next change; that page's stream ends with a notice
saying why, and the page stops listening.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from agent import events, sse, streams
from agent.transcript import release_connection
from agent.views import event_stream
from blog import grants, rosters
from blog.access import READ, ROLE_SCOPES
from blog.models import Blog, Seat

HEARTBEAT_SECONDS = 15.0
STREAM_KIND = "blog"


def channel_name(blog: Blog | int) -> str:
    return f"blog:{blog if isinstance(blog, int) else blog.pk}"


def announce(blog: Blog, effect: dict[str, Any]) -> None:
    """Tell every open page of the blog about `effect` once the change is committed (never raises)."""
    name = channel_name(blog)
    transaction.on_commit(lambda: events.publish(name, [effect]))


def seat_changed(sender: Any, instance: Seat, created: bool = False, **kwargs: Any) -> None:
    """`post_save` and `post_delete` of a Seat (connected in `BlogConfig.ready`): once the change is
    committed, every open page of the blog checks its member's seat again (a message with no effects),
    whoever changed it: the Members screen, the admin, an account or a blog deleted."""
    if not created:
        name = channel_name(instance.blog_id)
        transaction.on_commit(lambda: events.publish(name, []))


@require_GET
@login_required
def blog_events(request: HttpRequest, slug: str) -> HttpResponse:
    """The blog's changes as they happen, for its members only (anyone else: 404, as for the blog)."""
    blog = Blog.objects.filter(slug=slug).first()
    seat = grants.seat_of(request.user, blog) if blog else None
    if seat is None or READ not in ROLE_SCOPES[seat.role]:
        raise Http404("No such blog.")
    return event_stream(_changes(blog, request.user.pk))


def _changes(blog: Blog, user_id: int) -> Iterator[bytes]:
    """The page's stream, one of the user's live page streams (`agent.streams`, kind "blog"): past
    AGENT_MAX_STREAMS_PER_USER open pages the oldest ends with `superseded`, which tells that page
    to stop listening (not to reconnect and close another) and to say so. A page whose member may no
    longer read the blog ends with the same event, saying that instead."""
    subscription = events.subscribe(channel_name(blog))
    try:
        with (
            streams.opened(user_id, kind=STREAM_KIND, on_supersede=subscription.end) as ticket,
            rosters.listening(blog.pk) as roster,
        ):
            yield sse.HEARTBEAT_BYTES  # the headers and a first byte now: the page knows it listens
            reads = yield from _relay(subscription, roster, user_id)
        if not reads:
            yield sse.encode("superseded", render_to_string("blog/_live_closed.html", {"blog": blog}))
        elif ticket.superseded:
            yield sse.encode("superseded", render_to_string("blog/_live_paused.html", {"blog": blog}))
    finally:
        events.unsubscribe(subscription)


def _relay(subscription: events.Subscription, roster: rosters.Roster, user_id: int) -> Generator[bytes, None, bool]:
    """The blog's changes while the member may read the blog. Returns False once they may not, True
    when the subscription ended (superseded, the bus lost the channel, or the process is stopping)."""
    while True:
        release_connection()
        messages = subscription.wait(HEARTBEAT_SECONDS)
        if messages:
            # Read after the messages arrived: nothing published after the seat went is relayed.
            if not roster.reads(user_id, after=messages[-1]):
                return False
            effects = [effect for message in messages for effect in message]
            if effects:  # (a seat's change brings none: only the check above)
                yield sse.encode("effects", json.dumps(effects, separators=(",", ":")))
            continue
        if subscription.closed:
            return True  # (the page connects again, unless superseded)
        if not rosters.may_read(roster.blog_id, user_id):
            return False
        yield sse.HEARTBEAT_BYTES
