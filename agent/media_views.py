"""Serving an attachment to the people who may read its chat, and to no one else.

`GET /api/agent/sessions/<session>/attachments/<part>`: the session's own user (while the domain
lets them read it) or staff with the admin's view permission on sessions. Anyone else, and any
id that is not an attachment of that session, gets the same 404. The answer is built so a
browser can never run it: the stored (checked) type, `nosniff`, a sandboxing CSP, images inline
and documents as downloads.
"""

from __future__ import annotations

from typing import Any

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponseBase
from django.urls import reverse

from agent.api import api_view, error
from agent.media import MEDIA_TYPES
from agent.models import Part, Session
from agent.policy import get_policy

#: The extensions a saved file may keep for each type its bytes were checked to be (`agent.uploads`).
EXTENSIONS = {
    "application/pdf": (".pdf",),
    "image/png": (".png",),
    "image/jpeg": (".jpg", ".jpeg"),
    "image/gif": (".gif",),
    "image/webp": (".webp",),
    "text/plain": (".txt", ".text"),
    "text/markdown": (".md", ".markdown"),
}

#: On every stored file served (attachments and, in the domain, post covers).
SANDBOX_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"


def attachment_url(part: Part) -> str:
    return reverse("agent:attachment", args=[part.message.session_id, part.pk])


def attachment_json(part: Part) -> dict[str, Any]:
    """An image or document part in the transcript API: its type, name, facts and `url`."""
    return {
        "type": part.type,
        "id": part.pk,
        "media_type": part.media_type,
        "media_ref": part.media_ref,
        "name": part.text,
        **(part.media_meta or {}),
        "url": attachment_url(part),
    }


def may_fetch(request: HttpRequest, session: Session) -> bool:
    user = request.user
    if not user.is_authenticated:
        return False
    if user.is_staff and user.has_perm("agent.view_session"):
        return True
    return session.user_id == user.pk and get_policy().may_read(session)


@api_view("GET")
def attachment(request: HttpRequest, session_id: Any, part_id: int) -> HttpResponseBase:
    related = ("message__session", *(f"message__session__{name}" for name in get_policy().related))
    part = (
        Part.objects.select_related(*related)
        .filter(pk=part_id, message__session_id=session_id, type__in=MEDIA_TYPES)
        .first()
    )
    if part is None or not may_fetch(request, part.message.session):
        return error(404, "not_found", "No such attachment.")
    return stored_file_response(part.media_ref, part.media_type, part.text, inline=part.type == "image")


def download_name(name: str, media_type: str) -> str:
    """The name a browser saves the file under: the person's, with the extension of its checked type
    added when it has another. The type comes from the bytes, the name from whoever uploaded them: a
    PDF named `invoice.bat` (its later lines commands) would be saved as a batch file Windows runs."""
    name = name or "attachment"
    allowed = EXTENSIONS.get(media_type, ())
    if not allowed or name.lower().endswith(allowed):
        return name
    return name + allowed[0]


def stored_file_response(key: str, media_type: str, name: str, *, inline: bool) -> FileResponse:
    """A stored object as a safe download: its checked type, no sniffing, sandboxed, private."""
    try:
        fh = default_storage.open(key, "rb")
    except Exception:
        raise Http404("No such file.") from None
    try:
        fh.size  # noqa: B018  (a missing object fails here, on any storage, not mid-response)
    except Exception:
        fh.close()
        raise Http404("No such file.") from None
    response = FileResponse(
        fh, content_type=media_type, as_attachment=not inline, filename=download_name(name, media_type)
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX_CSP
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    response["Cache-Control"] = "private, max-age=3600"
    return response
