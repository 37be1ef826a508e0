"""Test settings: the environment's defaults for a test run, then the real settings."""

import os

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
os.environ.setdefault("AGENT_TURN_EXECUTOR", "inline")
os.environ.setdefault("AGENT_BACKEND", "fake")
os.environ.setdefault("AGENT_DEMO_DELAY_MS", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
