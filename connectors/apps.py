from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors (MCP)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from blog.models import Consent, Seat
        from blog.signals import consent_revoked
        from connectors.clients import consent_revoked as revoke_clients_tokens
        from connectors.clients import seat_removed

        # Leaving a blog ends what the person's clients may do there, tokens and all.
        pre_delete.connect(seat_removed, sender=Seat, dispatch_uid="connectors.seat_removed")
        # So does revoking a client's grant, wherever that is done.
        consent_revoked.connect(revoke_clients_tokens, sender=Consent, dispatch_uid="connectors.consent_revoked")
