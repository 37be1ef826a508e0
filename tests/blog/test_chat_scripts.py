"""The chat's scripts (static/js/chat/): plain deferred files sharing `window.chat`, named by every page in
one order. Where two of them listen to the same event (htmx:afterRequest, htmx:beforeRequest,
htmx:sseMessage, htmx.onLoad), the one named first runs first; start.js, last, runs the page's start."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.test import Client

ORDER = ["core", "log", "tabs", "history", "composer", "seat", "waits", "start"]


def test_every_page_loads_the_chat_files_deferred_in_their_order(db):
    html = Client().get("/accounts/login/").content.decode()
    named = re.findall(r'<script src="/static/js/chat/([a-z]+)\.js" defer></script>', html)
    assert named == ORDER
    assert "/static/js/chat.js" not in html


def test_every_file_of_the_chat_is_named(db):
    files = sorted(p.stem for p in (Path(settings.BASE_DIR) / "static" / "js" / "chat").glob("*.js"))
    assert files == sorted(ORDER)
