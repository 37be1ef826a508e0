"""The editor's cover field: the image a person chooses for a post by hand, read within the chat's
per-file cap (`AGENT_MAX_UPLOAD_MB`, through the chat's upload handler) and checked and stored as
the assistant's covers are (`covers.store_image`); or the box that takes the cover away.

A body longer than one image and the form's words may be is not read at all (Content-Length); an
image that grows past the cap as it arrives is dropped, and the rest of the form is still read, so
the person's words come back with the refusal.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import SkipFile, StopUpload
from django.http import HttpRequest

from agent.upload_handler import OVERHEAD, UploadLimitHandler, refusal_of
from agent.uploads import Limits, mb
from blog import covers, services
from blog.models import Blog

FIELD = "cover"
REMOVE = "remove_cover"
#: What the form's words may take besides the image: a title and a body at their longest, each
#: character at most 4 bytes in UTF-8.
WORDS_ROOM = 4 * (services.MAX_BODY_CHARS + 200)
#: Said when a file could not be kept in the form (a refused Save, or a refused image).
AGAIN = "choose the image again"


class CoverRefused(Exception):
    """The chosen image was refused; `message` is safe to show beside the field."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


#: A form that sent more than one file for the cover (the page's sends one; a crafted one can send more).
ONE_IMAGE = "A cover is one image: choose one."


def limits() -> Limits:
    """The chat's per-file cap for the one image; the body may carry the form's words besides."""
    chat = Limits.from_settings()
    return Limits(
        per_file=chat.per_file,
        per_message=chat.per_file + WORDS_ROOM,
        files=1,
        pixels=chat.pixels,
        frames=chat.frames,
    )


def field_context() -> dict[str, object]:
    """What the editor's cover field says of the cap (and its script checks before sending)."""
    per_file = limits().per_file
    return {"cover_max_bytes": per_file, "cover_max_mb": mb(per_file)}


def unreadable(request: HttpRequest) -> str:
    """The refusal of a body too long to be read at all ("" when it may be read)."""
    length = request.META.get("CONTENT_LENGTH") or "0"
    size = int(length) if length.isascii() and length.isdigit() else 0
    cap = limits()
    if size <= cap.per_message + OVERHEAD:
        return ""
    return (
        f"That image is larger than the {mb(cap.per_file)} MB a cover may be: the form was not read and nothing "
        f"was saved. Choose a smaller image."
    )


class CoverLimitHandler(UploadLimitHandler):
    """The chat's handler with the cover's limits, which skips a file it refuses rather than ending the
    parse: the fields after it (the title, the body, the version) are still read. What is read past a
    skipped file is bounded by the Content-Length check (`unreadable`)."""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.limits = limits()

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().new_file(*args, **kwargs)
        except StopUpload:
            raise SkipFile() from None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        try:
            return super().receive_data_chunk(raw_data, start)
        except StopUpload:
            raise SkipFile() from None


def accept(request: HttpRequest) -> None:
    """Read the form's upload with the cover's cap (before anything reads the form: the CSRF check does)."""
    handler = CoverLimitHandler(request)
    others = [h for h in request.upload_handlers if not isinstance(h, UploadLimitHandler)]
    request.upload_handlers = [handler, *others]


def chosen(request: HttpRequest) -> bool:
    """Whether the form came with a file in the cover field (or one refused as it arrived)."""
    return FIELD in request.FILES or refusal_of(request) is not None


def store(request: HttpRequest, blog: Blog) -> services.Cover | None:
    """The chosen image stored as the post's own copy (for `services.post_create`/`post_update`, which
    delete it again if the save fails), None when none was chosen; or CoverRefused."""
    upload = request.FILES.get(FIELD)  # (first: the form is read, and an upload stopped, here)
    refused = refusal_of(request)
    if refused is not None:
        # (two files: a form of the page's sends one; the chat's sentence would speak of a message)
        raise CoverRefused(ONE_IMAGE if refused[0] == "too_many_files" else refused[1])
    if upload is None:
        return None
    with upload.open("rb") as fh:
        data = fh.read()
    try:
        return covers.store_image(blog, upload.name or "", data)
    except services.OperationError as exc:
        raise CoverRefused(exc.public_message) from None


def refusal(message: str) -> str:
    """What the field says of a refused image: the form keeps the words, never a file."""
    return f"{message} Nothing was saved: your words are still in the form; {AGAIN} (or another) to save it."


def not_kept() -> str:
    """What the field says when a Save was refused for another reason with an image chosen."""
    return f"The image you chose was not saved with them: {AGAIN}."
