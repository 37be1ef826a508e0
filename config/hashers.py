"""Password hashing that does not freeze a gevent worker."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher

from agent.runtime import off_the_loop


class GeventPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 hashes, unchanged; under gevent the key stretching runs on a real thread.

    PBKDF2 is ~0.5 s of CPU per login and hashlib releases the GIL while it runs, so on gevent's
    thread pool the worker's other greenlets keep streaming instead of stalling on every login.
    Inline inside a SQLite transaction (the admin's "add user" hashes inside one), for the reason
    `agent.runtime.off_the_loop` gives.
    """

    def encode(self, password, salt, iterations=None):
        return off_the_loop(super().encode, password, salt, iterations)
