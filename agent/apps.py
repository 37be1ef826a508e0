from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    verbose_name = "Assistant transcripts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agent import checks  # noqa: F401  (registers the checks)
