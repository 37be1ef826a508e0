"""Signed-in sessions: Django's own session engine and ModelBackend, and sessions stored before them."""

from __future__ import annotations

import importlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session as StoredSession
from django.db import connection
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

DJANGOS_BACKEND = "django.contrib.auth.backends.ModelBackend"
RETIRED_BACKEND = "accounts.backends.ModelBackend"


class SessionStore(db.SessionStore):
    """The retired `accounts.sessions` engine as it wrote rows: Django's database store, the class
    named the same (the name salts the signature), only its read of a row changed."""


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="right-pass-123")


def sign_in(username="alice", password="right-pass-123") -> Client:
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content[:300]
    return client


SIGNED_IN, SIGNED_OUT = 200, 302


def user_of(client: Client):
    """Whether the site sees a user for this client's cookie (a fresh request: session and user read
    again): a page behind `login_required` answers, or redirects to the sign-in page."""
    return client.get("/accounts/password_change/").status_code


def stored_session(user, backend: str, store_class=db.SessionStore) -> str:
    store = store_class()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = backend
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key


def client_with(session_key: str, settings) -> Client:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return client


def test_the_site_uses_djangos_own_session_engine_and_backend(settings):
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"
    assert settings.AUTHENTICATION_BACKENDS == [DJANGOS_BACKEND]


def test_a_signed_in_session_is_read_back_on_each_request(alice):
    client = sign_in()
    assert user_of(client) == SIGNED_IN
    assert client.session[BACKEND_SESSION_KEY] == DJANGOS_BACKEND


def test_an_expired_or_deleted_session_signs_out(alice):
    client = sign_in()
    StoredSession.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert user_of(client) == SIGNED_OUT
    client = sign_in()
    StoredSession.objects.all().delete()
    assert user_of(client) == SIGNED_OUT


def test_an_inactive_user_or_a_changed_password_signs_out(alice):
    client = sign_in()
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert user_of(client) == SIGNED_OUT
    User.objects.filter(pk=alice.pk).update(is_active=True)
    client = sign_in()
    alice.set_password("another-pass-456")
    alice.save()
    assert user_of(client) == SIGNED_OUT


def test_a_row_the_retired_session_engine_wrote_loads(alice, settings):
    key = stored_session(alice, DJANGOS_BACKEND, store_class=SessionStore)
    assert user_of(client_with(key, settings)) == SIGNED_IN


def test_sessions_signed_in_through_the_retired_backend_stay_signed_in_after_migrating(alice, settings):
    migration = importlib.import_module("accounts.migrations.0002_sessions_name_djangos_backend")
    retired = stored_session(alice, RETIRED_BACKEND, store_class=SessionStore)
    current = stored_session(alice, DJANGOS_BACKEND)
    untouched = StoredSession.objects.get(pk=current).session_data
    assert user_of(client_with(retired, settings)) == SIGNED_OUT  # a backend no longer listed: Django signs it out

    migration.name_djangos_backend(apps, SimpleNamespace(connection=connection))  # what migrate passes
    assert StoredSession.objects.get(pk=retired).get_decoded()[BACKEND_SESSION_KEY] == DJANGOS_BACKEND
    assert StoredSession.objects.get(pk=current).session_data == untouched
    assert user_of(client_with(retired, settings)) == SIGNED_IN


def test_a_wrong_password_is_checked_once_and_refused(alice, monkeypatch):
    checks = []
    real = User.check_password
    monkeypatch.setattr(User, "check_password", lambda self, raw: checks.append(raw) or real(self, raw))
    response = Client().post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200 and "_auth_user_id" not in response.client.session
    assert checks == ["wrong"]
    checks.clear()
    assert sign_in() and checks == ["right-pass-123"]


def test_signing_in_never_keeps_a_session_key_someone_else_chose(alice, settings):
    """Guard (session fixation): a key planted in the browser before signing in (another site's
    cookie injection, a shared computer) is not the key of the signed-in session, and no longer
    stands for anything."""
    planted = Client()
    planted.get("/accounts/login/")
    session = planted.session
    session["seen"] = True
    session.save()
    key = session.session_key
    victim = client_with(key, settings)

    assert victim.post("/accounts/login/", {"username": "alice", "password": "right-pass-123"}).status_code == 302

    assert victim.cookies[settings.SESSION_COOKIE_NAME].value != key
    assert not StoredSession.objects.filter(pk=key).exists()
    assert user_of(client_with(key, settings)) == SIGNED_OUT
    assert user_of(victim) == SIGNED_IN


def test_a_password_change_keeps_this_session_under_a_new_key_and_ends_the_others(alice):
    """Guard: the person changing their password stays signed in (Django's update_session_auth_hash,
    with a new key); every other session of theirs (a thief's) is signed out at its next request."""
    mine, thiefs = sign_in(), sign_in()
    before = mine.cookies["sessionid"].value
    change = {"old_password": "right-pass-123", "new_password1": "Zz-new-pass-987", "new_password2": "Zz-new-pass-987"}

    assert mine.post("/accounts/password_change/", change).status_code == 302

    assert mine.cookies["sessionid"].value != before
    assert (user_of(mine), user_of(thiefs)) == (SIGNED_IN, SIGNED_OUT)
