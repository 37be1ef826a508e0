from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors (MCP)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from blog.models import Seat
        from connectors.clients import seat_removed

        # Leaving a blog ends what the person's clients may do there, tokens and all.
        pre_delete.connect(seat_removed, sender=Seat, dispatch_uid="connectors.seat_removed")
