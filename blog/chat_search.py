"""The chats page's search: what its form asked (`?q=`), read without ever failing, the chats it finds
(by their name or by what was said in them), and each found chat's snippet with the match marked.

A chat is found when its title, or the text of any of its messages (what its person typed, the
assistant's answers: the `text` parts, as the admin's search of chats reads `messages__parts__text`),
holds the words, whatever the case of their letters: words of ASCII letters by the database
(`icontains`, which folds the case of A to Z), others here (SQLite's LIKE folds no other letters, and
PostgreSQL's follows the server's locale), over one read of the chats' texts and one of their titles, at
most MATCHES_MAX found. No index serves a search inside text: a person's chats on one blog are few enough
to be read through.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import CharField, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Cast, Concat, Greatest, StrIndex, Substr, Upper
from django.http import QueryDict
from django.utils.safestring import SafeString

from agent.models import Part, Session
from agent.values import without_nul
from blog import snippets
from blog.snippets import AFTER_CHARS, BEFORE_CHARS

#: The longest search, as the longest name a chat can have (`agent.titles.TITLE_MAX`).
MAX_QUERY_CHARS = 200
#: A search with letters beyond ASCII finds at most this many chats, the latest (`matching`).
MATCHES_MAX = 100


@dataclass(frozen=True)
class ChatSearch:
    """A search as asked: `q` as typed (the form shows it again), the words it looks for (trimmed, each
    run of spaces one space; "" for none: the whole list, unless it was refused), and a sentence on why
    it was refused (else "")."""

    q: str
    words: str
    problem: str = ""

    @property
    def params(self) -> str:
        """The search as a URL's query, for the pages of its results and a rename's way back."""
        return urlencode({"q": self.words}) if self.words else ""


def read(params: QueryDict) -> ChatSearch:
    """The search a page's query (or a rename's form) asks for. Words longer than any chat's name
    search nothing, and say so."""
    q = params.get("q", "")
    words = " ".join(unicodedata.normalize("NFC", without_nul(q)).split())
    if len(words) > MAX_QUERY_CHARS:
        problem = f"A search can be at most {MAX_QUERY_CHARS} characters, and this one has {len(words):,}: shorten it."
        return ChatSearch(q=q, words="", problem=problem)
    return ChatSearch(q=q, words=words)


def matching(sessions: QuerySet[Session], words: str) -> tuple[QuerySet[Session], bool]:
    """Those of `sessions` whose title or whose said text holds `words`, in their order, each with
    `found` (`with_found`), and whether more matched than a search beyond A to Z keeps (MATCHES_MAX).

    One query with the chats, its text searched chat by chat: `found` is a subquery of each chat's
    parts (by the message and part indexes, stopping at the first match), and the filter asks whether
    it found one. An EXISTS would say the same, but under the OR with the title PostgreSQL may read
    it as one set, every person's parts scanned (a hashed subplan over the whole table); a subquery
    with LIMIT 1 is never read so.

    Words with letters beyond ASCII are matched here instead (`found_here`), and the chats' `found` is
    read for those a page shows (`find_here`)."""
    if not words.isascii():
        found = found_here(sessions, words)
        return sessions.filter(pk__in=found[:MATCHES_MAX]), len(found) > MATCHES_MAX
    sessions = with_found(sessions, words)
    return sessions.filter(Q(title__icontains=words) | Q(found__isnull=False)), False


def found_here(sessions: QuerySet[Session], words: str) -> list[Any]:
    """The ids of those of `sessions` whose title or said text holds `words` (composed, NFC, as `read`
    makes them), letter case aside in any script, in `sessions`' order, at most MATCHES_MAX and one more
    (which tells that more match than a search keeps): one read of their texts, then one of their ids and
    titles in order, each text and title composed and folded."""
    folded = words.casefold()
    texts = Part.objects.filter(message__session__in=sessions.values("pk"), type="text")
    said = {
        session_id
        for session_id, text in texts.values_list("message__session_id", "text").iterator()
        if folded in unicodedata.normalize("NFC", text).casefold()
    }
    found = []
    for pk, title in sessions.values_list("pk", "title").iterator():
        if pk in said or folded in unicodedata.normalize("NFC", title).casefold():
            found.append(pk)
            if len(found) > MATCHES_MAX:
                break
    return found


def find_here(chats: list[Any], words: str) -> None:
    """Give each of `chats` (those a page shows) `found`, as `with_found` does, for words it cannot match:
    "1:" and the whole of its first text that holds them, composed (one read of their texts, in order),
    which `snippet` cuts to a line; None when none does."""
    folded = words.casefold()
    texts = Part.objects.filter(message__session__in=[c.pk for c in chats], type="text")
    first: dict[Any, str] = {}
    ordered = texts.order_by("message__position", "position").values_list("message__session_id", "text")
    for session_id, text in ordered.iterator():
        text = unicodedata.normalize("NFC", text)
        if session_id not in first and folded in text.casefold():
            first[session_id] = text
    for chat in chats:
        chat.found = f"1:{first[chat.pk]}" if chat.pk in first else None


def with_found(sessions: QuerySet[Session], words: str) -> QuerySet[Session]:
    """`sessions` each with `found`: "<position>:<window>" of its first text that holds `words` (None
    when none does), the window the text around the match (from BEFORE_CHARS before it, one character
    more than a snippet shows after it), so no whole answer is read to show a line of it. Alone, for
    the chats a page shows of those `matching` found: their snippets read, not every chat's."""
    hit = StrIndex(Upper("text"), Upper(Value(words)))
    start = Greatest(hit - BEFORE_CHARS, Value(1), output_field=IntegerField())
    window = Substr("text", start, BEFORE_CHARS + len(words) + AFTER_CHARS + 1)
    parts = Part.objects.filter(message__session=OuterRef("pk"), type="text", text__icontains=words)
    found = parts.order_by("message__position", "position").annotate(
        found=Concat(Cast(hit, CharField()), Value(":"), window, output_field=CharField())
    )
    return sessions.annotate(found=Subquery(found.values("found")[:1]))


def snippet(session: Any, words: str) -> SafeString:
    """A line of the chat around its first match, the match in <mark> (escaped, as all of it): from its
    said text (`with_found`'s `found`), else from its title; "" when neither shows the words to Python
    (a letter the database folded another way)."""
    found = getattr(session, "found", None)
    if found:
        at, _, window = found.partition(":")
        return snippets.marked(window, words, cut_start=int(at) > BEFORE_CHARS + 1)
    return snippets.marked(session.title, words)
