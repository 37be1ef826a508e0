"""An owner hands their blog over to one of its members, from its Settings page (`blogs.blog_hand_over`),
and the admin's change of a blog's owner, which leaves the seats as the Settings page does."""

from __future__ import annotations

import threading
from html import unescape

import pytest
from django.db import connection, connections, transaction

from agent import events
from blog import blogs, grants, live
from blog.access import ROLE_SCOPES
from blog.models import Blog, Consent, Seat
from tests.blog.conftest import ALL, DELETE, READ, WRITE, browser, make_blog, set_consent

pytestmark = pytest.mark.django_db

HAND_OVER = "/blogs/notes/hand-over/"


def text(response) -> str:
    """The page as its reader reads it (the template escapes `'` as `&#x27;`)."""
    return unescape(response.content.decode())


def hand_over(client, seat: Seat | int | str, confirm: str):
    return client.post(HAND_OVER, {"seat": getattr(seat, "pk", seat), "confirm": confirm})


def roles(blog: Blog) -> dict[str, tuple[str, bool]]:
    seats = Seat.objects.filter(blog=blog).select_related("user")
    return {seat.user.username: (seat.role, seat.may_use_assistant) for seat in seats}


def unchanged(team) -> None:
    """Nothing a refused hand-over could have changed did."""
    team.blog.refresh_from_db()
    assert team.blog.owner == team.owner
    assert roles(team.blog) == {
        "owner": (Seat.OWNER, True),
        "editor": (Seat.EDITOR, True),
        "author": (Seat.AUTHOR, True),
        "viewer": (Seat.VIEWER, False),
    }


# --- The page --------------------------------------------------------------------------------------


def test_the_settings_page_lists_the_other_members_to_hand_over_to(team):
    page = text(browser(team.owner).get("/blogs/notes/settings/"))
    assert "Hand over this blog" in page
    assert f'action="{HAND_OVER}"' in page
    for role in ("editor", "author", "viewer"):
        assert f'<option value="{team.seat(role).pk}">{role} ({role})</option>' in page
    assert f'<option value="{team.seat("owner").pk}"' not in page  # (not herself)


def test_a_blog_with_no_other_member_says_to_add_one_first(django_user_model):
    person = django_user_model.objects.create_user("solo", password="pw-solo-12345")
    blogs.blog_create(owner=person, title="Alone", slug="alone")
    page = text(browser(person).get("/blogs/alone/settings/"))
    assert "Hand over this blog" in page
    assert 'has no other: add them on the <a href="/blogs/alone/members/">Members screen</a> first.' in page
    assert 'action="/blogs/alone/hand-over/"' not in page


# --- Handing over ------------------------------------------------------------------------------------


def test_the_owner_hands_the_blog_over_to_a_member_and_stays_on_as_an_editor(team):
    set_consent(team.owner, team.blog, ALL)
    set_consent(team.author, team.blog, [READ, WRITE])
    client = browser(team.owner)
    response = hand_over(client, team.seat("author"), " author ")
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/"
    team.blog.refresh_from_db()
    assert team.blog.owner == team.author
    assert roles(team.blog) == {
        "owner": (Seat.EDITOR, True),  # (keeping whether they may use the assistant)
        "author": (Seat.OWNER, True),
        "editor": (Seat.EDITOR, True),
        "viewer": (Seat.VIEWER, False),
    }
    page = text(client.get("/blogs/notes/"))
    assert "Handed Notes over to author: you are an editor here now." in page
    assert 'href="/blogs/notes/settings/"' not in page
    assert client.get("/blogs/notes/settings/").status_code == 404
    assert hand_over(client, team.seat("editor"), "editor").status_code == 404  # (no longer hers to give)
    new_owner = browser(team.author)
    assert 'href="/blogs/notes/settings/"' in new_owner.get("/blogs/notes/").content.decode()
    assert new_owner.get("/blogs/notes/members/").status_code == 200


