"""The words of a chat's message refused when its form was sent as a page, kept for the page it comes back to.

A form sent before the page's scripts ran is answered with a redirect (`chat_views.sent_as_page`), and a
page drawn afresh has an empty box: the words typed, a long message refused for being too long above all,
would be lost. They are kept in the person's session (Django's `request.session`, never the URL: browser
history and access logs keep those) under the address the form posted to, which names its chat (or, for a
chat's first message, its panel), and the person's id; the form drawn next at that address for that person
takes them back (`take`, read once: a reload after shows an empty box), as Django's own messages are.

Kept only where the project has sessions, and not where a session is its cookie (`signed_cookies`): a
cookie past 4 KB is dropped by browsers and refused by proxies, the session with it. Files cannot be put
back in a form (browsers do not allow it); the sentence of the refusal says to attach them again.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest

from agent import intake
from agent.api import MAX_TEXT
from agent.upload_handler import refusal_of

#: The most of a refused message's words kept, in characters (the message's cap is MAX_TEXT): a message
#: refused for being too long is kept whole up to ten times that, the rest cut, so that no size sent
#: (Django's DATA_UPLOAD_MAX_MEMORY_SIZE may be None) weighs on the session beyond it.
KEPT_MAX = 10 * MAX_TEXT

COOKIE_SESSIONS = "django.contrib.sessions.backends.signed_cookies"

FILES_NOT_KEPT = "Attach the files again: they were not kept."


def key(request: HttpRequest, form_url: str) -> str:
    return f"agent.typed:{getattr(request.user, 'pk', '')}:{form_url}"


def keep(request: HttpRequest, text: object, form_url: str | None = None) -> None:
    """Keep `text`, the refused message's, for the form posting to `form_url` (default: the one that
    posted it here, `request.path`): nothing without a session, for a session that is its cookie, or
    for no words."""
    session = getattr(request, "session", None)
    if session is None or settings.SESSION_ENGINE == COOKIE_SESSIONS or not isinstance(text, str) or not text:
        return
    session[key(request, form_url or request.path)] = text[:KEPT_MAX]


def take(request: HttpRequest, form_url: str) -> str:
    """The words kept for the form posting to `form_url`, for this request's person, taken (read once);
    "" when there are none or the project has no sessions."""
    session = getattr(request, "session", None)
    if session is None:
        return ""
    kept = session.pop(key(request, form_url), "")
    return kept if isinstance(kept, str) else ""


def refused(request: HttpRequest, exc: intake.Refused, form_url: str | None = None) -> None:
    """A message refused as its form was sent as a page: why, said on the page it goes back to
    (`django.contrib.messages`, where the project has it: fail_silently), and its words kept for the form
    there (`form_url`, as for `keep`). When files were attached, it says to attach them again."""
    attached = bool(request.FILES.getlist("files")) or refusal_of(request) is not None
    sentence = f"Your message was not sent. {exc.message}" + (f" {FILES_NOT_KEPT}" if attached else "")
    messages.error(request, sentence, fail_silently=True)
    keep(request, request.POST.get("text"), form_url)
