"""The grant check: who may do what on a blog, a person or the assistant acting for them.

A person acts with the scopes of their seat (role). The assistant never acts as the person: its
scopes are the person's Consent for the assistant on that blog intersected with the scopes of their
live seat, and nothing at all unless they may summon the assistant there (owners always, other
members when the owner allows it, viewers never). The assistant's scopes are read afresh for every
tool call, so narrowing or revoking a grant, or a seat, bites on the next call.

Connected clients (MCP, `connectors/`) are capped the same way by their own Consent, whose `client`
is their OAuth client id.

`allows(actor, operation)` is the one yes-or-no: the operation catalogue asks it before running an
operation, and the assistant's tools ask it before offering or running one.

A grant lives only as long as the seat it was given from: removing a member (on the members screen,
in the admin, or with the blog) deletes their Consents on that blog, so adding them again starts
with nothing granted (`drop_grants_with_seat`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from blog.access import PUBLISH, ROLE_SCOPES
from blog.models import Blog, Consent, Post, Seat

if TYPE_CHECKING:
    from blog.operations import Operation

#: The Consent `client` of the built-in assistant (other clients name themselves).
ASSISTANT = ""

#: How finely a grant's "last used" is kept: the Clients screen shows it to the minute.
LAST_USED_GRAIN = timedelta(minutes=1)


@dataclass(frozen=True)
class Actor:
    """Who is acting and with which scopes. The assistant carries its Consent and chat session."""

    user: Any
    scopes: frozenset[str]
    consent: Consent | None = None
    chat_session: Any = None
    via_assistant: bool = False


def allows(actor: Actor, operation: Operation) -> bool:
    """Whether `actor` may run `operation`: the scope it needs is one of the actor's."""
    return operation.scope in actor.scopes


def may_change(actor: Actor, post: Post) -> bool:
    """Whether `actor` may change `post`'s title or body: a published post is live content, so
    changing it is a publish-level act (it needs the publish scope as well as the write scope)."""
    return post.status != Post.PUBLISHED or PUBLISH in actor.scopes


def seat_of(user: Any, blog: Blog) -> Seat | None:
    """The user's seat on the blog; None for anyone who is not a member (or not signed in)."""
    if not getattr(user, "is_authenticated", False):
        return None
    try:
        return Seat.objects.get(user=user, blog=blog)
    except Seat.DoesNotExist:
        return None


def member_blog(user: Any, slug: str) -> tuple[Blog, Seat] | None:
    """The blog named `slug` with the user's seat on it; None when there is no such blog or they are
    not a member (their views answer both alike: 404, so a blog that is not theirs does not exist)."""
    blog = Blog.objects.filter(slug=slug).first()
    seat = seat_of(user, blog) if blog else None
    return None if blog is None or seat is None else (blog, seat)


def may_summon(seat: Seat | None) -> bool:
    """Owners always; other members when the owner allows it; viewers never."""
    if seat is None or seat.role == Seat.VIEWER:
        return False
    return seat.role == Seat.OWNER or seat.may_use_assistant


def assistant_grantable(seat: Seat | None) -> frozenset[str]:
    """What a member may grant the assistant: their seat's scopes; nothing for a viewer (who never
    summons it) or a non-member, since such a grant could never take effect."""
    if seat is None or seat.role == Seat.VIEWER:
        return frozenset()
    return ROLE_SCOPES[seat.role]


def live_consent(user: Any, blog: Blog, client: str) -> Consent | None:
    """The user's live (not revoked) Consent for `client` (ASSISTANT: the built-in assistant) on the
    blog, if any."""
    if not getattr(user, "is_authenticated", False):
        return None
    try:
        return Consent.objects.get(user=user, blog=blog, client=client, revoked_at__isnull=True)
    except Consent.DoesNotExist:
        return None


def assistant_consent(user: Any, blog: Blog) -> Consent | None:
    """The user's live Consent for the assistant on the blog, if any."""
    return live_consent(user, blog, ASSISTANT)


def assistant_scopes(seat: Seat | None, consent: Consent | None) -> frozenset[str]:
    """The assistant's effective scopes: the Consent's scopes within the seat's, if it may be summoned."""
    if seat is None or consent is None or not may_summon(seat):
        return frozenset()
    return frozenset(consent.scopes) & ROLE_SCOPES[seat.role]


def assistant(user: Any, blog: Blog, chat_session: Any = None) -> Actor:
    """The assistant's Actor for this user on this blog, read now from the seat and the Consent."""
    seat, consent = seat_of(user, blog), assistant_consent(user, blog)
    return Actor(user, assistant_scopes(seat, consent), consent, chat_session, via_assistant=True)


def client_consent(user: Any, blog: Blog, client: str) -> Consent | None:
    """The user's live Consent for a connected client (an OAuth client id) on the blog, if any."""
    return live_consent(user, blog, client) if client else None


def client_scopes(seat: Seat | None, consent: Consent | None) -> frozenset[str]:
    """A connected client's effective scopes: its Consent's scopes within the seat's.

    Unlike the built-in assistant a client is not gated by "may use the assistant": the person
    brought it themselves, so a viewer may connect a read-only one.
    """
    if seat is None or consent is None:
        return frozenset()
    return frozenset(consent.scopes) & ROLE_SCOPES[seat.role]


def connected_client(user: Any, blog: Blog, client: str) -> Actor:
    """A connected client's Actor for this user on this blog, read now from the seat and its Consent."""
    seat, consent = seat_of(user, blog), client_consent(user, blog, client)
    return Actor(user, client_scopes(seat, consent), consent, via_assistant=True)


def person(user: Any, blog: Blog) -> Actor:
    """The user acting for themselves, with the scopes of their seat (none without one)."""
    seat = seat_of(user, blog)
    return Actor(user, ROLE_SCOPES[seat.role] if seat else frozenset())


def note_use(actor: Actor) -> None:
    """Stamp the actor's Consent as used now (shown to its owner); at most one write a minute."""
    consent, now = actor.consent, timezone.now()
    if consent is None or (consent.last_used_at is not None and now - consent.last_used_at < LAST_USED_GRAIN):
        return
    Consent.objects.filter(pk=consent.pk).update(last_used_at=now)
    consent.last_used_at = now


def drop_grants_with_seat(sender: Any, instance: Seat, **kwargs: Any) -> None:
    """`post_delete` of a Seat (connected in `BlogConfig.ready`): the member's Consents on that blog
    go with it, whoever removed the seat, in the same transaction as the delete."""
    Consent.objects.filter(user_id=instance.user_id, blog_id=instance.blog_id).delete()
