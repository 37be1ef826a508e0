"""Work taken off the event loop under gevent: its outcome comes back to the caller as if it ran inline."""

from __future__ import annotations

import json

from tests.gevent_probe import run_probe

# Under gevent's monkey-patching (as in a gunicorn gevent worker), runs `off_the_loop` three ways and
# prints what the caller saw as JSON; stderr is whatever the process printed besides.
OUTCOMES = r"""
from gevent import monkey
monkey.patch_all()
import json, os, tempfile, traceback
os.environ.update(DJANGO_SETTINGS_MODULE="tests.agent.settings",
                  DATABASE_URL="sqlite:///" + os.path.join(tempfile.mkdtemp(), "db.sqlite3"))
import django
django.setup()
from django.db import transaction
from gevent.monkey import get_original
from agent.runtime import off_the_loop
from agent.uploads import UploadRefused, check_all

thread_of = get_original("threading", "get_ident")
here = thread_of()
seen = {}

def refused():
    try:
        off_the_loop(check_all, [("setup.png", b"not an image at all")])
    except UploadRefused as exc:
        frames = [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
        return {"code": exc.code, "message": exc.message, "raised_in_check": "check_one" in frames}
    return None

seen["refused"] = refused()
seen["returned"] = off_the_loop(sum, [1, 2, 3])
seen["pool_thread"] = off_the_loop(thread_of) != here
with transaction.atomic():
    seen["in_sqlite_transaction_inline"] = off_the_loop(thread_of) == here
print(json.dumps(seen))
"""


def test_what_the_pool_s_work_raises_is_raised_in_the_caller_and_printed_by_no_one():
    """An expected refusal (a "setup.png" that is not an image) reaches the caller with its code, its
    sentence and the traceback of where it was raised; gevent's pool prints no traceback to stderr,
    which an operator would read as a failure of the worker."""
    out = run_probe(OUTCOMES)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["refused"] == {
        "code": "unsupported_type",
        "message": seen["refused"]["message"],
        "raised_in_check": True,
    }
    assert "setup.png" in seen["refused"]["message"]
    assert "Traceback" not in out.stderr and "UploadRefused" not in out.stderr, out.stderr
    assert seen["returned"] == 6
    assert seen["pool_thread"] is True


def test_inside_a_sqlite_transaction_the_work_runs_inline():
    """SQLite's transaction holds the write lock; waiting on the pool inside it would let another
    greenlet's write stall the worker in SQLite's busy handler, so the work stays on the caller's thread."""
    seen = json.loads(run_probe(OUTCOMES).stdout.strip().splitlines()[-1])
    assert seen["in_sqlite_transaction_inline"] is True
