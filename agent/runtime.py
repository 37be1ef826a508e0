"""What the process runs under."""

from __future__ import annotations


def gevent_patched() -> bool:
    """True under gunicorn's gevent worker (sockets monkey-patched), where greenlets are the unit of work."""
    try:
        from gevent import monkey
    except ImportError:
        return False
    return monkey.is_module_patched("socket")
