from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The deploy layer as an app: its checks run wherever Django's do (start-up, `check`, `migrate`)."""

    name = "config"
    verbose_name = "Site"

    def ready(self) -> None:
        from config import checks  # noqa: F401 (registers them)
