"""The project's settings, served over ASGI by uvicorn with the bench's async views (scenario 3)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.asgi_views"
