from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    verbose_name = "Assistant transcripts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from agent import checks  # noqa: F401  (registers the checks)
        from agent.media import session_deleted
        from agent.models import Session

        pre_delete.connect(session_deleted, sender=Session, dispatch_uid="agent.session_deleted")
