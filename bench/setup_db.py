"""Create the benchmark's users, blog, grants, chat sessions and signed-in cookies; print a manifest path.

Run with the bench environment: `python -m bench.setup_db --sessions N --tag T --out manifest.json`.
Users are made with unusable passwords (no password hashing) and signed in by writing Django
sessions directly, so setting up 2,000 streams takes seconds. One user per stream: each has
an editor seat on one blog with the assistant allowed and a full grant, so every tool is offered
(the realistic catalogue cost) and the budget ledger is per user.
"""

from __future__ import annotations

import argparse
import importlib
import json
import secrets
import string

import django


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, required=True, help="chat sessions to create (one per user)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    django.setup()

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.db import transaction

    from bench.project import editor_scopes, start_session
    from blog.models import Blog, Consent, Seat

    SessionStore = importlib.import_module(settings.SESSION_ENGINE).SessionStore  # the site's own store

    User = get_user_model()
    n = args.sessions
    with transaction.atomic():
        owner, _ = User.objects.get_or_create(username="bench_owner")
        blog, _ = Blog.objects.get_or_create(slug="bench-blog", defaults={"title": "Bench", "owner": owner})
        Seat.objects.get_or_create(user=owner, blog=blog, defaults={"role": Seat.OWNER, "may_use_assistant": True})
        have = User.objects.filter(username__startswith="bench_u").count()
        if have < n:
            scopes = editor_scopes()
            new = [User(username=f"bench_u{i:05d}", password="!bench") for i in range(have, n)]
            User.objects.bulk_create(new)
            users = list(User.objects.filter(username__in=[u.username for u in new]))
            Seat.objects.bulk_create([Seat(user=u, blog=blog, role=Seat.EDITOR, may_use_assistant=True) for u in users])
            Consent.objects.bulk_create([Consent(user=u, blog=blog, client="", scopes=scopes) for u in users])
        users = list(User.objects.filter(username__startswith="bench_u").order_by("username")[:n])
        alphabet = string.ascii_letters + string.digits
        rows = []
        for user in users:
            session = start_session(user, blog)
            store = SessionStore()
            store[SESSION_KEY] = str(user.pk)
            store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
            store[HASH_SESSION_KEY] = user.get_session_auth_hash()
            store.create()
            csrf = "".join(secrets.choice(alphabet) for _ in range(32))  # an unmasked secret: Django accepts it
            rows.append(
                {
                    "session": str(session.pk),
                    "csrf": csrf,
                    "cookie": f"{settings.SESSION_COOKIE_NAME}={store.session_key}; {settings.CSRF_COOKIE_NAME}={csrf}",
                }
            )
    with open(args.out, "w") as fh:
        json.dump(rows, fh)
    print(args.out)


if __name__ == "__main__":
    main()
