"""The chats page's database work at scale: a person's many chats, the first page and the last, with and
without a search, the page's chats read as before (labelled in the statement that pages) and as now
(`chat_panel.shown_chats`: the page's ids first, labels for the shown chats only), alternating in one
process; and the panel's latest chats the same two ways.

`python -m bench.chatspage --db sqlite` (a database file in a temporary directory) or `--db pg` (a
PostgreSQL database of its own, `bench_chats_<pid>`, dropped after). `--control` times the old way on
both sides (the spread of the method). Prints one JSON object: medians in ms, new/old ratios of the
medians, and each side's fastest run (the least disturbed by a busy host).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

SEARCH = "heron"


def setup_env(db_url: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "0",  # (DEBUG=1 would keep every query in memory)
            "SECRET_KEY": "bench-only-secret-key-not-for-production-0123456789",
            "SECURE_SSL_REDIRECT": "0",
            "DATABASE_URL": db_url,
            "LOG_LEVEL": "WARNING",
        }
    )


def fill(chats: int, others: int, per_other: int) -> tuple[Any, Any]:
    """One blog; `others` people with `per_other` chats each and the person under test with `chats`;
    10 messages (one text part each) in nine chats of ten, `SEARCH` said in one chat of ten; the chats'
    `updated_at` spread over 300 days. Returns (person, blog)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from agent.models import Message, Part, Session
    from blog.models import Blog, ChatLink, Seat

    User = get_user_model()  # noqa: N806
    with transaction.atomic():
        person = User.objects.create(username="bench_person", password="!bench")
        blog = Blog.objects.create(slug="bench-chats", title="Bench", owner=person)
        Seat.objects.create(user=person, blog=blog, role=Seat.OWNER, may_use_assistant=True)
        people = [person] + list(
            User.objects.bulk_create(User(username=f"bench_other{i}", password="!bench") for i in range(others))
        )
        owners = [person] * chats + [p for p in people[1:] for _ in range(per_other)]
        sessions = Session.objects.bulk_create((Session(user=u) for u in owners), batch_size=2000)
        ChatLink.objects.bulk_create((ChatLink(session=s, blog=blog) for s in sessions), batch_size=2000)
        said = [(i, s) for i, s in enumerate(sessions) if i % 10 != 9]
        messages = Message.objects.bulk_create(
            (
                Message(session=s, role=Message.USER if p % 2 == 0 else Message.ASSISTANT, position=p)
                for _, s in said
                for p in range(10)
            ),
            batch_size=2000,
        )
        texts = (
            f"chat {i} message {p}: " + (f"a {SEARCH} by the river, " if i % 10 == 0 else "a walk, ") + "words " * 20
            for i, _ in said
            for p in range(10)
        )
        Part.objects.bulk_create(
            (Part(message=m, position=0, type="text", text=t) for m, t in zip(messages, texts, strict=True)),
            batch_size=2000,
        )
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("UPDATE agent_session SET updated_at = now() - random() * interval '300 days'")
            else:
                cursor.execute(
                    "UPDATE agent_session SET updated_at = "
                    "strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ((abs(random()) % 25920000000) / 1000.0) || ' seconds')"
                )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return person, blog


def old_page(sessions: Any, number: Any, words: str) -> list[Any]:
    """The page as it was read: the labels (and a search's snippets) in the statement with the OFFSET."""
    from django.core.paginator import Paginator

    from blog.chat_panel import CHATS_PER_PAGE, labelled

    page = Paginator(sessions, CHATS_PER_PAGE).get_page(number)
    page.paginator.num_pages  # noqa: B018 (the pager's count, as the page shows it)
    return labelled(page.object_list)


def new_page(sessions: Any, number: Any, words: str) -> list[Any]:
    from django.core.paginator import Paginator

    from blog.chat_panel import CHATS_PER_PAGE, shown_chats

    page = Paginator(sessions.values("pk"), CHATS_PER_PAGE).get_page(number)
    page.paginator.num_pages  # noqa: B018
    return shown_chats(page.object_list, words)


def shown(rows: list[Any]) -> list[tuple[Any, str, str | None]]:
    """What a page shows of each chat: which, its label, the text its snippet is cut from."""
    return [(s.pk, s.label, getattr(s, "found", None)) for s in rows]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def measure(person: Any, blog: Any, runs: int, control: bool) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from blog import chat_search
    from blog.chat_panel import CHATS_PER_PAGE, PANEL_CHATS, blog_sessions, labelled, listed, shown_chats

    def chats(words: str) -> Any:
        sessions = listed(blog_sessions(person, blog))
        return chat_search.matching(sessions, words)[0] if words else sessions

    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    for words in ("", SEARCH):
        last_full = max(chats(words).count() // CHATS_PER_PAGE, 1)  # (the latest chat may add a page of one)
        for name, number in (("first", 1), (f"{last_full} (the last full one)", last_full)):
            label = f"chats page {name}" + (f", q={words}" if words else "")
            old = lambda n=number, w=words: old_page(chats(w), n, w)  # noqa: E731
            new = lambda n=number, w=words: new_page(chats(w), n, w)  # noqa: E731
            cases[label] = (old, old if control else new)
    panel_old = lambda: labelled(listed(blog_sessions(person, blog))[:PANEL_CHATS])  # noqa: E731
    panel_new = lambda: shown_chats(listed(blog_sessions(person, blog)).values("pk")[:PANEL_CHATS])  # noqa: E731
    cases["panel's latest chats"] = (panel_old, panel_old if control else panel_new)

    out: dict[str, Any] = {}
    for label, (old, new) in cases.items():
        with CaptureQueriesContext(connection) as q_old:
            rows_old = old()
        with CaptureQueriesContext(connection) as q_new:
            rows_new = new()
        same = shown(rows_old) == shown(rows_new)
        times: dict[str, list[float]] = {"old": [], "new": []}
        for i in range(runs):  # alternating, each side first in turn
            sides = [("old", old), ("new", new)] if i % 2 == 0 else [("new", new), ("old", old)]
            for side, fn in sides:
                times[side].append(timed(fn)[0])
        o, n = statistics.median(times["old"]), statistics.median(times["new"])
        out[label] = {
            "rows": len(rows_new),
            "same rows and labels": same,
            "statements old/new": [len(q_old.captured_queries), len(q_new.captured_queries)],
            "old ms": round(o, 2),
            "new ms": round(n, 2),
            "new/old": round(n / o, 2),
            "fastest old/new ms": [round(min(times["old"]), 2), round(min(times["new"]), 2)],
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", choices=["sqlite", "pg"], default="sqlite")
    ap.add_argument("--chats", type=int, default=3000, help="the person's chats")
    ap.add_argument("--others", type=int, default=50, help="other people on the blog")
    ap.add_argument("--per-other", type=int, default=200, help="chats of each other person")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--control", action="store_true", help="the old way on both sides")
    args = ap.parse_args()
    with ExitStack() as stack:
        if args.db == "pg":
            from bench.pg import pg_database

            db = stack.enter_context(pg_database("bench_chats"))
            setup_env(f"postgres://postgres@127.0.0.1:5432/{db}")
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-chats-"))
            setup_env(f"sqlite:///{tmp}/bench.sqlite3")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        person, blog = fill(args.chats, args.others, args.per_other)
        filled = round(time.perf_counter() - started, 1)
        result = measure(person, blog, args.runs, args.control)
        connections.close_all()  # (before the database is dropped)
    print(json.dumps({"db": args.db, "chats": args.chats, "control": args.control, "fill s": filled, **result}))


if __name__ == "__main__":
    main()
