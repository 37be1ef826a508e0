"""The scopes of a blog's operations and what each role holds; `blog/grants.py` decides with them."""

from __future__ import annotations

from blog.models import Seat

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

#: One plain word per scope, for sentences a person reads ("can read, draft, publish, delete");
#: the scope names themselves stay in the API, the admin and the OAuth screens.
SCOPE_WORDS = {READ: "read", WRITE: "draft", PUBLISH: "publish", DELETE: "delete"}


def plain_scopes(scopes) -> str:
    """Scopes as the words a person reads, in a fixed order: "read, draft, publish" ("" for none)."""
    return ", ".join(SCOPE_WORDS[scope] for scope in ALL_SCOPES if scope in scopes)
