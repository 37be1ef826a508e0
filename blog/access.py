"""Roles to scopes, and the Actor whose scopes bound every operation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


def seat_of(user: Any, blog: Blog) -> Seat | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Seat.objects.filter(user=user, blog=blog).first()


def person(user: Any, blog: Blog) -> Actor:
    seat = seat_of(user, blog)
    return Actor(user, ROLE_SCOPES[seat.role] if seat else frozenset())


def assistant_consent(user: Any, blog: Blog) -> Consent | None:
    return Consent.objects.filter(user=user, blog=blog, client="", revoked_at__isnull=True).first()


def seat_and_grant(user: Any, blog: Blog) -> tuple[Seat | None, Consent | None]:
    if not getattr(user, "is_authenticated", False):
        return None, None
    return seat_of(user, blog), assistant_consent(user, blog)


def _seat_and_grant(user: Any, blog: Blog) -> tuple[Seat | None, Consent | None, frozenset[str]]:
    seat, consent = seat_and_grant(user, blog)
    return seat, consent, frozenset(consent.scopes) if consent else frozenset()


def assistant(user: Any, blog: Blog, chat_session: Any = None) -> Actor:
    """The assistant's Actor, recomputed now: Consent ∩ live seat, and nothing unless the owner allows it."""
    seat, consent, granted = _seat_and_grant(user, blog)
    if seat is None or not may_summon(seat) or consent is None:
        return Actor(user, frozenset(), consent, chat_session, via_assistant=True)
    return Actor(user, granted & ROLE_SCOPES[seat.role], consent, chat_session, via_assistant=True)


def may_summon(seat: Seat | None) -> bool:
    """Owners always; other members when the owner allows it; viewers never."""
    if seat is None or seat.role == Seat.VIEWER:
        return False
    return seat.role == Seat.OWNER or seat.may_use_assistant
