"""Signed-in sessions and the user behind them, read by prepared queries: Django's rules still hold."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session as StoredSession
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="right-pass-123")


def sign_in(username="alice", password="right-pass-123") -> Client:
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content[:300]
    return client


def user_of(client: Client):
    """The user the site sees for this client's cookie (a fresh request: session and user read again)."""
    response = client.get("/api/agent/sessions/00000000-0000-4000-8000-000000000000")
    return response.status_code  # 401 when signed out, 404 (no such chat) when signed in


def test_a_signed_in_session_is_read_back_on_each_request(alice):
    client = sign_in()
    assert user_of(client) == 404
    assert client.session[BACKEND_SESSION_KEY] == "accounts.backends.ModelBackend"


def test_an_expired_or_deleted_session_signs_out(alice):
    client = sign_in()
    StoredSession.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert user_of(client) == 401
    client = sign_in()
    StoredSession.objects.all().delete()
    assert user_of(client) == 401


def test_an_inactive_user_or_a_changed_password_signs_out(alice):
    client = sign_in()
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert user_of(client) == 401
    User.objects.filter(pk=alice.pk).update(is_active=True)
    client = sign_in()
    alice.set_password("another-pass-456")
    alice.save()
    assert user_of(client) == 401


def test_sessions_signed_in_with_djangos_own_backend_stay_signed_in(alice, settings):
    """Rows written before this backend existed name Django's; the engine reads Django's rows."""
    store = DjangoStore()
    store[SESSION_KEY] = str(alice.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = alice.get_session_auth_hash()
    store.create()
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = store.session_key
    assert user_of(client) == 404


def test_a_wrong_password_is_checked_once_and_refused(alice, monkeypatch):
    checks = []
    real = User.check_password
    monkeypatch.setattr(User, "check_password", lambda self, raw: checks.append(raw) or real(self, raw))
    response = Client().post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200 and "_auth_user_id" not in response.client.session
    assert checks == ["wrong"]  # Django's backend, listed after ours, did not check it again
    checks.clear()
    assert sign_in() and checks == ["right-pass-123"]
