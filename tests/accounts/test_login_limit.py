"""Sign-in: failed attempts per username (and address) are limited, across workers, without checking the password."""

from __future__ import annotations

import re
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


def test_a_stranger_s_failures_lock_out_their_address_not_the_person(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    stranger, alice = Client(REMOTE_ADDR="203.0.113.9"), Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        attempt(stranger, "alice", "wrong")
    assert attempt(stranger, "alice", "right-pass-123").status_code == 429
    assert attempt(alice, "alice", "right-pass-123").status_code == 302


def test_a_locked_address_waits_for_its_own_oldest_failure_not_someone_elses(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    attempt(Client(REMOTE_ADDR="198.51.100.7"), "alice", "wrong")  # alice mistyping, long ago
    FailedLogin.objects.update(created_at=timezone.now() - timedelta(minutes=14))
    stranger = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        attempt(stranger, "alice", "wrong")
    refused = attempt(stranger, "alice", "right-pass-123")
    assert refused.status_code == 429 and "Try again in 15 minutes." in refused.content.decode()


def test_guessing_spread_over_many_addresses_locks_the_username(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 2  # 20 failures from all addresses together
    django_user_model.objects.create_user("alice", password="right-pass-123")
    for n in range(19):
        attempt(Client(REMOTE_ADDR=f"203.0.113.{n}"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "alice", "right-pass-123").status_code == 302
    attempt(Client(REMOTE_ADDR="203.0.113.99"), "alice", "wrong")
    refused = attempt(Client(REMOTE_ADDR="198.51.100.7"), "alice", "right-pass-123")
    assert refused.status_code == 429 and "Try again in 15 minutes." in refused.content.decode()


def test_an_ipv6_host_taking_a_fresh_address_for_each_guess_is_still_one_address(django_user_model, settings):
    """Every IPv6 host holds a /64 of its own: counted per address, one host got a fresh counter per
    guess, so it met only the limit for all addresses together, which locks the person out too."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    for n in range(3):
        attempt(Client(REMOTE_ADDR=f"2001:db8:1:2::{n + 1:x}"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="2001:db8:1:2:ffff::9"), "alice", "right-pass-123").status_code == 429
    assert attempt(Client(REMOTE_ADDR="2001:db8:1:3::1"), "alice", "right-pass-123").status_code == 302
    assert set(FailedLogin.objects.values_list("ip", flat=True)) == {"2001:db8:1:2::"}


def test_a_limit_of_zero_turns_it_off(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 0
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(12):
        attempt(client, "alice", "wrong")
    assert attempt(client, "alice", "right-pass-123").status_code == 302


def test_a_locked_username_is_refused_without_checking_the_password(django_user_model, settings, monkeypatch):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 2
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(2):
        attempt(client, "alice", "wrong")
    checked = []
    import django.contrib.auth

    real = django.contrib.auth.authenticate
    monkeypatch.setattr("django.contrib.auth.forms.authenticate", lambda *a, **k: checked.append(k) or real(*a, **k))
    response = attempt(client, "alice", "right-pass-123")
    assert response.status_code == 429
    assert checked == []
    assert 'value="alice"' in response.content.decode()  # what they typed stays in the form


def test_failures_older_than_the_window_are_forgotten(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 10
    old = FailedLogin.objects.create(username="old", created_at=timezone.now() - timedelta(minutes=16))
    attempt(Client(), "alice", "wrong")
    assert not FailedLogin.objects.filter(pk=old.pk).exists()
    assert list(FailedLogin.objects.values_list("username", flat=True)) == ["alice"]


def test_failures_inside_the_window_still_count_however_old(django_user_model, settings):
    """Failures 14 minutes old are still inside the 15-minute window: writing a new one must not forget them."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    for _ in range(3):
        attempt(client, "alice", "wrong")
    FailedLogin.objects.update(created_at=timezone.now() - timedelta(minutes=14))
    refused = attempt(client, "alice", "right-pass-123")
    assert refused.status_code == 429 and "Try again in 1 minute." in refused.content.decode()
    assert FailedLogin.objects.count() == 3


def test_with_the_limit_off_failures_are_still_recorded_for_the_admin(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 0
    django_user_model.objects.create_user("alice", password="right-pass-123")
    assert attempt(Client(REMOTE_ADDR="203.0.113.9"), "Alice", "wrong").status_code == 200
    assert attempt(Client(), "alice", "right-pass-123").status_code == 302
    assert list(FailedLogin.objects.values_list("username", "ip")) == [("alice", "203.0.113.9")]


def test_a_blank_username_is_no_guess_at_anyones_password(settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    assert attempt(Client(), "", "wrong").status_code == 200
    assert attempt(Client(), "   ", "wrong").status_code == 200
    assert not FailedLogin.objects.exists()


def admin_attempt(client, username, password):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_the_admin_sign_in_shares_the_limit(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    for _ in range(2):
        assert admin_attempt(client, "root", "wrong").status_code == 200
    attempt(Client(), "Root", "wrong")  # failures on either sign-in count together
    assert FailedLogin.objects.filter(username="root").count() == 3

    response = admin_attempt(client, "root", "root-pass-123")
    assert response.status_code == 429
    body = response.content.decode()
    assert "Too many failed attempts for this username. Try again in 15 minutes." in body
    assert "_auth_user_id" not in client.session
    assert FailedLogin.objects.filter(username="root").count() == 3  # a refused attempt is not counted

    FailedLogin.objects.update(created_at=timezone.now() - timedelta(minutes=16))
    response = admin_attempt(client, "root", "root-pass-123")
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200


def test_the_admin_sign_in_still_works_and_counts_only_failures(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    assert admin_attempt(client, "root", "root-pass-123").status_code == 302
    assert not FailedLogin.objects.exists()
    assert client.get("/admin/agent/session/").status_code == 200


@pytest.mark.parametrize("variant", ["ｄａｖｅ", "𝐝ave", "𝐝𝐚𝐯𝐞"])
def test_unicode_variants_of_a_username_share_one_counter(django_user_model, settings, variant):
    """Django's UsernameField NFKC-normalises before authenticating: `ｄａｖｅ` signs in as `dave`."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("dave", password="daves-pass-123")
    client = Client()
    assert attempt(client, variant, "daves-pass-123").status_code == 302  # the variant really is dave
    client = Client()
    for name in ("dave", "ｄａｖｅ", " 𝐃ave "):
        assert attempt(client, name, "wrong").status_code == 200
    assert set(FailedLogin.objects.values_list("username", flat=True)) == {"dave"}
    assert attempt(client, variant, "daves-pass-123").status_code == 429
    assert "_auth_user_id" not in client.session


def test_unicode_variants_share_the_counter_on_the_admin_sign_in(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    for name in ("ｒｏｏｔ", "𝐫oot", "root"):
        assert admin_attempt(client, name, "wrong").status_code == 200
    assert admin_attempt(client, "𝐫𝐨𝐨𝐭", "root-pass-123").status_code == 429
    assert admin_attempt(client, "root", "root-pass-123").status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("sign_in", [attempt, admin_attempt], ids=["site", "admin"])
@pytest.mark.parametrize("typed", ["ali\x00ce", "alice\x00", "\x00"])
def test_a_username_with_a_nul_character_is_a_failed_sign_in_not_a_server_error(
    django_user_model, settings, sign_in, typed
):
    """The failure is written before the password is checked, under the username as typed: PostgreSQL
    cannot hold a NUL, so every such attempt (no account needed) was a 500 and a traceback, and was
    never counted. Now it is counted with the NUL read as U+FFFD (no username has one), and the
    form refuses it as Django's does."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_superuser("alice", password="right-pass-123")
    client = Client()

    assert sign_in(client, typed, "right-pass-123").status_code == 200
    assert "_auth_user_id" not in client.session
    assert list(FailedLogin.objects.values_list("username", flat=True)) == [typed.replace("\x00", "\ufffd")]


def test_behind_the_proxy_failures_count_per_client_address(django_user_model, settings):
    """Every request comes from the proxy; its `X-Forwarded-For` says whose it is."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    settings.FORWARDED_ALLOW_IPS = ["10.0.0.5"]
    django_user_model.objects.create_user("alice", password="right-pass-123")
    stranger = Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="203.0.113.9")
    alice = Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="198.51.100.7")
    for _ in range(3):
        attempt(stranger, "alice", "wrong")
    assert attempt(stranger, "alice", "right-pass-123").status_code == 429
    assert attempt(alice, "alice", "right-pass-123").status_code == 302
    assert set(FailedLogin.objects.values_list("ip", flat=True)) == {"203.0.113.9"}


def test_a_client_cannot_name_someone_elses_address(django_user_model, settings):
    """`X-Forwarded-For` from anyone but the proxy proves nothing: a stranger writing the person's
    address into it still locks out only their own."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    settings.FORWARDED_ALLOW_IPS = ["10.0.0.5"]
    django_user_model.objects.create_user("alice", password="right-pass-123")
    direct = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.7")
    # Through the proxy, a forged entry left of the proxy's own is skipped too.
    forged = Client(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.10")
    for _ in range(3):
        attempt(direct, "alice", "wrong")
        attempt(forged, "alice", "wrong")
    assert set(FailedLogin.objects.values_list("ip", flat=True)) == {"203.0.113.9", "203.0.113.10"}
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "alice", "right-pass-123").status_code == 302


def test_attempts_arriving_while_a_password_is_checked_are_counted_before_theirs_is(
    django_user_model, settings, monkeypatch
):
    """Under gevent a password is checked on a thread (`config/hashers.py`) while the worker takes
    other requests, so a burst of guesses sent at once all reached the check before the first failure
    was written. Here each attempt's password check lets the next guess arrive, as a burst does."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    django_user_model.objects.create_user("alice", password="right-pass-123")
    real = django_user_model.check_password
    burst, checked, statuses = iter(range(7)), [], []

    def check_password(user, raw_password):
        checked.append(raw_password)
        if next(burst, None) is not None:  # one more guess arrives while this one is checked
            statuses.append(attempt(Client(), "alice", "wrong").status_code)
        return real(user, raw_password)

    monkeypatch.setattr(django_user_model, "check_password", check_password)
    assert attempt(Client(), "alice", "wrong").status_code == 200
    assert len(checked) == 3  # of the burst of eight, only the limit's worth were checked
    assert statuses == [429, 200, 200]
    assert FailedLogin.objects.count() == 3  # the refused guess is not counted
    monkeypatch.undo()
    assert attempt(Client(), "alice", "right-pass-123").status_code == 429


def change_password(client, old, new="a-new-pass-456", again=None):
    data = {"old_password": old, "new_password1": new, "new_password2": again or new}
    return client.post("/accounts/password_change/", data)


def test_guessing_the_current_password_on_the_change_form_meets_the_same_limit(django_user_model, settings):
    """A session someone else got hold of (a stolen cookie, a computer left signed in) must not
    become an unlimited oracle for the password, and through it the account: the change form's
    current password is a guess at it like a sign-in's, counted with them."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    alice = django_user_model.objects.create_user("alice", password="right-pass-123")
    thief = Client(REMOTE_ADDR="203.0.113.9")
    thief.force_login(alice)
    for guess in ("guess-1", "guess-2", "guess-3"):
        response = change_password(thief, guess)
        assert response.status_code == 200
        assert "That isn&#x27;t your current password. Try again." in response.content.decode()
    assert set(FailedLogin.objects.values_list("username", "ip")) == {("alice", "203.0.113.9")}

    response = change_password(thief, "right-pass-123")
    assert response.status_code == 429
    assert "Too many failed attempts for this username. Try again in 15 minutes." in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password("right-pass-123")  # not changed
    assert FailedLogin.objects.count() == 3  # the refused attempt is not counted
    # The same guesses count on the sign-in form from that address; alice, elsewhere, is untouched.
    assert attempt(Client(REMOTE_ADDR="203.0.113.9"), "alice", "right-pass-123").status_code == 429
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "alice", "right-pass-123").status_code == 302


def test_a_change_with_the_right_current_password_counts_no_failure(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 3
    alice = django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    client.force_login(alice)
    assert change_password(client, "right-pass-123", again="another-pass-789").status_code == 200  # a typo
    assert change_password(client, "right-pass-123").status_code == 302
    assert not FailedLogin.objects.exists()
    alice.refresh_from_db()
    assert alice.check_password("a-new-pass-456")


def test_the_admins_password_change_meets_the_same_limit(django_user_model, settings):
    settings.LOGIN_FAILURES_PER_15_MINUTES = 2
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    client.force_login(root)
    data = {"new_password1": "a-new-pass-456", "new_password2": "a-new-pass-456"}
    for guess in ("guess-1", "guess-2"):
        assert client.post("/admin/password_change/", {**data, "old_password": guess}).status_code == 200
    response = client.post("/admin/password_change/", {**data, "old_password": "root-pass-123"})
    assert response.status_code == 429
    assert "Too many failed attempts for this username." in response.content.decode()
    root.refresh_from_db()
    assert root.check_password("root-pass-123")
    FailedLogin.objects.update(created_at=timezone.now() - timedelta(minutes=16))
    assert client.post("/admin/password_change/", {**data, "old_password": "root-pass-123"}).status_code == 302
    assert not FailedLogin.objects.exists()


def test_the_change_form_is_the_sites_own_page_and_says_when_it_is_locked(django_user_model, settings):
    """Members change their password on a page of the site (linked from every page's top bar), not
    on the admin's: the limit's message stands by the field it is about."""
    settings.LOGIN_FAILURES_PER_15_MINUTES = 1
    alice = django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    client.force_login(alice)
    home = client.get("/").content.decode()
    assert 'href="/accounts/password_change/">Password</a>' in home
    page = client.get("/accounts/password_change/").content.decode()
    assert "<h1>Change your password</h1>" in page and "Django administration" not in page
    assert 'name="csrfmiddlewaretoken"' in page and 'name="old_password"' in page
    change_password(client, "guess-1")
    locked = change_password(client, "right-pass-123").content.decode()
    assert "<h1>Change your password</h1>" in locked
    assert "Too many failed attempts for this username. Try again in 15 minutes." in locked
    assert 'aria-invalid="true"' in locked  # on the current password's field, which it is about


def test_a_changed_password_says_so_on_the_sites_page(django_user_model):
    alice = django_user_model.objects.create_user("alice", password="right-pass-123")
    client = Client()
    client.force_login(alice)
    done = client.post(
        "/accounts/password_change/",
        {"old_password": "right-pass-123", "new_password1": "a-new-pass-456", "new_password2": "a-new-pass-456"},
        follow=True,
    )
    body = done.content.decode()
    assert done.redirect_chain == [("/accounts/password_change/done/", 302)]
    assert "<h1>Password changed</h1>" in body and "Django administration" not in body
    alice.refresh_from_db()
    assert alice.check_password("a-new-pass-456")


def test_the_admins_password_change_keeps_the_admins_page(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pass-123"))
    assert "Django administration" in client.get("/admin/password_change/").content.decode()


def test_a_failed_sign_in_is_named_by_its_username_and_address_in_the_admin(admin_client):
    """Its change and delete pages' titles and breadcrumbs (not "FailedLogin object (1)")."""
    failure = FailedLogin.objects.create(username="dave", ip="203.0.113.9", created_at=timezone.now())
    nowhere = FailedLogin.objects.create(username="erin", ip=None, created_at=timezone.now())
    assert (str(failure), str(nowhere)) == ("dave from 203.0.113.9", "erin from an unknown address")
    page = admin_client.get(f"/admin/accounts/failedlogin/{failure.pk}/change/").content.decode()
    assert "dave from 203.0.113.9" in page


def test_the_sites_password_page_labels_its_fields_as_the_sign_in_page_does(django_user_model):
    """The labels "Current password", "New password", "New password again", without Django's colons; the
    admin's own page keeps Django's words."""
    client = Client()
    client.force_login(django_user_model.objects.create_user("alice", password="right-pass-123"))
    page = client.get("/accounts/password_change/").content.decode()
    labels = re.findall(r'<label for="id_(\w+)">([^<]*)</label>', page)
    assert labels == [
        ("old_password", "Current password"),
        ("new_password1", "New password"),
        ("new_password2", "New password again"),
    ]
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pass-123"))
    assert "Old password:" in client.get("/admin/password_change/").content.decode()


def test_a_wrong_current_password_is_said_in_the_pages_words(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("alice", password="right-pass-123"))
    page = change_password(client, "guess-1").content.decode()
    assert "That isn&#x27;t your current password. Try again." in page and "old password" not in page
