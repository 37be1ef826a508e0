"""Where attachments live: Django's default storage (files under MEDIA_ROOT, or an S3 bucket).

A part keeps only the object's key (`media_ref`), never a foreign key, so the transcript stays
portable and the storage swappable. Keys are `agent/<session id>/<random>.<ext>`: nothing of the
person's file name, nothing guessable, and nothing served by key — `agent.media_views` serves a
part only to the people allowed to read its chat.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from agent import logcontext
from agent.models import Part, Session
from agent.uploads import Upload
from agent.values import MediaRefPart

logger = logcontext.get_logger("agent.media")

MEDIA_TYPES = ("image", "document")

#: The sessions being deleted together (`deleting`), whose files are already in hand: their own
#: `pre_delete` reads none again. A context variable: one thread's or task's deletion, no other's.
_in_hand: ContextVar[frozenset[Any]] = ContextVar("agent_media_in_hand", default=frozenset())


def store(session: Session, uploads: list[Upload]) -> list[MediaRefPart]:
    """Save each checked upload; returns the message parts that name them. All or none."""
    parts: list[MediaRefPart] = []
    try:
        for upload in uploads:
            key = default_storage.save(
                f"agent/{session.pk}/{uuid.uuid4().hex}.{upload.extension}", ContentFile(upload.data)
            )
            parts.append(
                {
                    "type": upload.kind,
                    "media_type": upload.media_type,
                    "media_ref": key,
                    "name": upload.name,
                    "meta": upload.meta,
                }
            )
    except Exception:
        delete([p["media_ref"] for p in parts])
        raise
    return parts


def delete(keys: Iterable[str]) -> int:
    """Delete stored objects by key; a failure is logged and skipped (returns how many went)."""
    gone = 0
    for key in keys:
        if not key:
            continue
        try:
            default_storage.delete(key)
            gone += 1
        except Exception:
            logger.warning("could not delete stored attachment %s", key, exc_info=True)
    return gone


def keys_of_sessions(session_ids: Iterable[Any]) -> list[str]:
    """The storage keys of every attachment in these sessions."""
    return list(
        Part.objects.filter(message__session__in=list(session_ids), type__in=MEDIA_TYPES)
        .exclude(media_ref="")
        .values_list("media_ref", flat=True)
    )


@contextmanager
def deleting(session_ids: Iterable[Any]) -> Iterator[list[str]]:
    """Around a deletion of these sessions together (a batch of `chat_cleanup`), in its transaction:
    their files' keys are read in one query (yielded), not one a session by each one's `pre_delete`,
    and the files go once the deletion is committed. A deletion that raises deletes no file."""
    ids = list(session_ids)
    keys = keys_of_sessions(ids)
    token = _in_hand.set(_in_hand.get() | frozenset(ids))
    try:
        yield keys
    finally:
        _in_hand.reset(token)
    if keys:
        transaction.on_commit(lambda: delete(keys))


def session_deleted(sender: Any, instance: Session, **kwargs: Any) -> None:
    """`pre_delete` of a Session (connected in `AgentConfig.ready`): however a chat goes (the admin, its
    person's account deleted, `chat_cleanup`), its attachment files go once the deletion is committed."""
    if instance.pk in _in_hand.get():
        return  # (read already with the rest of its batch: `deleting`)
    keys = keys_of_sessions([instance.pk])
    if keys:
        transaction.on_commit(lambda: delete(keys))
