"""Sign-in: failed attempts per username are limited, across workers, without checking the password."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import FailedLogin

pytestmark = pytest.mark.django_db


def attempt(client, username, password):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_after_ten_failures_even_the_right_password_waits(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 10
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(10):
        assert attempt(client, "alice", "wrong").status_code == 200
    response = attempt(client, "Alice", "right-pass-123")  # usernames compared case-insensitively
    assert response.status_code == 429
    assert "Too many failed attempts for this username. Try again in 15 minutes." in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert FailedLogin.objects.count() == 10  # a refused attempt is not even counted


def test_the_lock_lifts_after_the_window_and_other_users_are_untouched(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    django_user_model.objects.create_user("bob", password="bobs-pass-1234")
    client = Client()
    for _ in range(3):
        attempt(client, "alice", "wrong")
    assert attempt(Client(), "bob", "bobs-pass-1234").status_code == 302
    FailedLogin.objects.update(created_at=timezone.now() - timedelta(minutes=16))
    assert attempt(client, "alice", "right-pass-123").status_code == 302


def test_a_limit_of_zero_turns_it_off(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 0
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(12):
        attempt(client, "alice", "wrong")
    assert attempt(client, "alice", "right-pass-123").status_code == 302
