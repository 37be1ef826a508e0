"""What the process runs under."""

from __future__ import annotations

_patched = False  # once patched, a process stays patched


def gevent_patched() -> bool:
    """True under gunicorn's gevent worker (sockets monkey-patched), where greenlets are the unit of work.

    Asked on every wait of every stream: after the first True it answers without looking again.
    """
    global _patched
    if _patched:
        return True
    try:
        from gevent import monkey
    except ImportError:
        return False
    _patched = monkey.is_module_patched("socket")
    return _patched
