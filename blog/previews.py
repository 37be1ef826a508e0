"""The editor's live preview, bounded: a text already rendered is not rendered again, and what each
person's previews may cost in rendering is capped per minute.

markdown-it-py is linear in its input but slow in Python: a 100,000-character body of ordinary prose
renders in about 0.15 s, one built to make many tokens (a table of thousands of rows, a line of `[`, a
list item per line) in 1–2 s (`RELIABILITY.md`, "Editor rough edges, session 34"). Nesting is already
bounded by the parser (`maxNesting`, 20 in the commonmark preset: deeper blockquotes and lists are read
as text). The preview runs at every pause in typing, so without a bound one member's tab, or a script
with their session, could keep a worker's CPU busy. A long body renders off the event loop
(`agent.markdown.rendered`), so the worker's other streams go on meanwhile.
"""

from __future__ import annotations

import math
import time
from contextlib import suppress
from typing import Any

from django.core.cache import cache
from django.utils.safestring import SafeString

from blog import reading
from config.cache import CacheUnavailable, needed

#: The rendering each person's previews may spend per minute (in milliseconds of CPU), in each worker
#: process (the cache is the process's own unless `CACHE_URL` shares it). Ordinary editing, even of a long
#: post, spends a small part of it; a body built to be slow reaches it after a few previews.
PREVIEW_CPU_MS_PER_MINUTE = 10_000
#: What a preview is charged before it is rendered, per character (the slowest inputs measured, about
#: 2 s per 100,000 characters): requests sent at once each see the others' charges, so a burst cannot
#: all pass the check before any is counted. The charge is set to what the render took once it is done.
ESTIMATE_MS_PER_CHAR = 0.02

#: Only a body this long is kept once previewed (rendering a shorter one costs a few milliseconds), and
#: for this long: the cache is shared with published pages' renders, which each pause in typing a
#: short post would otherwise push out, and a preview is repeated within an editing session.
PREVIEW_CACHE_MIN_CHARS = 10_000
PREVIEW_CACHE_SECONDS = 15 * 60


def bucket(user_id: int, now: float) -> str:
    return f"blog:preview-cpu:{user_id}:{int(now // 60)}"


def render(user: Any, body: str) -> tuple[SafeString | None, int]:
    """The preview of `body` for a person, and 0; or None and the seconds until their previews resume.
    CacheUnavailable while the cache that keeps their budget does not answer (a text it had rendered
    is not served from it either, then).

    A text rendered before (previewed, or published: the same cache as the public page) is served from
    the cache whatever was spent; only a render is charged: the CPU it took in the thread that rendered
    it (a long body renders off the event loop, `reading.render_body`). A render that fails keeps its
    estimate charged."""
    cached = reading.cached_body_html(body)
    if cached is not None:
        return cached, 0
    now = time.time()
    key = bucket(user.pk, now)
    estimate = math.ceil(len(body) * ESTIMATE_MS_PER_CHAR)
    with needed("editor previews are paused until it answers"):  # (no budget to read: no render)
        cache.add(key, 0, 120)
        if (cache.get(key) or 0) >= PREVIEW_CPU_MS_PER_MINUTE:
            return None, max(1, math.ceil(60 - now % 60))
        charge(key, estimate)
    html, seconds = reading.render_body(body)
    with suppress(CacheUnavailable), needed("a preview's render was not charged"):
        charge(key, math.ceil(seconds * 1000) - estimate)
    if len(body) >= PREVIEW_CACHE_MIN_CHARS:
        reading.keep_body_html(body, html, PREVIEW_CACHE_SECONDS)
    return html, 0


def charge(key: str, ms: int) -> None:
    if not ms:
        return
    try:
        cache.incr(key, ms)
    except ValueError:  # (the minute's count expired meanwhile)
        cache.add(key, max(ms, 0), 120)
