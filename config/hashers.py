"""Password hashing that does not freeze a gevent worker."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher

from agent.runtime import gevent_patched


class GeventPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 hashes, unchanged; under gevent the key stretching runs on a real thread.

    PBKDF2 is ~0.5 s of CPU per login and hashlib releases the GIL while it runs, so on gevent's
    thread pool the worker's other greenlets keep streaming instead of stalling on every login.
    """

    def encode(self, password, salt, iterations=None):
        if gevent_patched():
            import gevent

            parent = super().encode
            return gevent.get_hub().threadpool.apply(parent, (password, salt, iterations))
        return super().encode(password, salt, iterations)
