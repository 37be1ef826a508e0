"""Every open page of a blog hears what changed in it: a per-blog channel on the engine's event bus.

Each change to a post (`blog.services`, the one write path: a person's form, another tab, another
member, the assistant) announces its effect on the channel `blog:<id>` once its transaction has
committed. Each blog page listens on `/blogs/<slug>/events/`, an SSE stream of `effects` events
(a JSON list of `{"type", "id"}`, the shape of the chat stream's effects), and refreshes its post
list on each. With `AGENT_EVENTS_URL` the channel reaches pages served by every worker and host;
without it, those of the worker that made the change. A user keeps at most AGENT_MAX_STREAMS_PER_USER
such pages listening in a worker: opening one more stops the oldest, which says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from agent import events, sse, streams
from agent.transcript import release_connection
from agent.views import event_stream
from blog import grants
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
    to stop listening (not to reconnect and close another) and to say so."""
    subscription = events.subscribe(channel_name(blog))
    try:
        with streams.opened(user_id, kind=STREAM_KIND, on_supersede=subscription.end) as ticket:
            yield sse.HEARTBEAT_BYTES  # the headers and a first byte now: the page knows it listens
            while True:
                release_connection()
                messages = subscription.wait(HEARTBEAT_SECONDS)
                if messages:
                    effects = [effect for message in messages for effect in message]
                    yield sse.encode("effects", json.dumps(effects, separators=(",", ":")))
                    continue
                if subscription.closed:
                    break  # superseded, or the bus lost the channel (then the page connects again)
                if not Seat.objects.filter(blog=blog, user=user_id).exists():
                    return  # no longer a member: nothing more for this page
                yield sse.HEARTBEAT_BYTES
        if ticket.superseded:
            yield sse.encode("superseded", render_to_string("blog/_live_paused.html", {"blog": blog}))
    finally:
        events.unsubscribe(subscription)
