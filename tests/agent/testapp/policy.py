"""Who may open, read and use a notebook's chat: the toy domain's `SessionPolicy`."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from agent.models import Session
from agent.policy import SessionPolicy
from tests.agent.testapp.models import Notebook, NotebookLink


def notebook_of(session: Session) -> Notebook | None:
    """The session's notebook, None for a plain chat (read afresh unless loaded with the session)."""
    if Session.notebook_link.is_cached(session):
        link = getattr(session, "notebook_link", None)  # None: loaded, and there is no link
    else:
        link = NotebookLink.objects.select_related("notebook").filter(session=session).first()
    return link.notebook if link else None


class NotebookPolicy(SessionPolicy):
    """A chat names one of the user's notebooks; archived ones are read-only, sealed ones unreadable.

    A session with no notebook (made directly, as most engine tests do) is an ordinary chat.
    """

    related = ("notebook_link__notebook",)

    def create(self, user: Any, data: dict[str, Any]) -> Session:
        name = data.get("notebook")
        if not isinstance(name, str) or not name:
            raise ValidationError('Name the notebook: {"notebook": "<name>"}.')
        notebook = Notebook.objects.filter(name=name, owner=user).first()
        if notebook is None:
            raise Http404("No such notebook.")
        if notebook.state != Notebook.OPEN:
            raise PermissionDenied("This notebook is closed to the assistant.")
        session = Session.objects.create(user=user, purpose="chat", system_prompt=f"You keep the notebook {name}.")
        NotebookLink.objects.create(session=session, notebook=notebook)
        return session

    def page_url(self, session: Session) -> str | None:
        """Where the project would show a notebook's chat (a plain chat has no page)."""
        notebook = notebook_of(session)
        return None if notebook is None else f"/notebooks/{notebook.pk}/?chat={session.pk}"

    def may_use(self, session: Session) -> bool:
        notebook = notebook_of(session)
        return notebook is None or notebook.state == Notebook.OPEN

    def may_read(self, session: Session) -> bool:
        notebook = notebook_of(session)
        return notebook is None or notebook.state != Notebook.SEALED
