"""Who may open and use a chat session: the one place a domain plugs its rules into the engine."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.module_loading import import_string

from agent.conf import settings
from agent.models import Session


@dataclass(frozen=True)
class Access:
    """What a session's user may still do in it, as the policy answered once for one request."""

    read: bool  # its transcript and streams
    use: bool  # send messages, decide approvals (never without `read`)


class SessionPolicy:
    """The default: any signed-in user may open sessions of any purpose with no system prompt."""

    #: Relations loaded with a session for a request (`select_related` names), so the checks
    #: below find what they need without a query of their own.
    related: tuple[str, ...] = ()

    def create(self, user: Any, data: dict[str, Any]) -> Session:
        """Create a session from the API body, or raise PermissionDenied (403), Http404 (404) or
        ValidationError (400, its message shown to the person as the reason). Any other exception is
        a bug: logged, and answered as any server error, its text never shown."""
        purpose = data.get("purpose") or "chat"
        if not isinstance(purpose, str) or len(purpose) > 40:
            raise ValidationError("purpose must be a short string.")
        return Session.objects.create(user=user, purpose=purpose)

    def may_use(self, session: Session) -> bool:
        """Whether the session's user may still send messages in it."""
        return True

    def may_read(self, session: Session) -> bool:
        """Whether the session's user may still read it (its transcript and streams)."""
        return True

    def page_url(self, session: Session) -> str | None:
        """The page in the browser where the session's person reads it, or None (the default) for none.

        A chat's forms (a message, an approval) sent without htmx, before the page's scripts have run or
        where they never do, are answered with a redirect to this page, what they said (or why it was
        refused) shown there; with None they are answered as htmx is, with the chat's fragment."""
        return None

    def access(self, session: Session) -> Access:
        """Both answers at once, for a request that needs both (sending a message). A policy whose
        two checks read the same rows overrides this to read them once."""
        read = self.may_read(session)
        return Access(read=read, use=read and self.may_use(session))


@cache
def _policy(path: str) -> SessionPolicy:
    return import_string(path)()


def get_policy() -> SessionPolicy:
    return _policy(settings.AGENT_SESSION_POLICY or "agent.policy.SessionPolicy")
