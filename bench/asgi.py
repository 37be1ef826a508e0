"""`uvicorn bench.asgi:application`: the ASGI alternative (scenario 3)."""

import os

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.asgi_settings"

from django.core.asgi import get_asgi_application  # noqa: E402

application = get_asgi_application()
