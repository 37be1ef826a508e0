"""Who may still read a blog, for the live streams of its open pages (`blog/live.py`).

A page's stream relays the blog's changes only while its member may read the blog: a member removed,
or whose account was turned off, hears nothing published after that. The check is made after each
message arrives and before it is relayed, but not once per page: the pages of a blog open in this
process share a `Roster`, read again once per message (by whichever page gets to it first; the others
wait for that read and use it), so a change heard by a hundred open pages costs one query, not a
hundred. A message is the same object for every listener of the process (`agent.events` decodes or
delivers it once), which is how the pages know they ask about the same one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.models import QuerySet

from blog.access import READ, ROLE_SCOPES
from blog.models import Seat


def reading_seats(blog_id: int) -> QuerySet[Seat]:
    """The seats of the blog whose member may read it now: a role that reads, an account still active
    (a turned-off account is signed out of every request too)."""
    roles = [role for role, scopes in ROLE_SCOPES.items() if READ in scopes]
    return Seat.objects.filter(blog_id=blog_id, role__in=roles, user__is_active=True)


def may_read(blog_id: int, user_id: int) -> bool:
    """One member's check, for a page whose channel has been silent a while (its heartbeat)."""
    return reading_seats(blog_id).filter(user_id=user_id).exists()


class Roster:
    """The members who may read one blog, as last read for this process's open pages of it."""

    def __init__(self, blog_id: int) -> None:
        self.blog_id = blog_id
        self.pages = 0  # open streams using it; it goes with the last
        self.lock = threading.Lock()  # gevent's after monkey patching: the other pages wait cooperatively
        self.read_after: Any = None  # the message it was read after (kept, so no other object takes its id)
        self.readers: frozenset[int] = frozenset()

    def reads(self, user_id: int, *, after: Any) -> bool:
        """Whether the user may read the blog, as read after the message `after` arrived (the last of
        the batch about to be relayed): read now unless another page already did after that one."""
        with self.lock:
            if self.read_after is not after:
                self.readers = frozenset(reading_seats(self.blog_id).values_list("user_id", flat=True))
                self.read_after = after
            return user_id in self.readers


_rosters: dict[int, Roster] = {}
_lock = threading.Lock()


@contextmanager
def listening(blog_id: int) -> Iterator[Roster]:
    """The blog's roster, shared with the process's other open pages of it for the body of the `with`."""
    with _lock:
        roster = _rosters.get(blog_id)
        if roster is None:
            roster = _rosters[blog_id] = Roster(blog_id)
        roster.pages += 1
    try:
        yield roster
    finally:
        with _lock:
            roster.pages -= 1
            if not roster.pages:
                del _rosters[blog_id]
