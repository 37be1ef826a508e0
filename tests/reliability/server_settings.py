"""The real production settings for servers the reliability tests start, with one change.

`STATIC_ROOT` points at a temporary folder the tests fill with `collectstatic`, so a server
with `DEBUG=0` (whitenoise's manifest storage) can render pages without writing into the
project's own `staticfiles/`. Everything else is `config.settings` exactly as deployed.
"""

import os

from config.settings import *  # noqa: F403

if os.environ.get("RELIABILITY_STATIC_ROOT"):
    STATIC_ROOT = os.environ["RELIABILITY_STATIC_ROOT"]
