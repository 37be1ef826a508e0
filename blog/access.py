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
