"""Signals other apps may listen to."""

from django.dispatch import Signal

#: A grant was revoked, wherever that was done (the person's Clients screen, the admin): sent with
#: `consent`, inside the revoke's transaction. `connectors` revokes the client's tokens on it.
consent_revoked = Signal()
