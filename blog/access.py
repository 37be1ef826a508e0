"""Roles to scopes, and the Actor whose scopes bound every operation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.prepared import Prepared, Slot
from blog.models import Blog, Consent, Seat

READ, WRITE, PUBLISH, DELETE = "posts:read", "posts:write", "posts:publish", "posts:delete"
ALL_SCOPES = (READ, WRITE, PUBLISH, DELETE)

ROLE_SCOPES: dict[str, frozenset[str]] = {
    Seat.OWNER: frozenset(ALL_SCOPES),
    Seat.EDITOR: frozenset(ALL_SCOPES),
    Seat.AUTHOR: frozenset({READ, WRITE}),
    Seat.VIEWER: frozenset({READ}),
}

SCOPE_LABELS = {
    READ: "Read your posts and drafts",
    WRITE: "Create and edit drafts",
    PUBLISH: "Publish and unpublish posts",
    DELETE: "Delete posts",
}


@dataclass(frozen=True)
class Actor:
    """Who is acting and with which scopes. The assistant carries its Consent and chat session."""

    user: Any
    scopes: frozenset[str]
    consent: Consent | None = None
    chat_session: Any = None
    via_assistant: bool = field(default=False)


# Read on every request and every catalogue pass (agent/prepared.py: compiled once, not per read).
_SEAT = Prepared(lambda: Seat.objects.filter(user=Slot("user"), blog=Slot("blog"))[:1])
_ASSISTANT_CONSENT = Prepared(
    lambda: Consent.objects.filter(user=Slot("user"), blog=Slot("blog"), client="", revoked_at__isnull=True)[:1]
)


def seat_of(user: Any, blog: Blog) -> Seat | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return _SEAT.first(user=user, blog=blog)


def person(user: Any, blog: Blog) -> Actor:
    seat = seat_of(user, blog)
    return Actor(user, ROLE_SCOPES[seat.role] if seat else frozenset())


def assistant_consent(user: Any, blog: Blog) -> Consent | None:
    return _ASSISTANT_CONSENT.first(user=user, blog=blog)


def assistant(user: Any, blog: Blog, chat_session: Any = None) -> Actor:
    """The assistant's Actor, recomputed now: Consent ∩ live seat, and nothing unless the owner allows it."""
    seat = seat_of(user, blog)
    consent = assistant_consent(user, blog)
    if seat is None or not may_summon(seat) or consent is None:
        return Actor(user, frozenset(), consent, chat_session, via_assistant=True)
    scopes = frozenset(consent.scopes) & ROLE_SCOPES[seat.role]
    return Actor(user, scopes, consent, chat_session, via_assistant=True)


def may_summon(seat: Seat | None) -> bool:
    """Owners always; other members when the owner allows it; viewers never."""
    if seat is None or seat.role == Seat.VIEWER:
        return False
    return seat.role == Seat.OWNER or seat.may_use_assistant
