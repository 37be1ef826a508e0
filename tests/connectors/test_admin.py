"""An admin ends a person's connected clients from the Users admin: a confirmed action (for the selected
people, or one person from the link the password change offers), as their own Disconnect all does."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.test import Client

from blog.grants import ASSISTANT
from blog.models import Consent, Seat
from blog.team import consent_grant
from tests.connectors.conftest import ALL, connect

pytestmark = pytest.mark.django_db

USERS = "/admin/auth/user/"
DEAD = 401


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser("root", password="root-pass-123")


def signed_in(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def status(conn) -> int:
    return conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code


def live(user) -> int:
    return Consent.objects.filter(user=user, revoked_at__isnull=True).exclude(client=ASSISTANT).count()


def test_the_action_asks_first_then_ends_the_selected_peoples_clients_and_only_theirs(team, other_team, root):
    Seat.objects.create(blog=other_team.blog, user=team.owner, role=Seat.EDITOR, may_use_assistant=True)
    consent_grant(user=team.owner, blog=team.blog, client=ASSISTANT, scopes={"posts:read"})  # the site's own
    owners = [connect(team.owner, team.blog.slug, ALL), connect(team.owner, other_team.blog.slug, ["posts:read"])]
    editors = connect(team.editor, team.blog.slug, ["posts:read"])
    authors = connect(team.author, team.blog.slug, ["posts:read"])
    admin = signed_in(root, csrf=True)
    csrf = admin.get(USERS).cookies["csrftoken"].value
    chosen = {"action": "disconnect_clients", "_selected_action": [team.owner.pk, team.editor.pk]}

    assert admin.post(USERS, chosen).status_code == 403  # no CSRF token: refused, as every admin form
    asked = admin.post(USERS, chosen, HTTP_X_CSRFTOKEN=csrf)
    assert asked.status_code == 200  # the confirmation page; nothing is done yet
    page = asked.content.decode()
    assert "Disconnect all connected clients" in page
    assert "<li>owner: 2 connected clients</li>" in page and "<li>editor: 1 connected client</li>" in page
    assert "<li>author" not in page
    assert '<input type="hidden" name="post" value="yes">' in page
    assert [status(c) for c in (*owners, editors, authors)] == [200, 200, 200, 200]

    done = admin.post(USERS, {**chosen, "post": "yes"}, HTTP_X_CSRFTOKEN=csrf)
    assert done.status_code == 302
    assert [status(c) for c in (*owners, editors)] == [DEAD, DEAD, DEAD]
    assert status(authors) == 200 and live(team.author) == 1
    assert live(team.owner) == live(team.editor) == 0
    assert Consent.objects.filter(user=team.owner, client=ASSISTANT, revoked_at__isnull=True).exists()  # kept
    said = admin.get(done["Location"]).content.decode()
    assert "Disconnected 3 connected clients of 2 people." in said

    entries = LogEntry.objects.filter(user=root, action_flag=CHANGE).order_by("object_id")
    assert {(e.object_id, e.get_change_message()) for e in entries} == {
        (str(team.owner.pk), "Disconnected all connected clients (2)."),
        (str(team.editor.pk), "Disconnected all connected clients (1)."),
    }


def test_a_staff_member_who_may_only_look_ends_no_ones_clients(team, django_user_model):
    staff = django_user_model.objects.create_user("looker", password="looker-pass-123", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    conn = connect(team.editor, team.blog.slug, ["posts:read"])
    looker = signed_in(staff)

    listed = looker.get(USERS).content.decode()
    assert "disconnect_clients" not in listed  # not offered
    looker.post(USERS, {"action": "disconnect_clients", "_selected_action": [team.editor.pk], "post": "yes"})
    assert looker.get(f"{USERS}{team.editor.pk}/disconnect/").status_code == 403
    assert looker.post(f"{USERS}{team.editor.pk}/disconnect/").status_code == 403
    assert status(conn) == 200 and live(team.editor) == 1
    assert not LogEntry.objects.exists()
    page = looker.get(f"{USERS}{team.editor.pk}/change/").content.decode()
    assert "1 connected client" in page and f"{team.editor.pk}/disconnect/" not in page  # seen, not offered


def test_after_an_admin_sets_a_password_they_are_told_the_clients_still_work_and_offered_to_end_them(
    team, root, django_user_model
):
    person = django_user_model.objects.create_user("<i>mallory</i>", password="old-pass-1234")
    Seat.objects.create(blog=team.blog, user=person, role=Seat.AUTHOR, may_use_assistant=True)
    conn = connect(person, team.blog.slug, ["posts:read"])
    admin = signed_in(root)
    new = {"password1": "a-new-pass-5678", "password2": "a-new-pass-5678", "usable_password": "true"}

    page = admin.post(f"{USERS}{person.pk}/password/", new, follow=True).content.decode()
    assert "Password changed successfully." in page
    offer = f'<a href="{USERS}{person.pk}/disconnect/">Disconnect all connected clients</a>'
    assert (
        "The user “&lt;i&gt;mallory&lt;/i&gt;” still has 1 connected client: it still works with its tokens, "
        f"as a new password does not end it. {offer}"
    ) in page
    assert "<i>mallory</i>" not in page
    assert status(conn) == 200  # offered, not done

    asked = admin.get(f"{USERS}{person.pk}/disconnect/")
    assert asked.status_code == 200
    form = asked.content.decode()
    assert f'<form method="post" action="{USERS}">' in form
    assert f'<input type="hidden" name="_selected_action" value="{person.pk}">' in form
    assert status(conn) == 200
    admin.post(USERS, {"action": "disconnect_clients", "_selected_action": [person.pk], "post": "yes"})
    assert status(conn) == DEAD and live(person) == 0

    again = admin.post(f"{USERS}{person.pk}/password/", new, follow=True).content.decode()
    assert "Password changed successfully." in again
    assert "still works" not in again and f"{person.pk}/disconnect/" not in again  # nothing left to end


def test_a_persons_page_says_how_many_clients_they_have_connected(team, other_team, root):
    Seat.objects.create(blog=other_team.blog, user=team.owner, role=Seat.EDITOR, may_use_assistant=True)
    connect(team.owner, team.blog.slug, ALL)
    connect(team.owner, other_team.blog.slug, ["posts:read"])
    admin = signed_in(root)
    page = admin.get(f"{USERS}{team.owner.pk}/change/").content.decode()
    assert "2 connected clients" in page and f'href="{USERS}{team.owner.pk}/disconnect/"' in page
    page = admin.get(f"{USERS}{team.author.pk}/change/").content.decode()
    assert "No connected clients" in page and f"{USERS}{team.author.pk}/disconnect/" not in page
