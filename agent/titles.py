"""A chat's name given by its person: `session_rename` checks it and keeps it as the chat's title.

A chat nobody named is named for people by its first words, read as it is listed (`display.chat_label`)
and never written to `Session.title`: so nothing later replaces the name a person gave. The name is
the chat's, not a turn of it: no message is added, and the transcript stays as it was.
"""

from __future__ import annotations

import unicodedata

from agent.models import Session
from agent.values import nothing_visible

TITLE_MAX = Session._meta.get_field("title").max_length or 200
#: Control characters a pasted name may carry as line breaks and tabs: they become one space each run.
LINE_BREAKS = frozenset("\t\n\r")

EMPTY = "Give the chat a name."
CONTROL = "A chat's name can't contain control characters."
TOO_LONG = f"A chat's name can be at most {TITLE_MAX} characters."


class TitleRefused(ValueError):
    """A chat name that will not do; its one argument is the sentence a page shows beside the field."""


def clean_title(text: str) -> str:
    """The name as kept: one composed form (NFC), every run of spaces, tabs and line breaks one space,
    trimmed. Refused (TitleRefused): a control character (NUL, escape, bell…), nothing visible (spaces
    or invisible characters only), or more than TITLE_MAX characters."""
    text = unicodedata.normalize("NFC", text or "")
    if any(unicodedata.category(c) == "Cc" and c not in LINE_BREAKS for c in text):
        raise TitleRefused(CONTROL)
    text = " ".join(text.split())
    if nothing_visible(text):
        raise TitleRefused(EMPTY)
    if len(text) > TITLE_MAX:
        raise TitleRefused(TOO_LONG)
    return text


def session_rename(*, session: Session, title: str) -> str:
    """Name `session` (its person's to name: the caller checks) with `title` once cleaned (`clean_title`;
    TitleRefused changes nothing); the name kept is returned. Only the title is written, not
    `updated_at`: a rename does not make the chat the latest, the one a panel resumes."""
    title = clean_title(title)
    Session.objects.filter(pk=session.pk).update(title=title)
    session.title = title
    return title


def session_unname(*, session: Session) -> None:
    """Take away the name `session`'s person gave it: the lists name it by its first words again. As a
    rename, only the title is written (the caller checks the chat is theirs)."""
    Session.objects.filter(pk=session.pk).update(title="")
    session.title = ""
