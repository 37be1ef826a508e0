"""What the process runs under."""

from __future__ import annotations

from typing import Any

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


def off_the_loop(fn: Any, *args: Any) -> Any:
    """`fn(*args)` in gevent's thread pool under gevent, else inline: for work that takes long in one
    piece (decoding an image, reading a PDF), so it never stalls the worker's other streams outright
    (Pillow works without the GIL; pure-Python work shares it with them)."""
    if gevent_patched():
        import gevent

        return gevent.get_hub().threadpool.apply(fn, args)
    return fn(*args)
