"""Logins hash on a real thread under gevent, and the hashes are Django's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from django.contrib.auth.hashers import PBKDF2PasswordHasher

from config.hashers import GeventPBKDF2PasswordHasher

ROOT = Path(__file__).resolve().parent.parent


def test_same_hashes_as_djangos_pbkdf2():
    ours, django = GeventPBKDF2PasswordHasher(), PBKDF2PasswordHasher()
    encoded = ours.encode("s3cret-pass", "somesalt", 1000)
    assert encoded == django.encode("s3cret-pass", "somesalt", 1000)
    assert ours.algorithm == "pbkdf2_sha256"
    assert django.verify("s3cret-pass", encoded) and ours.verify("s3cret-pass", encoded)


PROBE = r"""
from gevent import monkey
monkey.patch_all()
import os, time
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
os.environ["DEBUG"] = "1"
import django
django.setup()
import gevent
from config.hashers import GeventPBKDF2PasswordHasher

ticks = []
def ticker():
    while True:
        ticks.append(time.monotonic())
        gevent.sleep(0.01)

t = gevent.spawn(ticker)
gevent.sleep(0.05)
start = len(ticks)
GeventPBKDF2PasswordHasher().encode("pw", "salt", 600_000)
t.kill()
print(len(ticks) - start)
"""


def test_hashing_under_gevent_lets_other_greenlets_run():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # While the key is stretched, the ticker greenlet keeps running (it would not tick at all if blocked).
    assert int(out.stdout.strip().splitlines()[-1]) >= 5
