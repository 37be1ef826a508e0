"""Test settings: the environment's defaults for a test run, then the real settings."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
os.environ.setdefault("AGENT_TURN_EXECUTOR", "inline")
os.environ.setdefault("AGENT_BACKEND", "fake")
os.environ.setdefault("AGENT_DEMO_DELAY_MS", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from config.settings import *  # noqa: E402,F403

# Attachments land in a folder of this test process, never the project's media folder.
MEDIA_ROOT = tempfile.mkdtemp(prefix="test-media-")
# Removed when this process ends (a run, or a subprocess a test starts with these settings), by the
# process that made it, never by a forked child.
media_made_by = os.getpid()  # (lower case: not a setting)
atexit.register(lambda: os.getpid() == media_made_by and shutil.rmtree(MEDIA_ROOT, ignore_errors=True))

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
