"""Sign-in against the user table; the read of the signed-in user on every request is compiled once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import backends, get_user_model
from django.core.exceptions import PermissionDenied

from agent.prepared import Prepared, Slot

_USER = Prepared(lambda: get_user_model()._default_manager.filter(pk=Slot("pk"))[:1])


class ModelBackend(backends.ModelBackend):
    """Django's `ModelBackend` (the same passwords, permissions and inactive-user rule), with two
    differences: the user of a signed-in session is read by a prepared query (agent/prepared.py),
    and a failed sign-in ends the attempt here.

    Settings list Django's own backend after this one only so that sessions signed in before this
    backend existed (they name Django's backend) stay signed in; ending a failed attempt here keeps
    that entry from checking the same password a second time.
    """

    def authenticate(self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            raise PermissionDenied
        return user

    def get_user(self, user_id: Any) -> Any:
        user = _USER.first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
