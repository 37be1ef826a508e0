"""The scopes of a blog's operations and what each role holds; `blog/grants.py` decides with them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from blog.models import ALL_SCOPES, DELETE, PUBLISH, READ, WRITE, Seat

__all__ = ["ALL_SCOPES", "DELETE", "PUBLISH", "READ", "WRITE"]  # (defined beside Consent, which checks them)

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

#: One plain word per scope, for sentences a person reads ("can read, draft, publish, delete");
#: the scope names themselves stay in the API, the admin and the OAuth screens.
SCOPE_WORDS = {READ: "read", WRITE: "draft", PUBLISH: "publish", DELETE: "delete"}


def plain_scopes(scopes) -> str:
    """Scopes as the words a person reads, in a fixed order: "read, draft, publish" ("" for none)."""
    return ", ".join(SCOPE_WORDS[scope] for scope in ALL_SCOPES if scope in scopes)


def holders(scope: str) -> str:
    """The roles whose seat holds `scope`, as a person reads them: "owners and editors"."""
    roles = [f"{role}s" for role, _label in Seat.ROLES if scope in ROLE_SCOPES[role]]
    return roles[0] if len(roles) == 1 else f"{', '.join(roles[:-1])} and {roles[-1]}"


def scope_choices(allowed: Iterable[str], granted: Iterable[str]) -> list[dict[str, Any]]:
    """Every scope as a grant form offers it: checked when granted, open only when allowed, and
    for one that is not, why (who may grant it), so a greyed-out box never goes unexplained. One
    granted but no longer allowed (the person's role came down since) is unused, and a Save drops
    it (a disabled box is not sent): said too."""
    allowed, granted = frozenset(allowed), frozenset(granted)
    return [
        {
            "name": scope,
            "label": SCOPE_LABELS[scope],
            "granted": scope in granted,
            "allowed": scope in allowed,
            "why_not": ""
            if scope in allowed
            else f"only {holders(scope)} can"
            + (": allowed before, unused now, and dropped when you save" if scope in granted else ""),
        }
        for scope in ALL_SCOPES
    ]
