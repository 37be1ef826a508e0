"""The operation catalogue: what can be done to a blog, by people's views and by the assistant alike."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

from blog import covers, grants, services, snippets
from blog.access import DELETE, PUBLISH, READ, WRITE
from blog.grants import Actor
from blog.models import Blog, Post
from blog.services import OperationError

POST_ID = {"type": "integer", "minimum": 1, "description": "The post's id, from list_posts."}


@dataclass(frozen=True)
class Operation:
    name: str
    description: str
    input_schema: dict[str, Any]
    scope: str
    run: Callable[..., tuple[Any, list[dict[str, Any]]]]
    exposed: bool = True


def _post(blog: Blog, post_id: int) -> Post:
    # Always within this blog: no input can reach another blog's posts.
    post = Post.objects.filter(blog=blog, pk=post_id).first()
    if post is None:
        raise OperationError(f"There is no post with id {post_id} on this blog.", "not_found")
    return post


#: The most posts one `list_posts` call lists; `offset` pages past them.
LIST_MAX = 100


def _list(actor: Actor, blog: Blog, status: str | None = None, query: str | None = None, offset: int = 0):
    """A page of the blog's posts (`LIST_MAX`, from `offset`), how many match in all (`total`: the page's
    own length when it is the whole list, so a short list costs no COUNT) and, when more remain, where
    the next page starts (`next_offset`). A post found by the text of its body, not its title, has its
    `excerpt`: the line that holds the words. A search the database cannot fold (letters beyond ASCII)
    keeps at most `services.MATCHES_MAX` posts, and a `note` says so when more matched."""
    posts, cut = Post.objects.filter(blog=blog), False
    if status:
        posts = posts.filter(status=status)
    if query:
        query = unicodedata.normalize("NFC", query)  # (as `posts_matching` reads it, so its excerpt finds it too)
        posts, cut = services.posts_matching(posts, query)
    items = []
    for post in posts[offset : offset + LIST_MAX]:
        summary = services.post_summary(post)
        excerpt = snippets.plain(services.matched_text(post, query), query) if query else ""
        items.append({**summary, "excerpt": excerpt} if excerpt else summary)
    whole = len(items) < LIST_MAX and (items or not offset)  # (a short page that is not past the end)
    total = offset + len(items) if whole else posts.count()
    listed: dict[str, Any] = {"items": items, "total": total}
    if offset + len(items) < total:
        listed["next_offset"] = offset + len(items)
    if cut:  # (a search beyond A to Z, matched here: `posts_matching`)
        listed["note"] = (
            f"A search with letters beyond A to Z finds at most the {services.MATCHES_MAX} most recently changed"
            " matching posts, and more match than total says; add more words to narrow it."
        )
    return listed, []


def _get(actor: Actor, blog: Blog, post_id: int):
    post = _post(blog, post_id)
    return {**services.post_summary(post), "slug": post.slug, "body": post.body}, []


def _create(actor: Actor, blog: Blog, title: str, body: str = "", cover_attachment_id: int | None = None):
    services.clean_title(title)  # a bad title is refused before any cover is copied
    cover = covers.copy_attachment(actor, blog, cover_attachment_id) if cover_attachment_id else None
    post = services.post_create(blog=blog, actor=actor, title=title, body=body, cover=cover)
    return _with_namesakes(post), [{"type": "post.created", "id": post.pk}]


def _update(
    actor: Actor,
    blog: Blog,
    post_id: int,
    title: str | None = None,
    body: str | None = None,
    cover_attachment_id: int | None = None,
    remove_cover: bool = False,
):
    if remove_cover and cover_attachment_id is not None:
        raise OperationError(
            "Give either cover_attachment_id (a new cover) or remove_cover (no cover), not both: nothing was changed."
        )
    if title is None and body is None and cover_attachment_id is None and not remove_cover:
        raise OperationError("Give a new title, body or cover to change.")
    post = _post(blog, post_id)
    services.check_may_change(post, actor)  # refused before any cover is copied
    had_cover = bool(post.cover_ref)
    if remove_cover and not had_cover and title is None and body is None:
        # Nothing to write (no revision, no announcement): a success that says why, so the model moves on.
        said = f"“{post.title}” has no cover: nothing was changed."
        return {**services.post_summary(post), "cover_removed": False, "note": said}, []
    cover = covers.copy_attachment(actor, blog, cover_attachment_id) if cover_attachment_id else None
    post = services.post_update(post=post, actor=actor, title=title, body=body, cover=cover, clear_cover=remove_cover)
    summary = _with_namesakes(post, title is not None)
    if remove_cover:
        summary["cover_removed"] = had_cover
        if not had_cover:
            notes = [summary.get("note", ""), "The post had no cover to remove; the rest was saved."]
            summary["note"] = " ".join(n for n in notes if n)
    return summary, [{"type": "post.updated", "id": post.pk}]


def _with_namesakes(post: Post, titled: bool = True) -> dict[str, Any]:
    """A written post's summary; when it was given a title another post of the blog has too, those posts
    and a note, so the model names posts by id and says which one it means (titles may repeat)."""
    summary = services.post_summary(post)
    others = services.namesakes(post) if titled else []
    if others:
        summary["shares_title_with"] = [
            {"id": o.pk, "title": o.title, "status": o.status, "updated_at": o.updated_at.isoformat()} for o in others
        ]
        ids = ", ".join(str(o.pk) for o in others)
        which = f"Another post on this blog (id {ids})" if len(others) == 1 else f"Other posts on this blog (ids {ids})"
        summary["note"] = (
            f"{which} already {'has' if len(others) == 1 else 'have'} this title. Titles may repeat; "
            "name posts by id, and tell the user which one you mean."
        )
    return summary


def _publish(actor: Actor, blog: Blog, post_id: int):
    post = services.post_publish(post=_post(blog, post_id), actor=actor)
    return services.post_summary(post), [{"type": "post.published", "id": post.pk}]


def _unpublish(actor: Actor, blog: Blog, post_id: int):
    post = services.post_unpublish(post=_post(blog, post_id), actor=actor)
    return services.post_summary(post), [{"type": "post.unpublished", "id": post.pk}]


def _delete(actor: Actor, blog: Blog, post_id: int):
    post = _post(blog, post_id)
    title = post.title
    pk = services.post_delete(post=post, actor=actor)
    return {"deleted": pk, "title": title}, [{"type": "post.deleted", "id": pk}]


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TITLE = {"type": "string", "minLength": 1, "maxLength": 200}
BODY = {"type": "string", "maxLength": services.MAX_BODY_CHARS, "description": "Markdown."}
COVER = {
    "type": "integer",
    "minimum": 1,
    "description": "The id of an image attached in this chat (its “[Attachment #id: …]” line), to be the post's cover.",
}
REMOVE_COVER = {
    "type": "boolean",
    "description": "true to remove the post's cover image (not together with cover_attachment_id).",
}

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        Operation(
            "list_posts",
            "List this blog's posts (newest first), optionally by status or by words in their title or text, 100 at"
            " a time: the result's total says how many match, and next_offset (when more remain) where the next"
            " page starts. A post found by its text comes with an excerpt, the line that holds the words.",
            _obj(
                {
                    "status": {"type": "string", "enum": ["draft", "published"]},
                    "query": {
                        "type": "string",
                        "maxLength": 200,
                        "description": "Words to find in a post's title or text, in any letter case.",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "How many of the matching posts to skip: a result's next_offset, for the next page.",
                    },
                },
                [],
            ),
            READ,
            _list,
        ),
        Operation(
            "get_post", "Read one post, with its markdown body.", _obj({"post_id": POST_ID}, ["post_id"]), READ, _get
        ),
        Operation(
            "create_post",
            "Create a draft post with a title, a markdown body and optionally a cover image attached in this chat.",
            _obj({"title": TITLE, "body": BODY, "cover_attachment_id": COVER}, ["title"]),
            WRITE,
            _create,
        ),
        Operation(
            "update_post",
            "Change a post's title, markdown body and/or cover image (an image attached in this chat, "
            "or remove_cover to take the cover away).",
            _obj(
                {
                    "post_id": POST_ID,
                    "title": TITLE,
                    "body": BODY,
                    "cover_attachment_id": COVER,
                    "remove_cover": REMOVE_COVER,
                },
                ["post_id"],
            ),
            WRITE,
            _update,
        ),
        Operation(
            "publish_post",
            "Publish a draft so anyone can read it.",
            _obj({"post_id": POST_ID}, ["post_id"]),
            PUBLISH,
            _publish,
        ),
        Operation(
            "unpublish_post",
            "Take a published post back to draft.",
            _obj({"post_id": POST_ID}, ["post_id"]),
            PUBLISH,
            _unpublish,
        ),
        Operation(
            "delete_post",
            "Delete a post for good. Irreversible: confirm with the user first.",
            _obj({"post_id": POST_ID}, ["post_id"]),
            DELETE,
            _delete,
        ),
    ]
}


def exposed() -> dict[str, Operation]:
    return {name: op for name, op in OPERATIONS.items() if op.exposed}


def perform_json(name: str, actor: Actor, blog: Blog, raw: Any) -> tuple[Any, list[dict[str, Any]]]:
    """Validate, authorise and run one operation; raises OperationError with a message safe to show."""
    op = OPERATIONS.get(name)
    if op is None:
        raise OperationError(f"Unknown operation {name!r}.", "unknown")
    data = _parse(raw)
    problems = sorted(jsonschema.Draft202012Validator(op.input_schema).iter_errors(data), key=lambda e: list(e.path))
    if problems:
        where = "/".join(str(p) for p in problems[0].path) or "input"
        raise OperationError(f"Invalid input at {where}: {problems[0].message}", "invalid")
    if not grants.allows(actor, op):
        raise OperationError(f"Not allowed: {name} needs the {op.scope} permission, which isn't granted.", "denied")
    return op.run(actor, blog, **data)


def _parse(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw or "{}")
        except json.JSONDecodeError:
            raise OperationError("Input must be valid JSON.", "invalid") from None
    if not isinstance(raw, dict):
        raise OperationError("Input must be a JSON object.", "invalid")
    return raw
