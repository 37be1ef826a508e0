"""Run a few lines in a fresh process under gevent's monkey-patching, as a gunicorn gevent worker does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The start of a probe: a process as a gunicorn gevent worker is, monkey-patched, then the site's Django set up.
UNDER_GEVENT = """
from gevent import monkey
monkey.patch_all()
import os, time
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
os.environ["DEBUG"] = "1"
import django
django.setup()
import gevent
"""

# Counts how often a greenlet ticks while `{work}` runs (after `{setup}`): 0 if the work blocks gevent.
TICKS_PROBE = (
    UNDER_GEVENT
    + r"""{setup}

ticks = []
def ticker():
    while True:
        ticks.append(time.monotonic())
        gevent.sleep(0.01)

t = gevent.spawn(ticker)
gevent.sleep(0.05)
start = len(ticks)
{work}
t.kill()
print(len(ticks) - start)
"""
)


def run_probe(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`code` run by this interpreter in the project's root; it must exit 0 (else its stderr is shown)."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out


def ticks_while(setup: str, work: str, env: dict[str, str] | None = None) -> int:
    """How often another greenlet ran while `work` did: 0 when `work` held the whole worker."""
    out = run_probe(TICKS_PROBE.format(setup=setup, work=work), env)
    return int(out.stdout.strip().splitlines()[-1])
