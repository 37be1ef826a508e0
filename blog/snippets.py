"""A line of a text around the first match of a search's words, cut at words' edges: marked in HTML
for a page (the chats page's and the All posts page's results), plain for the assistant's tools."""

from __future__ import annotations

import re
from typing import NamedTuple

from django.utils.html import format_html
from django.utils.safestring import SafeString

#: How much of a line comes before the match, and after it.
BEFORE_CHARS = 40
AFTER_CHARS = 70


class Around(NamedTuple):
    """The match as written in the text, what comes before and after it on its line, and whether the
    text goes on beyond either end (where a line shows "…")."""

    before: str
    match: str
    after: str
    cut_start: bool
    cut_end: bool


def around(text: str, words: str, *, cut_start: bool = False) -> Around | None:
    """`text` around the first match of `words` (letter case aside, in any script), on one line, from and
    to a word's edge where it is cut (never inside a word, nor between a letter and its accent); None when
    the text does not hold them. `cut_start` says the text was already cut before its start."""
    match = re.search(re.escape(words), text, re.IGNORECASE)
    if match is None:
        return None
    begin, end = max(match.start() - BEFORE_CHARS, 0), match.end() + AFTER_CHARS
    before, after = _one_line(text[begin : match.start()]), _one_line(text[match.end() : end])
    cut_start, cut_end = cut_start or begin > 0, end < len(text)
    if cut_start:
        before = before.split(" ", 1)[1] if " " in before else before
    if cut_end:
        after = after.rsplit(" ", 1)[0] if " " in after else after
    return Around(before.lstrip(), _one_line(match.group(0)), after.rstrip(), cut_start, cut_end)


def marked(text: str, words: str, *, cut_start: bool = False) -> SafeString:
    """The line `around` the words as HTML, escaped, the match in <mark>; "" when the text lacks them."""
    line = around(text, words, cut_start=cut_start)
    if line is None:
        return SafeString("")
    start, end = "…" if line.cut_start else "", "…" if line.cut_end else ""
    return format_html("{}{}<mark>{}</mark>{}{}", start, line.before, line.match, line.after, end)


def plain(text: str, words: str) -> str:
    """The line `around` the words as plain text; "" when the text lacks them."""
    line = around(text, words)
    if line is None:
        return ""
    return f"{'…' if line.cut_start else ''}{line.before}{line.match}{line.after}{'…' if line.cut_end else ''}"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)
