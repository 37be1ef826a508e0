"""Who is on a blog and what they let clients do there: the writes of Seats and Consents.

The Members screen, the Clients screen, the connectors' consent page and grant form, and a blog's
making (`blog.blogs`, the admin) call these;
the checks (who may ask, which role or scopes may be given) stay with their callers, who explain a
refusal on their own page. A module of its own rather than `blog.services`, which is the posts'
write path (revisions, covers, each change announced to the blog's pages): none of that applies
here but a new owner's announcement (`owner_changed`), and its screens are `blog.team_views`.

What else a seat's change brings happens in Seat signals, so the admin and cascades get it too:
a changed or removed seat wakes the blog's open pages (`live.seat_changed`), a removed one drops
the member's grants there (`grants.drop_grants_with_seat`) and their connected clients' tokens
(`connectors.clients.seat_removed`). A revoked grant is announced (`signals.consent_revoked`) so a
connected client's tokens go with it, from the Clients screen and the admin alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from blog import live, signals
from blog.models import Blog, Consent, Seat

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def seat_add(*, blog: Blog, user: User, role: str) -> Seat:
    """Make `user` a member of `blog` with `role`; they may use the assistant once the owner allows it.

    Raises IntegrityError when they are a member already (added by another request since the caller
    looked: the unique (user, blog) seat decides); the caller's transaction goes on (a savepoint)."""
    with transaction.atomic():
        return Seat.objects.create(blog=blog, user=user, role=role, may_use_assistant=False)


def owner_seat(*, blog: Blog) -> Seat:
    """The blog's owner's seat, with the assistant: made, or raised to owner's (a member made the owner).
    The one way an owner's seat is made: a blog started on the site (`blogs.blog_create`), one made in the
    admin (`BlogAdmin`), and one handed over (`owner_changed`). Access goes by seats, so an owner without
    one could not open their own blog. A seat raised keeps whether it may use the assistant."""
    seat, made = Seat.objects.get_or_create(
        blog=blog, user=blog.owner, defaults={"role": Seat.OWNER, "may_use_assistant": True}
    )
    if not made and seat.role != Seat.OWNER:
        seat = seat_update(seat=seat, role=Seat.OWNER, may_use_assistant=seat.may_use_assistant)
    return seat


def owner_changed(*, blog: Blog, former_owner_id: int | None) -> None:
    """The seats once `blog.owner` changed hands (saved): the new owner's made or raised to owner's
    (`owner_seat`), the former owner's, if still an owner's, made an editor's that keeps whether it may use
    the assistant. So a blog has one owner's seat after a hand-over on its Settings page
    (`blogs.blog_hand_over`) and after the admin's change of its owner alike. Each seat changed wakes the
    blog's open pages (`live.seat_changed`), and the new owner is announced to them (`live.blog_updated`,
    also when their seat was made, which wakes no page): each redraws its header, the owner's links
    (Members, Export, Import, Settings) now on the new owner's pages only."""
    owner_seat(blog=blog)
    if former_owner_id is None or former_owner_id == blog.owner_id:
        return
    former = Seat.objects.filter(blog=blog, user_id=former_owner_id, role=Seat.OWNER).first()
    if former is not None:
        seat_update(seat=former, role=Seat.EDITOR, may_use_assistant=former.may_use_assistant)
    live.blog_updated(blog)  # (open pages redraw their header: the owner's links follow the owner)


def seat_update(*, seat: Seat, role: str, may_use_assistant: bool) -> Seat:
    """Give the member `role`, and allow or refuse them the assistant (a viewer is always refused)."""
    seat.role = role
    seat.may_use_assistant = may_use_assistant and role != Seat.VIEWER
    seat.save()
    return seat


def seat_remove(*, seat: Seat) -> None:
    """Remove the member, and with them their grants on the blog and their clients' tokens there."""
    with transaction.atomic():
        seat.delete()


def consent_grant(
    *, user: User, blog: Blog, client: str, scopes: Iterable[str], client_name: str | None = None
) -> Consent:
    """Let `client` (blank: the built-in assistant) do `scopes` for `user` on `blog` from now on: their
    Consent for it made, or changed (and no longer revoked). `client_name`, what a connected client
    was called when the person approved it, is kept as it was when not given."""
    changes: dict[str, object] = {"scopes": sorted(scopes), "revoked_at": None}
    if client_name is not None:
        changes["client_name"] = client_name
    consent, _created = Consent.objects.update_or_create(user=user, blog=blog, client=client, defaults=changes)
    return consent


def consent_revoke(*, consent: Consent) -> None:
    """The client may do nothing more for its person on the blog (a revoked Consent stays as it was)."""
    if consent.revoked_at is not None:
        return
    with transaction.atomic():
        consent.revoked_at, consent.scopes = timezone.now(), []
        # Only what revoking changes: a use stamped since the caller read it (`grants.note_use`) stays.
        consent.save(update_fields=["revoked_at", "scopes", "updated_at"])
        signals.consent_revoked.send(sender=Consent, consent=consent)