def test_what_each_allowed_the_assistant_stays_within_their_live_seat(team):
    """Consents are not touched: the assistant's scopes are the Consent within the live seat, so the
    former owner's assistant does what an editor's may (the role table: editors hold every scope, delete
    included) and the new owner's what they allowed it before (an author's grant: read and draft)."""
    before = set_consent(team.owner, team.blog, ALL)
    set_consent(team.author, team.blog, [READ, WRITE])
    assert hand_over(browser(team.owner), team.seat("author"), "author").status_code == 302
    assert Consent.objects.get(pk=before.pk).scopes == ALL
    former = grants.assistant(team.owner, team.blog).scopes
    assert former == frozenset(ALL) & ROLE_SCOPES[Seat.EDITOR]
    assert (DELETE in former) == (DELETE in ROLE_SCOPES[Seat.EDITOR])
    assert grants.assistant(team.author, team.blog).scopes == {READ, WRITE}


def test_a_former_owner_not_allowed_the_assistant_loses_it_as_an_editor(team):
    """An owner always summons the assistant, whatever their seat's flag says; an editor only when it
    is set. The flag is kept, so an owner whose seat never had it no longer summons it, grant or not."""
    Seat.objects.filter(pk=team.seat("owner").pk).update(may_use_assistant=False)
    set_consent(team.owner, team.blog, ALL)
    assert grants.assistant(team.owner, team.blog).scopes == frozenset(ALL)
    assert hand_over(browser(team.owner), team.seat("editor"), "editor").status_code == 302
    assert roles(team.blog)["owner"] == (Seat.EDITOR, False)
    assert grants.assistant(team.owner, team.blog).scopes == frozenset()
    assert DELETE not in grants.assistant(team.owner, team.blog).scopes


def test_the_blogs_open_pages_hear_both_seats_change(team, django_capture_on_commit_callbacks):
    """As for a role changed on the Members screen (`live.seat_changed`): one `blog.updated` per seat
    changed, once the hand-over commits, so every open page checks its member's seat again and redraws its
    header and post list; then the new owner announced (`live.blog_updated`), which a seat made rather than
    changed would not have said."""
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert hand_over(browser(team.owner), team.seat("viewer"), "viewer").status_code == 302
        assert probe.wait(0.0) == [[{"type": "blog.updated", "id": team.blog.pk}]] * 3  # (two seats, the new owner)
    finally:
        events.unsubscribe(probe)
    assert roles(team.blog)["viewer"] == (Seat.OWNER, False)


# --- Refusals ------------------------------------------------------------------------------------------


def test_a_wrong_confirmation_hands_nothing_over(team):
    client = browser(team.owner)
    for typed in ("", "Editor", "editr", "owner", "notes"):
        response = hand_over(client, team.seat("editor"), typed)
        assert response.status_code == 400
        page = text(response)
        assert "Type editor's username, editor, to hand the blog over to them. Nothing changed." in page
        assert f'<option value="{team.seat("editor").pk}" selected>' in page  # (the choice kept)
    unchanged(team)


def test_a_seat_of_another_blog_or_none_is_refused_not_a_500(team, other_team):
    """A forged seat id: another blog's member (even one named as typed), the owner's own seat, none."""
    client = browser(team.owner)
    forged = [
        (other_team.seat("editor"), "xeditor"),
        (team.seat("owner"), "owner"),
        ("", ""),
        ("abc", "editor"),
        ("99999999999999999999999", "editor"),
        ("\x00", "editor"),
    ]
    for seat, typed in forged:
        response = hand_over(client, seat, typed)
        assert response.status_code == 400, seat
        assert "Choose a member of this blog to hand it over to. Nothing changed." in text(response)
    unchanged(team)
    assert other_team.blog.owner == other_team.owner


