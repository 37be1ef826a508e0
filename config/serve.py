"""`python -m config.serve [gunicorn options]`: the site under gunicorn as deployed (the Procfile's `web`,
`make run`), `config/gunicorn.conf.py` its configuration.

gunicorn reads `WEB_CONCURRENCY` as it is imported, before any configuration file runs: a value that
is no whole number (`abc`, `1.5`, set but empty) failed there with a traceback of gunicorn's own.
Here it is read first, and a value gunicorn would choke on or serve nothing with stops the start
in one sentence naming the variable.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

CONF = Path(__file__).resolve().with_name("gunicorn.conf.py")


def count_from_env(environ: Mapping[str, str], name: str, default: int, *, what: str) -> int:
    """`name` read as a count of `what`, 1 or more; unset or blank = `default`. Any other value stops the
    process saying so, in one sentence (a `SystemExit`: gunicorn prints no traceback for it)."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        raise SystemExit(f"{name} must be a whole number of {what}, 1 or more; got {raw!r}.")
    return int(raw)


def bind_from_env(environ: Mapping[str, str]) -> str:
    """The address gunicorn binds: `BIND`, else `0.0.0.0:$PORT` when `PORT` is set (a PaaS), else
    127.0.0.1:8000. A port past 65535 stops the process in one sentence (gunicorn took it, then failed to
    bind with a traceback); other malformed addresses are gunicorn's own one-line errors."""
    bind = environ.get("BIND", "").strip()
    if bind:
        port = re.fullmatch(r"(?!unix:|fd://).*:([0-9]+)", bind)
        if port and int(port.group(1)) > 65535:
            raise SystemExit(f"BIND's port must be 0 to 65535; got {bind!r}.")
        return bind
    port_text = environ.get("PORT", "").strip()
    if not port_text:
        return "127.0.0.1:8000"
    if not re.fullmatch(r"[0-9]+", port_text) or int(port_text) > 65535:
        raise SystemExit(f"PORT must be a port number, 0 to 65535; got {port_text!r}.")
    return f"0.0.0.0:{port_text}"


def main(argv: list[str]) -> None:
    environ = dict(os.environ)
    bind_from_env(environ)
    count_from_env(environ, "WEB_CONCURRENCY", 1, what="worker processes")
    if not environ.get("WEB_CONCURRENCY", "").strip():
        environ.pop("WEB_CONCURRENCY", None)  # (set but blank means the default, which gunicorn's int() refuses)
    gunicorn = [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", str(CONF), *argv]
    os.execve(sys.executable, gunicorn, environ)  # (gunicorn in this process: a platform's signals reach it)


if __name__ == "__main__":
    main(sys.argv[1:])
