"""How the blog's tool calls read on the chat's chips: a post by its title, an attachment by its file name.

The engine shows a call's input as the model sent it (`post_id: 5`). Through the tools' `shown` hook
(registered with them in `blog.chat.register_tools`) people read what the ids point at instead, and
only what they may see: a post of the chat's own blog while they hold a seat that reads it (one
deleted since by the title its delete revision keeps), an attachment of this very chat. Anything
else, another blog's post or an id the model made up, reads "not found". Values are plain text; the
chip's template escapes them.
"""

from __future__ import annotations

from typing import Any

from agent.models import Part, Session
from blog import grants
from blog.access import READ
from blog.models import Blog, Post, PostRevision
from blog.operations import OPERATIONS

NOT_FOUND = "not found"

#: The ids a call may carry, and the word a person reads in their place.
POST_KEY, COVER_KEY = "post_id", "cover_attachment_id"
SHOWN_AS = {POST_KEY: "post", COVER_KEY: "cover"}
#: `update_post`'s flag that takes the cover away, read as "cover: removed".
REMOVE_COVER_KEY = "remove_cover"


def shown_inputs(session: Session, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each call's input as its chip shows it, in the operation's own order of fields; every post
    and attachment they name is read at once (a query each, whatever the number of calls)."""
    from blog.chat import blog_of  # (blog.chat registers this hook)

    post_ids = {data[POST_KEY] for _name, data in calls if _is_id(data.get(POST_KEY))}
    cover_ids = {data[COVER_KEY] for _name, data in calls if _is_id(data.get(COVER_KEY))}
    titles = _titles(session.user, blog_of(session), post_ids) if post_ids else {}
    files = file_names(session, cover_ids) if cover_ids else {}
    names = {POST_KEY: titles, COVER_KEY: files}
    shown = []
    for name, data in calls:
        op = OPERATIONS.get(name)
        order = {key: i for i, key in enumerate(op.input_schema.get("properties", {}) if op else ())}
        said: dict[str, Any] = {}
        for key in sorted(data, key=lambda k: (order.get(k, len(order)), k)):
            value = data[key]
            if key in names and _is_id(value):
                said[SHOWN_AS[key]] = names[key].get(value, NOT_FOUND)
            elif key == REMOVE_COVER_KEY and value is True:
                said[SHOWN_AS[COVER_KEY]] = "removed"
            else:
                said[key] = value
        shown.append(said)
    return shown


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _titles(user: Any, blog: Blog | None, ids: set[int]) -> dict[int, str]:
    """The titles of the blog's posts among `ids`, quoted, while `user` may read the blog's posts."""
    if blog is None or READ not in grants.person(user, blog).scopes:
        return {}
    titles = {pk: f"“{title}”" for pk, title in Post.objects.filter(blog=blog, pk__in=ids).values_list("pk", "title")}
    if gone := ids - titles.keys():
        deleted = PostRevision.objects.filter(blog=blog, action="delete", before__id__in=sorted(gone))
        for before in deleted.values_list("before", flat=True):
            assert before is not None  # (`before__id__in` matched it: a delete's revision keeps the post it deleted)
            titles.setdefault(before["id"], f"“{before.get('title', '')}” (deleted)")
    return titles


def file_names(session: Session, ids: set[int]) -> dict[int, str]:
    """The file names of this chat's own attachments among `ids`."""
    attachments = Part.objects.filter(pk__in=ids, message__session=session, type__in=("image", "document"))
    return {pk: name or "an attachment" for pk, name in attachments.values_list("pk", "text")}


def attachment_name(session: Session, attachment_id: Any) -> str | None:
    """How an approval names the attachment a call makes a post's cover: its file name in this chat;
    None when the call names none."""
    if not _is_id(attachment_id):
        return None
    return file_names(session, {attachment_id}).get(attachment_id, "an attachment not found in this chat")
