"""Roles to scopes, and the Actor whose scopes bound every operation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.utils.functional import SimpleLazyObject

from agent.prepared import Columns, Prepared, Slot, Written, columns, convert
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


def _seat_and_grant_sql(alias: str) -> tuple[str, tuple[Columns, Columns, int, Any]]:
    """The user's seat and the assistant's live grant on a blog, in one read: one row whatever is
    there (each LEFT JOINed to a one-row table; each is unique for a user and blog). Params: the
    user's id and the blog's, twice."""
    qn = connections[alias].ops.quote_name
    seat, consent = columns(Seat, alias), columns(Consent, alias)
    st, ct = qn(Seat._meta.db_table), qn(Consent._meta.db_table)
    user_id, blog_id = qn("user_id"), qn("blog_id")
    sql_text = (
        f"SELECT {seat.sql}, {consent.sql} FROM (SELECT 1 AS {qn('one')}) {qn('one')}"
        f" LEFT OUTER JOIN {st} ON ({st}.{user_id} = %s AND {st}.{blog_id} = %s)"
        f" LEFT OUTER JOIN {ct} ON ({ct}.{user_id} = %s AND {ct}.{blog_id} = %s"
        f" AND {ct}.{qn('client')} = '' AND {ct}.{qn('revoked_at')} IS NULL)"
    )
    at = consent.attnames.index("scopes")  # (the grant's scopes, converted alone: `_seat_and_grant`)
    return sql_text, (seat, consent, at, [c for c in consent.converters if c[0] == at])


# Read at every catalogue pass and tool run (agent/prepared.py: written once, not per read).
_SEAT_AND_GRANT = Written(_seat_and_grant_sql)


def seat_and_grant(user: Any, blog: Blog) -> tuple[Seat | None, Consent | None]:
    """`seat_of` and `assistant_consent` together, in one query (the Consent is made from its row
    when first used: see `_seat_and_grant`)."""
    seat, consent, _ = _seat_and_grant(user, blog)
    return seat, consent


def _seat_and_grant(user: Any, blog: Blog) -> tuple[Seat | None, Consent | None, frozenset[str]]:
    """The seat, the grant, and the grant's scopes. Every catalogue pass asks, and most only need
    the scopes: the Consent instance (four dates to convert) is made from its row when something
    first uses it (a tool run stamping its use, a revision naming it), as Django's lazy `request.user`."""
    if not getattr(user, "is_authenticated", False):
        return None, None, frozenset()
    rows, (seat_columns, consent_columns, at, scopes_converters) = _SEAT_AND_GRANT.rows(
        user.pk, blog.pk, user.pk, blog.pk
    )
    row = rows[0]
    connection, alias = _SEAT_AND_GRANT.connection(), _SEAT_AND_GRANT.alias
    width = len(seat_columns.attnames)
    seat_values, consent_values = row[:width], row[width:]
    seat = None
    if seat_values[0] is not None:
        seat = Seat.from_db(alias, seat_columns.attnames, convert(seat_values, seat_columns.converters, connection))
    if consent_values[0] is None:
        return seat, None, frozenset()
    scopes = convert(consent_values, scopes_converters, connection)[at]

    def made() -> Consent:
        values = convert(consent_values, consent_columns.converters, connection)
        return Consent.from_db(alias, consent_columns.attnames, values)

    return seat, SimpleLazyObject(made), frozenset(scopes)


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
