"""The transcript admin as an auditor uses it: read-only, latest activity first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from agent.models import Session
from agent.state import Run
from agent.transcript import add_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def auditor(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("audit", password="audit-pass-123"))
    return client


def test_sessions_and_messages_are_listed_latest_first(auditor, user):
    now = timezone.now()
    sessions = [Session.objects.create(user=user, purpose="chat") for _ in range(3)]
    for age, session in zip((5, 1, 3), sessions, strict=True):
        Session.objects.filter(pk=session.pk).update(updated_at=now - timedelta(minutes=age))
    body = auditor.get("/admin/agent/session/").content.decode()
    order = sorted(sessions, key=lambda s: body.index(str(s.pk)))
    assert order == [sessions[1], sessions[2], sessions[0]]

    first = add_message(Run(sessions[0]), "user", [{"type": "text", "text": "older words"}])
    second = add_message(Run(sessions[1]), "user", [{"type": "text", "text": "newer words"}])
    from agent.models import Message

    Message.objects.filter(pk=first.pk).update(created_at=now - timedelta(minutes=2))
    body = auditor.get("/admin/agent/message/").content.decode()
    assert body.index(f"/admin/agent/message/{second.pk}/") < body.index(f"/admin/agent/message/{first.pk}/")


def test_the_transcript_cannot_be_changed_in_the_admin(auditor, user):
    session = Session.objects.create(user=user, purpose="chat")
    assert auditor.get("/admin/agent/session/add/").status_code == 403
    response = auditor.post(f"/admin/agent/session/{session.pk}/change/", {"purpose": "other"})
    assert response.status_code in (403, 200)
    session.refresh_from_db()
    assert session.purpose == "chat"


def test_a_session_page_shows_whether_it_waits_for_people(auditor, user):
    session = Session.objects.create(user=user, purpose="chat", awaiting_people=True)
    response = auditor.get(f"/admin/agent/session/{session.pk}/change/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Awaiting people" in body and "icon-yes" in body.split("Awaiting people", 1)[1][:400]


def test_the_session_page_lists_its_own_fields_first(auditor, user):
    session = Session.objects.create(user=user, purpose="chat")
    body = auditor.get(f"/admin/agent/session/{session.pk}/change/").content.decode()
    assert body.index("Id:") < body.index("Awaiting people")
