"""No mail is set up, so there is no password reset by mail: its pages do not exist (README, "Using it", "Signing in")."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/set-password/",
        "/accounts/reset/done/",
    ],
)
def test_the_password_reset_pages_do_not_exist(path):
    assert Client().get(path).status_code == 404
    assert Client().post(path, {"email": "alice@example.com"}).status_code in (403, 404)


def test_the_admin_sign_in_offers_no_reset_link(django_user_model):
    body = Client().get("/admin/login/").content.decode()
    assert "password_reset" not in body and "Forgotten your password" not in body


def test_signing_in_and_out_and_changing_a_password_still_work(django_user_model):
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    assert client.get("/accounts/login/").status_code == 200
    assert client.post("/accounts/login/", {"username": "alice", "password": "right-pass-123"}).status_code == 302
    assert client.get("/accounts/password_change/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