def test_a_member_who_owns_as_many_blogs_as_they_may_is_refused(team, settings, django_user_model):
    settings.BLOGS_PER_PERSON = 2
    blogs.blog_create(owner=team.editor, title="Editor's own", slug="editors-own")
    assert hand_over(browser(team.owner), team.seat("editor"), "editor").status_code == 302  # (their second)
    team.blog.refresh_from_db()
    assert team.blog.owner == team.editor

    other = make_blog(django_user_model, slug="third", title="Third", prefix="t")
    Seat.objects.create(blog=other.blog, user=team.editor, role=Seat.AUTHOR)
    response = browser(other.owner).post(
        "/blogs/third/hand-over/", {"seat": Seat.objects.get(blog=other.blog, user=team.editor).pk, "confirm": "editor"}
    )
    assert response.status_code == 400
    assert (
        "editor already owns 2 blogs, as many as one person may own here: they can't be given this one. "
        "Nothing changed." in text(response)
    )
    other.blog.refresh_from_db()
    assert other.blog.owner == other.owner
    assert Seat.objects.get(blog=other.blog, user=team.editor).role == Seat.AUTHOR


def test_with_only_the_admin_making_blogs_only_the_admin_hands_them_over(team, settings):
    settings.BLOGS_PER_PERSON = 0
    response = hand_over(browser(team.owner), team.seat("editor"), "editor")
    assert response.status_code == 400
    assert "Blogs are given by the site's administrator here: ask them to hand this one over." in text(response)
    unchanged(team)


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_only_the_owner_hands_the_blog_over(team, role):
    response = hand_over(browser(team.user(role)), team.seat(role if role != "outsider" else "editor"), role)
    assert response.status_code == 404
    unchanged(team)


def test_handing_over_needs_signing_in_a_post_and_the_csrf_token(team):
    response = hand_over(browser(), team.seat("editor"), "editor")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert browser(team.owner).get(HAND_OVER).status_code == 405
    assert hand_over(browser(team.owner, csrf=True), team.seat("editor"), "editor").status_code == 403
    unchanged(team)


# --- Two at once -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_hand_overs_at_once_hand_the_blog_over_once(django_user_model, monkeypatch):
    """Two tabs of the owner, to two members: the second waits on the first's lock on the blog's row
    (PostgreSQL; SQLite's write lock), then finds it no longer hers. Without the lock both read her as
    the owner and both "won": two owners' seats."""
    team = make_blog(django_user_model)
    first_holds, release, results = threading.Event(), threading.Event(), {}

    def attempt(name: str, to: str, hold: bool) -> None:
        try:
            with transaction.atomic():
                blog = Blog.objects.get(pk=team.blog.pk)
                seat = Seat.objects.get(blog=blog, user__username=to)
                blogs.blog_hand_over(blog=blog, to_seat=seat, actor=team.owner)
                if hold:
                    first_holds.set()
                    release.wait(10)
            results[name] = "handed over"
        except blogs.HandOverRefused as exc:
            results[name] = exc.public_message
        finally:
            connections.close_all()

    one = threading.Thread(target=attempt, args=("first", "editor", True))
    one.start()
    assert first_holds.wait(10)
    two = threading.Thread(target=attempt, args=("second", "author", False))
    two.start()
    two.join(0.5)  # (it waits on the first's lock)
    release.set()
    one.join(10)
    two.join(10)
    assert results == {
        "first": "handed over",
        "second": "You no longer own this blog: nothing changed.",
    }, connection.vendor
    assert Blog.objects.get(pk=team.blog.pk).owner == team.editor
    assert roles(team.blog) == {
        "owner": (Seat.EDITOR, True),
        "editor": (Seat.OWNER, True),
        "author": (Seat.AUTHOR, True),
        "viewer": (Seat.VIEWER, False),
    }


# --- The admin -------------------------------------------------------------------------------------------


