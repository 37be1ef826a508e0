"""Logins hash on a real thread under gevent, and the hashes are Django's own."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher

from config.hashers import GeventPBKDF2PasswordHasher
from tests.gevent_probe import run_probe, ticks_while


def test_same_hashes_as_djangos_pbkdf2():
    ours, django = GeventPBKDF2PasswordHasher(), PBKDF2PasswordHasher()
    encoded = ours.encode("s3cret-pass", "somesalt", 1000)
    assert encoded == django.encode("s3cret-pass", "somesalt", 1000)
    assert ours.algorithm == "pbkdf2_sha256"
    assert django.verify("s3cret-pass", encoded) and ours.verify("s3cret-pass", encoded)


def test_a_sign_in_checks_its_password_without_blocking_other_greenlets():
    """The path a sign-in takes (`check_password` picks the hasher by the hash's algorithm, with the
    site's PASSWORD_HASHERS): the worker's other greenlets keep running while the key is stretched."""
    setup = "from django.contrib.auth.hashers import check_password, make_password\nENCODED = make_password('pw')"
    assert ticks_while(setup, "check_password('pw', ENCODED)") >= 5


def test_hashing_under_gevent_lets_other_greenlets_run():
    # While the key is stretched, the ticker greenlet keeps running (it would not tick at all if blocked).
    setup = "from config.hashers import GeventPBKDF2PasswordHasher"
    assert ticks_while(setup, 'GeventPBKDF2PasswordHasher().encode("pw", "salt", 600_000)') >= 5


LOCKED_PROBE = r"""
from gevent import monkey
monkey.patch_all()
import os, sys, tempfile
os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1",
                  DATABASE_URL="sqlite:///" + os.path.join(tempfile.mkdtemp(), "db.sqlite3"))
import django
django.setup()
from django.conf import settings
settings.DATABASES["default"]["OPTIONS"]["timeout"] = 3
import gevent
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connections, transaction
call_command("migrate", verbosity=0)
User = get_user_model()
User.objects.create(username="other")
connections.close_all()
result = []

def add_user():  # as the admin's "add user" does: the password hashed inside its transaction
    with transaction.atomic():
        user = User(username="new")
        user.set_password("a long enough password 123")
        user.save()
    connections.close_all()

def another_write():
    gevent.sleep(0.05)
    try:
        User.objects.filter(username="other").update(first_name="x")
        result.append("ok")
    except Exception as exc:
        result.append(type(exc).__name__)
    connections.close_all()

gevent.joinall([gevent.spawn(add_user), gevent.spawn(another_write)])
print(result[0])
"""


def test_hashing_inside_a_sqlite_transaction_never_locks_out_the_worker_s_other_writes():
    """On SQLite a transaction holds the write lock; yielding inside it while hashing let another
    greenlet's write wait in SQLite's busy handler, which blocks the whole worker until it fails."""
    out = run_probe(LOCKED_PROBE)
    assert out.stdout.strip().splitlines()[-1] == "ok"
