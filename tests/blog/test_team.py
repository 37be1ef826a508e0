"""The writes of seats and grants, called directly (blog/team.py); the screens' tests cover their forms."""

from __future__ import annotations

import pytest

from agent import events
from blog import live
from blog.models import Consent, Seat
from blog.team import consent_grant, consent_revoke, seat_remove
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
