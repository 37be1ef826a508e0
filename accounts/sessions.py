"""Django's database sessions, with the read every request makes compiled once (agent/prepared.py).

The same table, rows and cookie as `django.contrib.sessions.backends.db`: switching to this engine
(or back) keeps everyone signed in.
"""

from __future__ import annotations

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.utils import timezone

from agent.prepared import Prepared, Slot

_CURRENT = Prepared(lambda: Session.objects.filter(session_key=Slot("key"), expire_date__gt=Slot("now"))[:1])


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Session | None:
        found = _CURRENT.first(key=self.session_key, now=timezone.now())
        if found is None:
            self._session_key = None  # as Django's: an unknown or expired key is dropped
        return found
