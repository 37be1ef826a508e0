"""The writes of seats and grants, called directly (blog/team.py); the screens' tests cover their forms."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agent import events
from blog import grants, live
from blog.models import Consent, Seat
from blog.team import consent_grant, consent_revoke, seat_add, seat_remove, seat_update
from tests.blog.conftest import ALL, READ, WRITE, set_consent

pytestmark = pytest.mark.django_db


def test_seat_remove_drops_the_members_grants_and_wakes_the_blogs_pages(team, django_capture_on_commit_callbacks):
    """Whoever calls it, not only the Members screen: the signals on Seat do the rest."""
    set_consent(team.editor, team.blog, ALL)
    Consent.objects.create(user=team.editor, blog=team.blog, client="some-app", scopes=[READ])
    kept = set_consent(team.author, team.blog, [READ])
    probe = events.subscribe(live.channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            seat_remove(seat=team.seat("editor"))
        assert probe.wait(0.0) == [[]]
    finally:
        events.unsubscribe(probe)
    assert not Seat.objects.filter(blog=team.blog, user=team.editor).exists()
    assert not Consent.objects.filter(user=team.editor, blog=team.blog).exists()
    assert Consent.objects.filter(pk=kept.pk).exists()


def test_leaving_one_blog_keeps_the_members_grants_on_another(team, other_team):
    """The grants go with the seat they were given from, and only with that one."""
    seat_update(
        seat=seat_add(blog=other_team.blog, user=team.editor, role=Seat.EDITOR),
        role=Seat.EDITOR,
        may_use_assistant=True,
    )
    set_consent(team.editor, team.blog, ALL)
    elsewhere = set_consent(team.editor, other_team.blog, [READ, WRITE])
    client = Consent.objects.create(user=team.editor, blog=other_team.blog, client="some-app", scopes=[READ])
    seat_remove(seat=team.seat("editor"))
    assert not Consent.objects.filter(user=team.editor, blog=team.blog).exists()
    assert set(Consent.objects.filter(user=team.editor).values_list("pk", flat=True)) == {elsewhere.pk, client.pk}
    assert grants.assistant(team.editor, other_team.blog).scopes == {READ, WRITE}


def test_a_grant_revoked_and_given_again_is_the_same_consent(team):
    """Revoking twice keeps the first time; granting again keeps the name the client was approved under."""
    consent = consent_grant(user=team.editor, blog=team.blog, client="app", scopes={WRITE, READ}, client_name="App")
    assert (consent.scopes, consent.client_name, consent.active) == ([READ, WRITE], "App", True)
    consent_revoke(consent=consent)
    consent.refresh_from_db()
    revoked_at = consent.revoked_at
    assert (consent.scopes, consent.active) == ([], False)
    consent_revoke(consent=consent)  # already revoked: nothing changes
    consent.refresh_from_db()
    assert consent.revoked_at == revoked_at
    again = consent_grant(user=team.editor, blog=team.blog, client="app", scopes=[READ])
    assert (again.pk, again.scopes, again.client_name, again.active) == (consent.pk, [READ], "App", True)


def test_revoking_a_grant_read_earlier_keeps_what_was_written_to_it_since(team):
    """The Clients screen reads a grant, then revokes it: a use stamped meanwhile (by a connected client's
    call, `grants.note_use`) stays; revoking writes only what it changes."""
    consent = consent_grant(user=team.editor, blog=team.blog, client="app", scopes=[READ], client_name="App")
    used = timezone.now()
    Consent.objects.filter(pk=consent.pk).update(last_used_at=used, client_name="App, renamed")
    consent_revoke(consent=consent)  # (the instance read before that use)
    consent.refresh_from_db()
    assert (consent.active, consent.scopes, consent.last_used_at, consent.client_name) == (
        False,
        [],
        used,
        "App, renamed",
    )