def test_the_admins_change_of_owner_leaves_the_seats_as_the_settings_page_does(team, django_user_model):
    """The admin kept the former owner's owner's seat: two owners, the former one still able to open
    Settings, delete the blog and hand it over again. Now they are an editor, as after their own hand-over
    (the admin is not held to `BLOGS_PER_PERSON`, and may name someone who is not a member yet)."""
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    fields = {
        "title": team.blog.title,
        "slug": team.blog.slug,
        "owner": team.outsider.pk,
        "seats-TOTAL_FORMS": "0",
        "seats-INITIAL_FORMS": "0",
        "seats-MIN_NUM_FORMS": "0",
        "seats-MAX_NUM_FORMS": "1000",
    }
    assert browser(root).post(f"/admin/blog/blog/{team.blog.pk}/change/", fields).status_code == 302
    assert roles(team.blog)["outsider"] == (Seat.OWNER, True)
    assert roles(team.blog)["owner"] == (Seat.EDITOR, True)
    assert browser(team.owner).get("/blogs/notes/settings/").status_code == 404
    fields["title"] = "Notes, retitled"  # (saved again, owner unchanged: no seat changes)
    assert browser(root).post(f"/admin/blog/blog/{team.blog.pk}/change/", fields).status_code == 302
    assert roles(team.blog)["owner"] == (Seat.EDITOR, True)
    assert roles(team.blog)["outsider"] == (Seat.OWNER, True)


# --- A former owner's seat left an owner's (the admin's change of owner before it made one an editor's) -----


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("get", "/blogs/notes/settings/", {}),
        ("post", "/blogs/notes/delete/", {"confirm": "notes"}),
        ("post", "/blogs/notes/settings/", {"title": "Taken back"}),
        ("get", "/blogs/notes/members/", {}),
        ("get", "/blogs/notes/export/", {}),
        ("get", "/blogs/notes/import/", {}),
    ],
)
def test_a_former_owners_seat_left_an_owners_opens_none_of_the_owners_screens(team, method, path, data):
    """Before today an admin's change of owner left the former owner's seat an owner's. The owner's screens
    are the blog's owner's (`Blog.owner`), not any owner's seat's: such a seat deletes nothing."""
    new_owner = team.seat("editor").user
    Blog.objects.filter(pk=team.blog.pk).update(owner=new_owner)
    Seat.objects.filter(pk=team.seat("editor").pk).update(role=Seat.OWNER)  # (as the admin left them)
    former = browser(team.owner)
    assert getattr(former, method)(path, data).status_code == 404
    team.blog.refresh_from_db()
    assert (team.blog.title, team.blog.owner) == ("Notes", new_owner)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/blogs/notes/members/", {"action": "change", "role": "author"}),
        ("/blogs/notes/members/{seat}/remove/", {}),
    ],
    ids=["change-role", "remove"],
)
def test_a_members_change_sent_while_the_blog_is_handed_over_to_them_changes_nothing(django_user_model, path, data):
    """Her Members tab changes (or removes) the editor's seat while her Settings tab hands the blog over to
    that editor. The change waits on the hand-over's lock on the blog's row (PostgreSQL; SQLite's write
    lock), then finds the blog no longer hers. Without it, it wrote over the new owner's seat: an owner
    with an author's seat (or none) could not open their own blog's owner's screens."""
    team = make_blog(django_user_model)
    editor_seat = team.seat("editor")
    holds, release = threading.Event(), threading.Event()

    def hand_over_and_hold() -> None:
        try:
            with transaction.atomic():
                blog = Blog.objects.get(pk=team.blog.pk)
                blogs.blog_hand_over(blog=blog, to_seat=Seat.objects.get(pk=editor_seat.pk), actor=team.owner)
                holds.set()
                release.wait(10)
        finally:
            connections.close_all()

    owner = browser(team.owner)
    assert owner.get("/blogs/notes/members/").status_code == 200  # (her tab was open)
    handing = threading.Thread(target=hand_over_and_hold)
    handing.start()
    assert holds.wait(10)
    threading.Timer(0.5, release.set).start()  # (the hand-over commits while her change waits)
    response = owner.post(path.format(seat=editor_seat.pk), {**data, "seat": editor_seat.pk})
    handing.join(10)
    assert response.status_code in (302, 404), response.status_code
    assert Blog.objects.get(pk=team.blog.pk).owner == team.editor
    assert Seat.objects.get(pk=editor_seat.pk).role == Seat.OWNER
    assert Seat.objects.get(blog=team.blog, user=team.owner).role == Seat.EDITOR
