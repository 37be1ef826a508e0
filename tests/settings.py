"""Test settings: the environment's defaults for a test run, then the real settings."""

import os
import tempfile

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
os.environ.setdefault("AGENT_TURN_EXECUTOR", "inline")
os.environ.setdefault("AGENT_BACKEND", "fake")
os.environ.setdefault("AGENT_DEMO_DELAY_MS", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from config.settings import *  # noqa: E402,F403

# Attachments land in a folder of this test process, never the project's media folder
# (tests/conftest.py removes it at the end).
MEDIA_ROOT = tempfile.mkdtemp(prefix="test-media-")

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
