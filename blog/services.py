"""The one write path: every change to a post goes through these mutators and leaves a revision; and
the reads of posts by their titles that the people's pages and the assistant share."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Upper
from django.utils import timezone
from django.utils.text import slugify

from agent.markdown import words_of
from agent.values import nothing_visible, without_nul
from blog import grants, live, snippets
from blog.grants import Actor
from blog.models import Blog, Post, PostRevision

logger = logging.getLogger("blog.services")

#: A new cover: its storage key (the post's own copy, `blog.covers`) and media type.
Cover = tuple[str, str]


class OperationError(Exception):
    """A refusal that is safe to show to the person or the model (`public_message`)."""

    def __init__(self, public_message: str, code: str = "invalid") -> None:
        super().__init__(public_message)
        self.public_message = public_message
        self.code = code


class PostChanged(OperationError):
    """The post was saved elsewhere since the version the editor opened: nothing was written."""

    def __init__(self) -> None:
        super().__init__("This post was changed elsewhere since you opened it: nothing was saved.", "conflict")


def post_version(post: Post) -> str:
    """The version of a post the editor form carries (its `updated_at`, which every save sets)."""
    return post.updated_at.isoformat()


def _claim(post: Post, version: str) -> None:
    """Go on only if the post is still at `version`, in memory and in its row, and hold the row until
    the caller's transaction ends: the conditional UPDATE takes the row's write lock, so no other save
    comes between this check and the write (PostgreSQL re-checks the condition against a row another
    transaction committed meanwhile; SQLite's writers take the database's lock in turn)."""
    try:
        seen = datetime.fromisoformat(version)
    except ValueError:
        raise PostChanged() from None
    if seen != post.updated_at:
        raise PostChanged()
    claimed = Post.objects.filter(pk=post.pk, updated_at=seen).update(updated_at=timezone.now())
    if not claimed:
        raise PostChanged()


def _revise(post: Post | None, blog: Blog, action: str, before: dict | None, actor: Actor) -> None:
    PostRevision.objects.create(
        post=post,
        blog=blog,
        action=action,
        before=before,
        after=post.snapshot() if post and action != "delete" else None,
        user=actor.user,
        via_assistant=actor.via_assistant,
        consent=actor.consent,
        chat_session=actor.chat_session,
    )


#: Slugs a post cannot have: their public address is taken by the blog's own pages (its feed).
RESERVED_SLUGS = frozenset({"feed"})


def own_letters(title: str) -> str:
    """`slugify(title, allow_unicode=True)`, keeping the combining marks that belong to a letter:
    Django's keeps word characters only, so it drops the vowel signs of Devanagari, Bengali,
    Tamil… (हिन्दी → हनद). A mark after anything else (an emoji's variation selector) goes with it."""
    kept, after_letter = [], False
    for c in unicodedata.normalize("NFKC", title).lower():
        mark = unicodedata.category(c).startswith("M")
        if c.isalnum() or c == "-" or c == "_" or c.isspace() or (mark and after_letter):
            kept.append(c)
        after_letter = c.isalnum() or (mark and after_letter)
    return re.sub(r"[-\s]+", "-", "".join(kept)).strip("-_")


def slug_base(title: str) -> str:
    """The address a title asks for: in plain letters when each of its letters has a plain form
    ("Über den Café-Tisch" → uber-den-cafe-tisch), else in its own letters, so a title in another
    script ("秋の鳥", "Straße") loses none of them; "post" for a title without letters or digits."""
    own = own_letters(title)
    plain = slugify(own)
    base = plain if len(plain) == len(own) else own
    return base[:200].strip("-_") or "post"


#: How many of a title's addresses (its own, then `-2`, `-3`…) `unique_slug` looks up at first, and at most
#: in one query (well within each database's limit of a statement's parameters).
SLUG_FORMS = 64
SLUG_FORMS_MAX = 1024


def unique_slug(blog: Blog, title: str, exclude: int | None = None) -> str:
    """The title's address, or its first free `-2`, `-3`… form.

    Its forms are looked up by name, each through the (blog, slug) index: one query unless the blog holds
    more than `SLUG_FORMS` posts of the title (then twice as many forms, up to `SLUG_FORMS_MAX`). Not the
    slugs that begin alike: on SQLite that read every post of the blog (its `LIKE` ignores case, so no index
    serves it), at each post created, and an import of thousands of posts read the blog thousands of times.
    """
    base = slug_base(title)
    first, count = 1, SLUG_FORMS
    while True:
        forms = [base if n == 1 else f"{base}-{n}" for n in range(first, first + count)]
        taken = Post.objects.filter(blog=blog, slug__in=forms).order_by()
        if exclude:
            taken = taken.exclude(pk=exclude)
        used = set(taken.values_list("slug", flat=True))
        free = next((slug for slug in forms if slug not in used and slug not in RESERVED_SLUGS), None)
        if free is not None:
            return free
        first, count = first + count, min(count * 2, SLUG_FORMS_MAX)


#: Writes of one post that find its address taken by another request meanwhile, before giving up.
SLUG_ATTEMPTS = 5


def save_at_free_slug(post: Post, fields: list[str] | None = None, words: str | None = None) -> None:
    """Save the post (new, or its changed `fields`; with its body's `words` when read already: `Post.save`)
    at its slug, or, when another request took that slug after `unique_slug` found it free, at the next
    free one: the unique (blog, slug) constraint decides between them, and the refused write is undone
    alone (a savepoint), so the caller's transaction goes on. Any other refusal is raised as it was."""
    for attempt in range(1, SLUG_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                post.save(update_fields=fields, words=words)
            return
        except IntegrityError:
            taken = Post.objects.filter(blog=post.blog_id, slug=post.slug).exclude(pk=post.pk).exists()
            if not taken or attempt == SLUG_ATTEMPTS:
                raise
            post.slug = unique_slug(post.blog, post.title, exclude=post.pk)


#: The longest body a post may have, however it is written (the form, the assistant, a connected
#: client): each view renders it, and the history compares versions of it.
MAX_BODY_CHARS = 100_000


def as_typed(text: str) -> str:
    """`text` with each line break as one LF, as a person sees it and the assistant writes it: a
    browser's form sends CR LF (and an old Mac's text a lone CR), which would count twice at the limit."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_body(body: str) -> str:
    body = without_nul(as_typed(body or ""))  # (PostgreSQL cannot hold a NUL; a form may send one)
    if len(body) > MAX_BODY_CHARS:
        raise OperationError(f"A post's body can be at most {MAX_BODY_CHARS:,} characters.")
    return body


def clean_title(title: str) -> str:
    """The title in one composed form (NFC: "é" typed as e + accent is stored as "é", so searches and
    the assistant find it however it was typed); one of spaces and invisible characters (zero-width
    space, joiners) only is no title."""
    title = without_nul(unicodedata.normalize("NFC", title or "").strip())
    if nothing_visible(title):
        raise OperationError("A post needs a title.")
    if len(title) > 200:
        raise OperationError("A title can be at most 200 characters.")
    return title


def check_may_change(post: Post, actor: Actor) -> None:
    """Refuse a change to a published post's title or body without the publish scope (live content)."""
    if not grants.may_change(actor, post):
        raise OperationError(
            f"“{post.title}” is published: changing it needs the right to publish, which isn't granted.", "denied"
        )


def discard_cover(key: str) -> None:
    """Delete a cover object nothing refers to any more, once the change that dropped it is committed
    (or at once when it was never committed)."""
    if not key:
        return

    def delete() -> None:
        try:
            default_storage.delete(key)
        except Exception:
            logger.warning("could not delete cover %s", key, exc_info=True)

    transaction.on_commit(delete)


#: How the write path tells a blog's open pages of a change: `live.announce`, or a `live.Batch`'s.
Announce = Callable[[Blog, dict[str, Any]], None]


def post_create(
    *,
    blog: Blog,
    actor: Actor,
    title: str,
    body: str = "",
    cover: Cover | None = None,
    announce: Announce | None = None,
) -> Post:
    """A new draft; `cover` is a copy already made for it (deleted again if the post is not created).
    `announce` tells the blog's open pages (default `live.announce`, each change its own message)."""
    try:
        title, body = clean_title(title), clean_body(body)
        words = words_of(body)  # (read ahead of the transaction, where on SQLite they would be read on the loop)
        with transaction.atomic():
            post = Post(blog=blog, author=actor.user, title=title, body=body, slug=unique_slug(blog, title))
            if cover:
                post.cover_ref, post.cover_type = cover
            save_at_free_slug(post, words=words)
            _revise(post, blog, "create", None, actor)
            (announce or live.announce)(blog, {"type": "post.created", "id": post.pk})
    except BaseException:
        discard_cover(cover[0] if cover else "")
        raise
    return post


def post_update(
    *,
    post: Post,
    actor: Actor,
    title: str | None = None,
    body: str | None = None,
    cover: Cover | None = None,
    clear_cover: bool = False,
    version: str | None = None,
) -> Post:
    """Change the title, body and/or cover (the previous cover's object goes once this is committed);
    `clear_cover` takes the cover away (a new `cover` given as well wins), recorded as any change is.
    With `version` (`post_version` of the post the editor opened), refuse with PostChanged when the
    post was saved since: checked and written in one transaction. The assistant and the API pass none;
    only what they change is written, so a change saved since they read the post keeps the rest."""
    try:
        check_may_change(post, actor)
        title = None if title is None else clean_title(title)
        body = None if body is None else clean_body(body)
        before, old_cover = post.snapshot(), post.cover_ref
        changed = ["updated_at"]
        if title is not None and title != post.title:  # a body-only edit keeps the post's address
            post.title = title
            post.slug = unique_slug(post.blog, post.title, exclude=post.pk)
            changed += ["title", "slug"]
        words = None
        if body is not None:
            post.body = body
            changed.append("body")
            words = words_of(body)  # (read ahead of the transaction, where on SQLite they would be read on the loop)
        if cover or (clear_cover and post.cover_ref):
            post.cover_ref, post.cover_type = cover or ("", "")
            changed += ["cover_ref", "cover_type"]
        with transaction.atomic():
            if version is not None:
                _claim(post, version)
            save_at_free_slug(post, changed, words)
            _revise(post, post.blog, "update", before, actor)
            live.announce(post.blog, {"type": "post.updated", "id": post.pk})
    except BaseException:
        discard_cover(cover[0] if cover else "")
        raise
    if old_cover != post.cover_ref:
        discard_cover(old_cover)
    return post


def post_publish(*, post: Post, actor: Actor, announce: Announce | None = None) -> Post:
    return _set_state(post, actor, Post.PUBLISHED, "publish", f"“{post.title}” is already published.", announce)


def post_unpublish(*, post: Post, actor: Actor) -> Post:
    return _set_state(post, actor, Post.DRAFT, "unpublish", f"“{post.title}” is not published.")


def _set_state(
    post: Post, actor: Actor, status: str, action: str, refusal: str, announce: Announce | None = None
) -> Post:
    """Publish or unpublish: only the state is written, so a change to the words saved since the post
    was read stays. The UPDATE is conditional on the state the caller read: of two requests that read
    the same draft (two Publish buttons, a button and the assistant), the second is refused, not a
    second publication with its own revision and a later date."""
    was = Post.DRAFT if status == Post.PUBLISHED else Post.PUBLISHED
    if post.status != was:
        raise OperationError(refusal, "conflict")
    before, now = post.snapshot(), timezone.now()
    published_at = now if status == Post.PUBLISHED else None
    with transaction.atomic():
        changed = Post.objects.filter(pk=post.pk, status=was).update(
            status=status, published_at=published_at, updated_at=now
        )
        if not changed:
            if not Post.objects.filter(pk=post.pk).exists():
                raise OperationError(f"“{post.title}” was deleted meanwhile.", "not_found")
            raise OperationError(refusal, "conflict")
        post.status, post.published_at, post.updated_at = status, published_at, now
        _revise(post, post.blog, action, before, actor)
        effect = "post.published" if status == Post.PUBLISHED else "post.unpublished"
        (announce or live.announce)(post.blog, {"type": effect, "id": post.pk})
    return post


def post_delete(*, post: Post, actor: Actor, announce: Announce | None = None) -> int:
    before, pk, blog = post.snapshot(), post.pk, post.blog
    with transaction.atomic():
        PostRevision.objects.create(
            post=None,
            blog=blog,
            action="delete",
            before={**before, "id": pk},
            after=None,
            user=actor.user,
            via_assistant=actor.via_assistant,
            consent=actor.consent,
            chat_session=actor.chat_session,
        )
        post.delete()
        (announce or live.announce)(blog, {"type": "post.deleted", "id": pk})
    discard_cover(before.get("cover", ""))
    return pk


def post_revert(*, post: Post, actor: Actor, revision: PostRevision) -> Post:
    """Restore the title and body a revision recorded before its change."""
    if revision.post_id != post.pk or not revision.before:
        raise OperationError("That revision can't be restored.")
    check_may_change(post, actor)
    before, title = post.snapshot(), revision.before["title"]
    post.body = revision.before["body"]
    changed = ["body", "updated_at"]
    words = words_of(post.body)  # (read ahead of the transaction, where on SQLite they would be read on the loop)
    if title != post.title:  # a body-only restore keeps the post's address, as a body-only edit does
        post.title = title
        post.slug = unique_slug(post.blog, post.title, exclude=post.pk)
        changed += ["title", "slug"]
    with transaction.atomic():
        save_at_free_slug(post, changed, words)
        _revise(post, post.blog, "revert", before, actor)
        live.announce(post.blog, {"type": "post.updated", "id": post.pk})
    return post


#: At most this many other posts of one title are named (to the person, to the model).
NAMESAKES_SHOWN = 10


def namesakes(post: Post) -> list[Post]:
    """The blog's other posts with this post's title, letter case aside, the most recently changed first.

    Titles may repeat (each post has its own address: `unique_slug`), but a second post of one title is
    told to whoever made it, and to the model, which finds posts by title."""
    return posts_titled(post.blog_id, post.title, exclude=post.pk)


def posts_titled(blog_id: int, title: str, exclude: int | None = None) -> list[Post]:
    """The blog's posts titled `title` (as saved: `clean_title`), letter case aside, but post `exclude`;
    the most recently changed first, at most NAMESAKES_SHOWN. ASCII titles are matched by the database,
    through the index on (blog, UPPER(title)) (`UPPER(title) = UPPER(%s)`, the index's expression: `iexact`
    is `UPPER(title::text)` on PostgreSQL, which matches it too, but `LIKE` on SQLite, which does not);
    others here, on the titles alone (SQLite folds the case of ASCII letters only)."""
    others = Post.objects.filter(blog=blog_id)
    if exclude is not None:
        others = others.exclude(pk=exclude)
    if title.isascii():
        same = others.alias(upper_title=Upper("title")).filter(upper_title=Upper(Value(title)))
        return list(same[:NAMESAKES_SHOWN])
    folded = title.casefold()
    found = [pk for pk, other in others.values_list("pk", "title").iterator() if other.casefold() == folded]
    return list(others.filter(pk__in=found[:NAMESAKES_SHOWN]))


#: A search with letters beyond ASCII finds at most this many posts (`posts_matching`).
MATCHES_MAX = 100


def posts_matching(posts: QuerySet[Post], query: str) -> tuple[QuerySet[Post], bool]:
    """Those of `posts` whose title or text holds `query`, whatever the case of its letters in any script,
    in `posts`' order, and whether more matched than it keeps: the search of the assistant's `list_posts`
    and of the All posts page. A text is matched as its page reads it (`Post.text`: "heron" finds
    `**her**on`) and as it is written (the body: a link's address, a word inside markup). The query is
    composed first (NFC), as every title and `Post.text` are (`clean_title`, `plain_text`).

    The database folds case for ASCII letters (SQLite's LIKE folds no others; PostgreSQL's depends on
    the server's locale), so a query with other letters is matched here, on the titles and the texts
    (one read of ids, titles, texts and bodies, each body composed as the query is), keeping the first
    MATCHES_MAX (and says whether there were more). No index serves a search inside text: a blog's posts
    are few enough to be read through."""
    query = unicodedata.normalize("NFC", query)
    if query.isascii():
        return posts.filter(Q(title__icontains=query) | Q(text__icontains=query) | Q(body__icontains=query)), False
    folded = query.casefold()
    found = [
        pk
        for pk, title, text, body in posts.values_list("pk", "title", "text", "body").iterator()
        if folded in title.casefold()
        or folded in text.casefold()
        or folded in unicodedata.normalize("NFC", body).casefold()
    ]
    return posts.filter(pk__in=found[:MATCHES_MAX]), len(found) > MATCHES_MAX


def matched_text(post: Post, words: str) -> str:
    """Where a search for `words` found `post` when it was not by its title: its text as its page reads it
    when that holds them, else its body as written (the words are in its markup: a link's address); ""
    when its title holds them. A search's line of a post (`snippets`) is read from it: what tells its
    reader why a post whose title lacks the words was found."""
    words = unicodedata.normalize("NFC", words)
    if snippets.around(post.title, words):
        return ""
    return post.text if snippets.around(post.text, words) else unicodedata.normalize("NFC", post.body)


def namesakes_warning(post: Post) -> str:
    """What the person who saved `post` is told when its title is another post's too (else "")."""
    others = namesakes(post)
    if not others:
        return ""
    states = ", ".join(o.get_status_display().lower() for o in others)
    what = "Another post" if len(others) == 1 else f"{len(others)} other posts"
    return (
        f"{what} in this blog {'is' if len(others) == 1 else 'are'} already titled “{others[0].title}” ({states}). "
        f"{'Both' if len(others) == 1 else 'All'} are kept, each at its own address; a different title tells them apart for readers and the assistant."
    )


def post_summary(post: Post) -> dict[str, Any]:
    summary = {
        "id": post.pk,
        "title": post.title,
        "status": post.status,
        "published_at": post.published_at.isoformat() if post.published_at else None,
        "updated_at": post.updated_at.isoformat(),
    }
    if post.cover_ref:
        summary["cover"] = True
    return summary
