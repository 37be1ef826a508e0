"""Blogs themselves: started by a person on the site, renamed, handed over and deleted by their owner.

`blog_create` is how the New blog page makes a blog (the admin makes one with its own form, then gives
its owner the same seat: `team.owner_seat`). `blog_delete` is how a blog goes, from its Settings page
and from the admin alike: with it go its posts, seats, grants and members' chats (the database's
cascades and the signals of `BlogConfig.ready`: a chat's files, each seat's open pages and connected
clients), and, once that commits, its posts' covers, which nothing else would delete.

`blog_hand_over` makes a member the owner, from the Settings page; the admin's change of a blog's owner
leaves the seats as it does (`team.owner_changed`).

Refusals are `OperationError`s, whose sentence the page shows: a `BlogRefused` beside its field.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.text import slugify

from agent.values import nothing_visible, without_nul
from blog import live, team
from blog.models import RESERVED_BLOG_SLUGS, Blog, Post, Seat
from blog.services import OperationError, discard_cover

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger("blog.blogs")

TITLE_MAX = Blog._meta.get_field("title").max_length or 200
DESCRIPTION_MAX = Blog._meta.get_field("description").max_length or 300
#: The most of a description a card in the lists of blogs to read shows (`shortened`, ending in "…").
DESCRIPTION_SHOWN = 140
SLUG_MAX = Blog._meta.get_field("slug").max_length or 100
#: A blog's address: lowercase ASCII letters and digits in words joined by single hyphens (`field-notes`).
SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The address of a blog whose title has no letter or digit slugify keeps (a title in another script).
FALLBACK_SLUG = "blog"


class BlogRefused(OperationError):
    """A title or an address that will not do, with the field it is about (`title` or `slug`)."""

    def __init__(self, public_message: str, field: str) -> None:
        super().__init__(public_message)
        self.field = field


class HandOverRefused(OperationError):
    """A hand-over that did not happen, with the field it is about (`seat`), or `owner`: the person
    handing it over no longer owns the blog (handed over meanwhile)."""

    def __init__(self, public_message: str, field: str) -> None:
        super().__init__(public_message, "denied")
        self.field = field


def blogs_allowed() -> int:
    """How many blogs one person may own and still start another on the site; 0: only the admin makes them."""
    return settings.BLOGS_PER_PERSON


def may_start(user: Any) -> bool:
    """Whether `user` may start one more blog now (under `BLOGS_PER_PERSON`, counting those they own)."""
    allowed = blogs_allowed()
    return allowed > 0 and Blog.objects.filter(owner=user).count() < allowed


def clean_title(title: str) -> str:
    """The title as kept: trimmed, in one composed form (NFC), no NUL (as a post's title)."""
    title = without_nul(unicodedata.normalize("NFC", title or "").strip())
    if nothing_visible(title):
        raise BlogRefused("Give the blog a title.", "title")
    if len(title) > TITLE_MAX:
        raise BlogRefused(f"A blog's title can be at most {TITLE_MAX} characters.", "title")
    return title


def clean_description(description: str) -> str:
    """What the blog is about as kept: one paragraph of plain text in one composed form (NFC), every run
    of spaces, tabs and line breaks one space, trimmed, and control characters (NUL among them) removed;
    "" for one with nothing else (no description). Refused past DESCRIPTION_MAX characters."""
    text = " ".join(unicodedata.normalize("NFC", description or "").split())
    text = " ".join("".join(c for c in text if unicodedata.category(c) != "Cc").split())
    if nothing_visible(text):
        return ""
    if len(text) > DESCRIPTION_MAX:
        raise BlogRefused(f"A blog's description can be at most {DESCRIPTION_MAX} characters.", "description")
    return text


def clean_slug(slug: str) -> str:
    """An address typed by its person, lowercased; refused unless it is one a blog may take."""
    slug = (slug or "").strip().lower()
    if not SLUG_PATTERN.fullmatch(slug):
        raise BlogRefused(
            "An address may have only the letters a–z, digits and single hyphens between them, like field-notes.",
            "slug",
        )
    if len(slug) > SLUG_MAX:
        raise BlogRefused(f"An address can be at most {SLUG_MAX} characters.", "slug")
    if slug in RESERVED_BLOG_SLUGS:
        raise BlogRefused(f"The address “{slug}” is reserved: choose another.", "slug")
    return slug


def slug_for(title: str) -> str:
    """An address made from the title, one no blog has yet: its ASCII letters and digits (`slugify`,
    accents dropped), else `blog`; then `-2`, `-3`… past those taken."""
    base = re.sub(r"[-_]+", "-", slugify(title)).strip("-")[: SLUG_MAX - 8].strip("-")
    if not base or base in RESERVED_BLOG_SLUGS:
        base = FALLBACK_SLUG
    taken = set(Blog.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    n = 1
    while (slug := base if n == 1 else f"{base}-{n}") in taken:
        n += 1
    return slug


def blog_create(*, owner: User, title: str, slug: str = "", description: str = "") -> Blog:
    """A new blog of `owner`, who gets its owner's seat with the assistant (`team.owner_seat`), at `slug`,
    or with none an address made from the title, saying what it is about when `description` has words.
    Refused (OperationError) past `BLOGS_PER_PERSON`, for a
    title or address that will not do, and for an address taken, also by a blog made meanwhile (the
    unique slug decides: nothing is made)."""
    title = clean_title(title)
    description = clean_description(description)
    slug = clean_slug(slug) if slug.strip() else slug_for(title)
    try:
        with transaction.atomic():
            # The person's row locked: two of their requests at once count their blogs in turn.
            get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
            if not may_start(owner):
                raise OperationError(limit_reached(), "denied")
            blog = Blog.objects.create(owner=owner, title=title, slug=slug, description=description)
            team.owner_seat(blog=blog)
    except IntegrityError:
        if not Blog.objects.filter(slug=slug).exists():
            raise
        raise BlogRefused(f"The address “{slug}” is taken: choose another.", "slug") from None
    return blog


def limit_reached() -> str:
    """What the New blog page says to a person who owns as many blogs as they may."""
    allowed = blogs_allowed()
    if allowed == 0:
        return "Blogs are started by the site's administrator here. Ask them for one."
    noun = "blog" if allowed == 1 else "blogs"
    return (
        f"One person may own at most {allowed} {noun} here, and you have that many: "
        "to start another, delete one of yours or ask the site's administrator."
    )


def blog_update(*, blog: Blog, title: str, description: str | None = None) -> list[str]:
    """Give the blog a new title (its address stays: public links and feeds use it) and, unless None, a
    new description; the fields that changed (`title`, `description`), in that order. Both are checked
    before either is saved: a refusal (BlogRefused, about the title first) changes nothing. A change is
    announced to the blog's open pages once committed (`live.blog_updated`); saving the same leaves them be."""
    title = clean_title(title)
    description = blog.description if description is None else clean_description(description)
    changed = [name for name, value in (("title", title), ("description", description)) if getattr(blog, name) != value]
    blog.title, blog.description = title, description
    if changed:
        with transaction.atomic():
            blog.save(update_fields=changed)
            live.blog_updated(blog)  # (its open pages show the new title and description)
    return changed


def blog_hand_over(*, blog: Blog, to_seat: Seat, actor: User) -> Seat:
    """Make the member of `to_seat` the blog's owner, and `actor`, its owner, an editor there; the new
    owner's seat, raised to owner's, is returned. What each allowed the assistant and their clients stays
    (within their live seat, as always: `grants`). All in one transaction, with the blog's row, the two
    seats and the new owner's row locked, in that order: of two hand-overs at once the second waits, then
    finds the blog no longer `actor`'s and is refused (as is one handed over before it was asked), and
    two owners handing blogs to one person count that person's blogs in turn.

    Refused (HandOverRefused, nothing changed): `to_seat` not another member's seat on this blog, or its
    member already owning as many blogs as they may (`may_start`: `BLOGS_PER_PERSON`; with 0, only the
    admin hands blogs over, not held to it)."""
    with transaction.atomic():
        locked = Blog.objects.select_for_update().filter(pk=blog.pk).first()
        if locked is None or locked.owner_id != actor.pk:
            raise HandOverRefused(NO_LONGER_OWNER, "owner")
        both = Q(user_id=actor.pk) | Q(pk=to_seat.pk)
        seats = Seat.objects.select_for_update(of=("self",)).filter(both, blog=locked).select_related("user")
        seat = next((s for s in seats.order_by("pk") if s.pk == to_seat.pk and s.user_id != actor.pk), None)
        if seat is None:
            raise HandOverRefused(NOT_A_MEMBER, "seat")
        get_user_model().objects.select_for_update().filter(pk=seat.user_id).first()
        if not may_start(seat.user):
            raise HandOverRefused(owns_enough(seat.user.username), "seat")
        locked.owner = seat.user
        locked.save(update_fields=["owner"])
        team.owner_changed(blog=locked, former_owner_id=actor.pk)
    blog.owner = locked.owner
    logger.info("blog %s handed over by %s to %s", blog.pk, actor.pk, seat.user_id)
    return Seat.objects.get(pk=seat.pk)


#: What an owner's screen says to a change sent by an owner who has since handed the blog over (another tab).
NO_LONGER_OWNER = "You no longer own this blog: nothing changed."


def still_owned(blog: Blog, user: Any) -> bool:
    """Whether `user` owns `blog` still, its row locked till the caller's transaction ends: a change an
    owner's screen makes waits for a hand-over under way (`blog_hand_over` locks the row first), then sees it."""
    return Blog.objects.select_for_update().filter(pk=blog.pk, owner=user).exists()


#: What the Settings page says to a seat id that is not another member's of the blog (forged, or gone).
NOT_A_MEMBER = "Choose a member of this blog to hand it over to. Nothing changed."


def owns_enough(username: str) -> str:
    """Why a hand-over to `username` was refused: they own as many blogs as one person may."""
    allowed = blogs_allowed()
    if allowed == 0:
        return "Blogs are given by the site's administrator here: ask them to hand this one over. Nothing changed."
    noun = "blog" if allowed == 1 else "blogs"
    return (
        f"{username} already owns {allowed} {noun}, as many as one person may own here: "
        "they can't be given this one. Nothing changed."
    )


def blog_delete(*, blog: Blog, actor: User, owner_only: bool = True) -> None:
    """Delete the blog with all it holds; its posts' covers go from storage once that commits.

    The owner's deletion (Settings) locks the blog's row and checks under the lock that `actor` owns it
    still: one sent from a tab left open after a hand-over, or while one is under way (which it then waits
    for: `blog_hand_over` locks the row first), is refused (OperationError `NOT_DELETED`, nothing deleted).
    The admin's (`owner_only=False`) is not held to it.

    Its members' chats on it go with it, their attachments' files after the commit (`chat.drop_chats_with_blog`);
    each seat deleted wakes the blog's open pages, which find their member can no longer read it and
    say so (`live.seat_changed`), and takes its member's connected clients' tokens on it
    (`connectors.clients.seat_removed`). A deletion that fails deletes no file."""
    with transaction.atomic():
        locked = Blog.objects.select_for_update().filter(pk=blog.pk).first()
        if owner_only and (locked is None or locked.owner_id != actor.pk):
            raise OperationError(NOT_DELETED, "denied")
        covers = list(Post.objects.filter(blog=blog).exclude(cover_ref="").values_list("cover_ref", flat=True))
        blog_id, slug = blog.pk, blog.slug
        blog.delete()
        for key in covers:
            discard_cover(key)
    logger.info("blog %s (%s) deleted by %s", blog_id, slug, actor.pk)


#: What the owner's deletion says when the blog is no longer theirs (handed over from another tab) or gone.
NOT_DELETED = "You no longer own this blog: nothing was deleted."
