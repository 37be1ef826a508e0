"""Post covers: an image attached in the assistant's chat, chosen in the editor or brought by an import,
stored at the post's own storage key.

The copy (not a reference to the attachment) is what lets a chat be deleted, by its person or by
`chat_cleanup`, while the post keeps its cover. Covers are served by `blog.views.post_cover`
(members, always) and `blog.reading.public_cover` (anyone, while the post is published) with the
same safe headers as attachments.
"""

from __future__ import annotations

import logging
import uuid

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404

from agent.media_views import stored_file_response
from agent.models import Part
from agent.runtime import off_the_loop
from agent.uploads import Limits, UploadRefused, check_image
from blog.grants import Actor
from blog.models import Blog, Post
from blog.services import OperationError

logger = logging.getLogger("blog.covers")

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def copy_attachment(actor: Actor, blog: Blog, attachment_id: int) -> tuple[str, str]:
    """A copy of an image attached in the actor's own chat, as (key, media type); or OperationError."""
    session = actor.chat_session
    if session is None:
        raise OperationError("Attachments can be used only in the chat they were attached to.", "invalid")
    part = Part.objects.filter(pk=attachment_id, message__session=session, type__in=("image", "document")).first()
    if part is None:
        raise OperationError(f"There is no attachment #{attachment_id} in this chat.", "not_found")
    if part.type != "image" or part.media_type not in EXTENSIONS:
        raise OperationError(f"Attachment #{attachment_id} is not an image: only an image can be a cover.", "invalid")
    try:
        with default_storage.open(part.media_ref, "rb") as fh:
            data = fh.read()
    except Exception:
        logger.warning("attachment %s of session %s is missing from storage", part.pk, session.pk, exc_info=True)
        raise OperationError(f"Attachment #{attachment_id} is no longer available.", "not_found") from None
    key = default_storage.save(f"covers/{blog.pk}/{uuid.uuid4().hex}.{EXTENSIONS[part.media_type]}", ContentFile(data))
    return key, part.media_type


def store_image(blog: Blog, name: str, data: bytes) -> tuple[str, str]:
    """A cover from an image's bytes (an import's, the editor's), as (key, media type); or OperationError.
    Checked as an attached image is before anything is stored (`agent.uploads.check_image`: the type
    sniffed from the bytes, never the name; the size, pixel and frame caps; re-encoded without its
    metadata), in gevent's thread pool: decoding a large image never stalls the worker's streams."""
    try:
        upload = off_the_loop(check_image, name, data, Limits.from_settings())
    except UploadRefused as exc:
        raise OperationError(exc.message) from None
    key = default_storage.save(f"covers/{blog.pk}/{uuid.uuid4().hex}.{upload.extension}", ContentFile(upload.data))
    return key, upload.media_type


#: How long a browser keeps a cover asked for by its version (`?v=`): a year, never asked again. Such a URL
#: names that one image; a new cover is a new version, so its pages never show the old one from a cache.
KEPT_SECONDS = 365 * 24 * 3600


def cover_response(post: Post, version: str) -> FileResponse:
    """The post's cover with the attachments' safe headers (the caller decided who may see it). Asked for
    by its current version (`Post.cover_version`, the `?v=` every page adds), the browser keeps it without
    asking again; asked for otherwise (no version, or a replaced cover's), it is sent as it is now and
    asked for again each time, so an old address never keeps the wrong image."""
    if not post.cover_ref:
        raise Http404("No cover.")
    name = f"{post.slug}-cover.{post.cover_ref.rsplit('.', 1)[-1]}"
    response = stored_file_response(post.cover_ref, post.cover_type, name, inline=True)
    if version == post.cover_version:
        response["Cache-Control"] = f"private, max-age={KEPT_SECONDS}, immutable"
    else:
        response["Cache-Control"] = "private, no-cache"
    return response
